package engine

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"fashiond/diffusion"
	"fashiond/internal/pipelinetest"
	"fashiond/internal/testenv"
	"fashiond/pipelines"
	"fashiond/pipelines/capability/generative"
)

// BenchmarkGenerativeStages runs prompt-tryon, tryon, image-to-video,
// pose-control and angle-generation on
// real photos without and with an inpainting model: the shape contract
// model (SD-1.5's tensor sizes at 512², a small random UNet body; not a
// real generative model, so the images are meaningless and the times are
// those of the engine around a tiny UNet). unet-share is the share of the
// job's time inside the UNet's ONNX Runtime calls.
//
//	go test ./engine -run XXX -bench GenerativeStages -benchtime 2x
func BenchmarkGenerativeStages(b *testing.B) {
	ctx := context.Background()
	rt := pipelinetest.CPURuntime(b, 2)
	m, err := diffusion.Load(ctx, rt, filepath.Join(testenv.Root(), "diffusion/testdata/contract/shape-sd15-inpaint"), diffusion.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	inp, err := generative.NewDiffusion(m)
	if err != nil {
		b.Fatal(err)
	}
	jobs := []struct {
		model string
		in    map[string]any
	}{
		{"prompt-tryon", map[string]any{"personImage": "file:images/fashn_model.webp", "prompt": "a red dress", "quality": "1k"}},
		{"tryon", map[string]any{"personImage": "file:images/fashn_model.webp", "garmentImage": "file:garments/flatlay_tee_red.png"}},
		{"image-to-video", map[string]any{"imageUrl": "file:images/pexels_woman_portrait.png", "prompt": "slow push in", "duration": 4, "aspectRatio": "16:9", "generateAudio": false}},
		// codait_man_standing's "hands on hips" and left45 fail their
		// self-checks since issue 21 (carried_background, ghost_smear).
		{"pose-control", map[string]any{"modelImage": "file:images/fashn_garment.webp", "poses": []map[string]any{{"type": "custom", "text": "looking left"}}, "quality": "1k"}},
		{"angle-generation", map[string]any{"imageUrl": "file:images/fashn_garment.webp", "angleIds": []string{"left45"}, "quality": "1k"}},
	}
	p := pipelinetest.Perception(b)
	for _, mode := range []string{"reference", "generative"} {
		gen := Generative{}
		if mode == "generative" {
			gen.Inpainter, gen.Refiner = inp, inp.Refiner()
		}
		reg, _ := Registry(p, nil, gen)
		for _, j := range jobs {
			pl, ok := reg.Get(j.model)
			if !ok {
				b.Fatalf("%s not served", j.model)
			}
			raw, _ := json.Marshal(j.in)
			typed := pipelinetest.Inputs(b, j.model, string(raw))
			b.Run(j.model+"/"+mode, func(b *testing.B) {
				var unet time.Duration
				for b.Loop() {
					before := m.Stats().UNet
					req := &pipelines.Request{JobID: "bench", Model: j.model, Inputs: typed,
						Images: pipelinetest.Loader{Dir: pipelinetest.Testdata(b)}, Progress: func(string, float64, string) {}}
					res, err := pl.Run(ctx, req)
					if err != nil {
						b.Fatal(err)
					}
					if got := res.Outputs[0].Path; got != mode {
						b.Fatalf("path %s, want %s (notes %q)", got, mode, res.Outputs[0].Notes)
					}
					unet += m.Stats().UNet - before
				}
				b.ReportMetric(unet.Seconds()/b.Elapsed().Seconds(), "unet-share")
			})
		}
	}
}
