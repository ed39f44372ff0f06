package ctxio

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestReader: a live context reads everything; an ended one stops the copy
// with its error before the next read.
func TestReader(t *testing.T) {
	tests := []struct {
		name    string
		cancel  bool
		wantErr error
		want    string
	}{
		{"live", false, nil, "abcdef"},
		{"cancelled", true, context.Canceled, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancel {
				cancel()
			}
			var out bytes.Buffer
			_, err := io.Copy(&out, Reader(ctx, strings.NewReader("abcdef")))
			if !errors.Is(err, tc.wantErr) || out.String() != tc.want {
				t.Fatalf("copied %q, err %v; want %q, %v", out.String(), err, tc.want, tc.wantErr)
			}
		})
	}
}
