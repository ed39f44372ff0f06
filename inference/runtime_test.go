package inference

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"fashiond/internal/testenv"
)

func testRuntime(t testing.TB) *Runtime {
	t.Helper()
	lib := testenv.ORTLib()
	rt, err := Open(context.Background(), Config{LibPath: lib, IntraOpThreads: 2, Device: "cpu"}, nil)
	if err != nil {
		t.Fatalf("open runtime: %v (run make setup)", err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

func modelPath(t testing.TB, file string) string {
	t.Helper()
	dir := testenv.ModelsDir()
	p := filepath.Join(dir, file)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("model %s missing: %v (run make setup)", file, err)
	}
	return p
}

func TestSessionRunsSelfieSegmentation(t *testing.T) {
	rt := testRuntime(t)
	s, err := rt.NewSession(context.Background(), SessionSpec{
		Name: "selfie_segmentation", Path: modelPath(t, "selfie_segmentation.onnx"),
		Inputs: []string{"input_1:0"}, Outputs: []string{"activation_10"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	in := Tensor{Shape: []int64{1, 256, 256, 3}, Data: make([]float32, 256*256*3)}
	out, err := s.Run(context.Background(), []Tensor{in})
	if err != nil {
		t.Fatal(err)
	}
	if got := out[0].Shape; len(got) != 4 || got[1] != 256 || got[2] != 256 || got[3] != 1 {
		t.Fatalf("output shape %v, want [1 256 256 1]", got)
	}
	if s.Device() != "cpu" {
		t.Fatalf("device %q", s.Device())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	if _, err := s.Run(context.Background(), []Tensor{in}); err == nil {
		t.Fatal("Run after Close succeeded")
	}
}
