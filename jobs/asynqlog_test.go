package jobs

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestAsynqLoggerWarnings: asynq's "Retry exhausted" for a failed job is
// debug-level (the worker logs the failure itself); other warnings stay.
func TestAsynqLoggerWarnings(t *testing.T) {
	tests := []struct {
		msg  string
		want bool // logged at the info level
	}{
		{"Retry exhausted for task id=0b6a", false},
		{"Could not move task id=1 from \"a\" to \"b\"; Will retry syncing", true},
		{"revoke task id=2", true},
	}
	for _, tc := range tests {
		var buf bytes.Buffer
		a := asynqLogger{slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))}
		a.Warn(tc.msg)
		if got := strings.Contains(buf.String(), `"level":"WARN"`); got != tc.want {
			t.Errorf("%q: logged %v (%s), want %v", tc.msg, got, buf.String(), tc.want)
		}
	}
}
