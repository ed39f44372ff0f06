package pipelines

import (
	"errors"
	"fmt"
	"testing"
)

// TestCheckError: the job error names the first failed check in the
// documented wording, and carries that check for errors.As, through any
// wrapping; all passing checks give no error.
func TestCheckError(t *testing.T) {
	for _, tc := range []struct {
		name   string
		checks []Check
		want   string // "" when no error
		failed string // the carried check's name
	}{
		{"none", nil, "", ""},
		{"all pass", []Check{MaxCheck("a", 1, 2), MinCheck("b", 3, 2)}, "", ""},
		{"max fails", []Check{MaxCheck("a", 1, 2), MaxCheck("tear", 0.0123456, 0.001)},
			"m: self-check tear failed: 0.01235 above the limit 0.001", "tear"},
		{"min fails", []Check{MinCheck("face", 0.25, 0.5)},
			"m: self-check face failed: 0.25 below the limit 0.5", "face"},
		{"first of two", []Check{MinCheck("x", 0, 1), MaxCheck("y", 5, 1)},
			"m: self-check x failed: 0 below the limit 1", "x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckError("m", tc.checks)
			c, ok := FirstFailed(tc.checks)
			if tc.want == "" {
				if err != nil || ok {
					t.Fatalf("error %v, first failed %v %+v", err, ok, c)
				}
				return
			}
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if !ok || c.Name != tc.failed || "m: "+c.Failure() != tc.want {
				t.Fatalf("first failed %v %+v", ok, c)
			}
			var pe *Error
			var cf *CheckFailure
			wrapped := fmt.Errorf("stage: %w", err)
			if !errors.As(wrapped, &pe) || pe.Transient || !errors.As(wrapped, &cf) || cf.Check != c {
				t.Fatalf("errors.As: %+v %+v", pe, cf)
			}
		})
	}
}
