package generative_test

import (
	"context"
	"path/filepath"
	"testing"

	"fashiond/diffusion"
	"fashiond/inference"
	"fashiond/internal/pipelinetest"
	"fashiond/pipelines/capability/generative"
)

// TestTextToImageSizes: the oracle text-to-image contract model makes an
// image of exactly the asked size, at a working size of the same aspect.
func TestTextToImageSizes(t *testing.T) {
	ctx := context.Background()
	rt, err := inference.Open(ctx, inference.Config{LibPath: filepath.Join(pipelinetest.Root(), ".deps/onnxruntime/1.30.0/libonnxruntime.so.1"), IntraOpThreads: 1, Device: "cpu"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	m, err := diffusion.Load(ctx, rt, filepath.Join(pipelinetest.Root(), "diffusion/testdata/contract/oracle-floatb"), diffusion.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	g, err := generative.NewTextToImage(m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := generative.NewDiffusion(m); err == nil {
		t.Fatal("a text-to-image model accepted as an inpainter")
	}
	for _, sz := range [][2]int{{600, 900}, {1280, 720}, {50, 50}} {
		img, info, err := g.Generate(ctx, sz[0], sz[1], generative.Prompt{Text: "a linen shirt", Seed: 1, Steps: 2})
		if err != nil {
			t.Fatal(err)
		}
		if b := img.Bounds(); b.Dx() != sz[0] || b.Dy() != sz[1] || info.Model != "oracle-floatb" || info.Steps != 2 {
			t.Fatalf("%v: bounds %v, info %+v", sz, b, info)
		}
	}
}
