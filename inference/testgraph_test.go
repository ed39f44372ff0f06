package inference

import (
	"testing"

	"fashiond/onnxedit"
)

// addGraph and mixedGraph (probe.go) in a test's temporary directory.

func addGraphT(t testing.TB, elem onnxedit.Elem) string {
	t.Helper()
	p, err := addGraph(t.TempDir(), elem)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func diffusionLikeGraph(t testing.TB) string {
	t.Helper()
	p, err := mixedGraph(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return p
}
