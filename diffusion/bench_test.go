package diffusion

import (
	"context"
	"testing"
)

// BenchmarkShapeGenerate is one 512² generation of the shape model (SD-1.5
// tensor sizes, small UNet body) with guidance; overhead-ms/step is the
// denoising time outside ONNX Runtime calls per UNet call.
func BenchmarkShapeGenerate(b *testing.B) {
	rt := testRuntime(b)
	m := loadModel(b, rt, contract(b, "shape-sd15"), Options{})
	req := Request{Prompt: "a shirt", Guidance: 7.5, Steps: 10, Width: 512, Height: 512}
	for b.Loop() {
		res, err := m.Generate(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(res.Timings.Denoise-res.Timings.UNet)/float64(res.Timings.Calls)/1e6, "overhead-ms/step")
	}
}
