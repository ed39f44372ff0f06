package inference

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"
)

// rewriteCases are the graphs scripts/rewrite_batch.py gives a symbolic
// batch (see perception/manifests/*.json batch_file).
var rewriteCases = []struct {
	name    string
	inputs  []string
	outputs []string
	shape   []int64 // one image
}{
	{"blazepose_lite", []string{"input_1"}, []string{"Identity", "Identity_1", "Identity_2", "Identity_3", "Identity_4"}, []int64{1, 256, 256, 3}},
	{"blazepose_full", []string{"input_1"}, []string{"Identity", "Identity_1", "Identity_2", "Identity_3", "Identity_4"}, []int64{1, 256, 256, 3}},
	{"selfie_segmentation", []string{"input_1:0"}, []string{"activation_10"}, []int64{1, 256, 256, 3}},
	{"skin_clothes_hair_pan", []string{"x.1"}, []string{"1273"}, []int64{1, 3, 512, 512}},
	{"tcmonodepth_small", []string{"input"}, []string{"output"}, []int64{1, 3, 192, 320}},
	{"realesr_general_x4v3", []string{"data"}, []string{"output"}, []int64{1, 3, 32, 48}},
	{"realesrgan_x4plus", []string{"data"}, []string{"output"}, []int64{1, 3, 16, 16}},
}

// randomImages makes n distinct batch-1 inputs with a smooth structure and
// noise, in 0..1 (every model's input range is within -2.2..2.7 after its
// normalisation; 0..1 exercises the graphs equally).
func randomImages(n int, shape []int64, seed uint64) []Tensor {
	r := rand.New(rand.NewPCG(seed, 7))
	out := make([]Tensor, n)
	for i := range out {
		t := Tensor{Shape: append([]int64(nil), shape...)}
		t.Data = make([]float32, t.Elements())
		for j := range t.Data {
			t.Data[j] = float32(0.5+0.4*math.Sin(float64(j%977)/37+float64(i))) * (0.8 + 0.2*r.Float32())
		}
		out[i] = t
	}
	return out
}

func maxAbsDiff(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	var m float64
	for i := range a {
		m = max(m, math.Abs(float64(a[i]-b[i])))
	}
	return m
}

func TestRewrittenGraphsEqualSingleRuns(t *testing.T) {
	rt := testRuntime(t)
	ctx := context.Background()
	for _, c := range rewriteCases {
		t.Run(c.name, func(t *testing.T) {
			orig, err := rt.NewSession(ctx, SessionSpec{Name: c.name, Path: modelPath(t, c.name+".onnx"), Inputs: c.inputs, Outputs: c.outputs})
			if err != nil {
				t.Fatal(err)
			}
			defer orig.Close()
			bpath := modelPath(t, c.name+".batch.onnx")
			bs, err := rt.NewSession(ctx, SessionSpec{Name: c.name + ".batch", Path: bpath, Inputs: c.inputs, Outputs: c.outputs})
			if err != nil {
				t.Fatal(err)
			}
			defer bs.Close()
			const n = 4
			imgs := randomImages(n, c.shape, uint64(len(c.name)))
			// The original refuses batch 4: that is why the rewrite exists.
			if _, err := orig.Run(ctx, []Tensor{concatTensors(imgs)}); err == nil && c.name != "realesr_general_x4v3" && c.name != "realesrgan_x4plus" {
				t.Logf("note: original %s accepted batch %d", c.name, n)
			}
			batched, err := bs.Run(ctx, []Tensor{concatTensors(imgs)})
			if err != nil {
				t.Fatalf("batch %d run of %s: %v", n, filepath.Base(bpath), err)
			}
			for i, img := range imgs {
				single, err := orig.Run(ctx, []Tensor{img})
				if err != nil {
					t.Fatal(err)
				}
				for j, s := range single {
					b := batched[j]
					if b.Shape[0] != n {
						t.Fatalf("output %s batch dim %d, want %d", c.outputs[j], b.Shape[0], n)
					}
					per := len(b.Data) / n
					tol := tolerance(s.Data)
					if d := maxAbsDiff(s.Data, b.Data[i*per:(i+1)*per]); d > tol {
						t.Errorf("image %d output %s: max abs diff %g > %g", i, c.outputs[j], d, tol)
					}
				}
			}
		})
	}
}

// tolerance is 1e-4, or 1e-5 of the largest magnitude for outputs with
// large values (blazepose_full's segmentation logits reach ~1500, where
// ORT's plan for a symbolic batch differs from the static one by ~5e-6
// relative; at batch 4 the rewritten graph equals its own batch-1 runs).
func tolerance(ref []float32) float64 {
	var m float64
	for _, v := range ref {
		m = max(m, math.Abs(float64(v)))
	}
	return max(1e-4, 1e-5*m)
}

func concatTensors(ts []Tensor) Tensor {
	out := Tensor{Shape: append([]int64{0}, ts[0].Shape[1:]...)}
	for _, t := range ts {
		out.Shape[0] += t.Shape[0]
		out.Data = append(out.Data, t.Data...)
	}
	return out
}
