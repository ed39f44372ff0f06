package pipelinetest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"fashiond/diffusion"
	"fashiond/inference"
	"fashiond/pipelines/generative"
)

// ContractInpainter is the oracle-inpaint contract model (a closed-form
// 9-channel "inpainting" graph made by scripts/setup-contract-models.sh, not
// a real generative model) behind the generative.Inpainter interface, on the
// CPU. It is closed with the test.
func ContractInpainter(t testing.TB) *generative.Diffusion {
	t.Helper()
	lib := os.Getenv("FASHIOND_ORT_LIB")
	if lib == "" {
		lib = filepath.Join(Root(), ".deps", "onnxruntime", "1.30.0", "libonnxruntime.so.1")
	}
	rt, err := inference.Open(context.Background(), inference.Config{LibPath: lib, IntraOpThreads: 1, Device: "cpu"}, nil)
	if err != nil {
		t.Fatalf("pipelinetest: %v (run make setup)", err)
	}
	t.Cleanup(func() { rt.Close() })
	m, err := diffusion.Load(context.Background(), rt, filepath.Join(Root(), "diffusion", "testdata", "contract", "oracle-inpaint"), diffusion.Options{})
	if err != nil {
		t.Fatalf("pipelinetest: contract model: %v (run make setup)", err)
	}
	t.Cleanup(func() { m.Close() })
	d, err := generative.NewDiffusion(m)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
