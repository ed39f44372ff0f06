package pipelinetest

import (
	"errors"
	"strings"
	"testing"

	"fashiond/pipelines"
)

// WantJobError fails t unless err is a job error (*pipelines.Error) whose
// message starts with prefix.
func WantJobError(t testing.TB, err error, prefix string) {
	t.Helper()
	var pe *pipelines.Error
	if !errors.As(err, &pe) || !strings.HasPrefix(pe.Msg, prefix) {
		t.Fatalf("err = %v, want a job error starting %q", err, prefix)
	}
}
