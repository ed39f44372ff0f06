package pipelinetest

import (
	"context"
	"image"
	"path/filepath"
	"testing"

	"fashiond/diffusion"
	"fashiond/inference"
	"fashiond/internal/testenv"
	"fashiond/pipelines/capability/generative"
)

// ContractTextToImage is the oracle-floatb contract model (a closed-form
// text-to-image graph that makes stripes, not a real generative model)
// behind the generative.Generator interface, on the CPU.
func ContractTextToImage(t testing.TB) *generative.TextToImage {
	t.Helper()
	g, err := generative.NewTextToImage(contractModel(t, "oracle-floatb"))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// ContractInpainter is the oracle-inpaint contract model (a closed-form
// 9-channel "inpainting" graph made by scripts/setup-contract-models.sh, not
// a real generative model) behind the generative.Inpainter interface, on the
// CPU. It is closed with the test.
func ContractInpainter(t testing.TB) *generative.Diffusion {
	t.Helper()
	d, err := generative.NewDiffusion(contractModel(t, "oracle-inpaint"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// ContractTryOner is the oracle-catvton contract model (a closed-form
// CatVTON-layout graph whose try-on region takes the mean colour of the
// garment photo as fed, not a real try-on model) behind the
// generative.TryOner interface, on the CPU. It is closed with the test.
func ContractTryOner(t testing.TB) *generative.CatVTON {
	t.Helper()
	c, err := generative.NewTryOn(loadContract(t, "oracle-catvton", diffusion.LoadTryOn))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// contractModel loads a contract model folder; it is closed with the test.
func contractModel(t testing.TB, variant string) *diffusion.Model {
	t.Helper()
	return loadContract(t, variant, diffusion.Load)
}

// loadContract loads a contract model folder with load on a CPU runtime;
// both are closed with the test.
func loadContract(t testing.TB, variant string, load func(context.Context, *inference.Runtime, string, diffusion.Options) (*diffusion.Model, error)) *diffusion.Model {
	t.Helper()
	rt := CPURuntime(t, 1)
	m, err := load(context.Background(), rt, filepath.Join(Root(), "diffusion", "testdata", "contract", variant), diffusion.Options{})
	if err != nil {
		t.Fatalf("pipelinetest: contract model: %v (run make setup)", err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// CPURuntime is ONNX Runtime on the CPU with threads intra-op threads; it
// is closed with the test.
func CPURuntime(t testing.TB, threads int) *inference.Runtime {
	t.Helper()
	rt, err := inference.Open(context.Background(), inference.Config{LibPath: testenv.ORTLib(), IntraOpThreads: threads, Device: "cpu"}, nil)
	if err != nil {
		t.Fatalf("pipelinetest: %v (run make setup)", err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// BlackoutTryOn is a test double of generative.TryOner that ignores the
// mask and paints the whole person image black, so the face checks must
// refuse its output and the pipeline fall back.
type BlackoutTryOn struct{}

// TryOn implements generative.TryOner.
func (BlackoutTryOn) TryOn(_ context.Context, person, _ image.Image, _ *image.Gray, o generative.TryOnOptions) (*image.NRGBA, generative.Info, error) {
	out := image.NewNRGBA(person.Bounds())
	for i := 3; i < len(out.Pix); i += 4 {
		out.Pix[i] = 255
	}
	return out, generative.Info{Model: "blackout", Seed: o.Seed}, nil
}

// Model implements generative.TryOner.
func (BlackoutTryOn) Model() string { return "blackout" }
