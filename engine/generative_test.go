package engine

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"fashiond/diffusion"
	"fashiond/inference"
	"fashiond/internal/pipelinetest"
	"fashiond/internal/testenv"
	"fashiond/pipelines"
)

// TestOpenGenerativeByRole: no inpainting model keeps the classical path;
// exactly one is used; two without a choice is an error naming both.
func TestOpenGenerativeByRole(t *testing.T) {
	ctx := context.Background()
	rt, err := inference.Open(ctx, inference.Config{LibPath: testenv.ORTLib(), IntraOpThreads: 1, Device: "cpu"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	dir := t.TempDir()
	log := slog.New(slog.DiscardHandler)
	gen, cl, err := openGenerative(ctx, rt, dir, nil, diffusion.Options{}, nil, log)
	if err != nil || gen.Inpainter != nil {
		t.Fatalf("empty repository: %+v, %v", gen, err)
	}
	cl.Close()
	src := filepath.Join(pipelinetest.Root(), "diffusion/testdata/contract/oracle-inpaint")
	if _, err := diffusion.Install(ctx, rt, filepath.Join(pipelinetest.Root(), "diffusion/testdata/contract/oracle-floatb"), dir, diffusion.InstallOptions{Name: "t2i"}); err != nil {
		t.Fatal(err)
	}
	if gen, cl, err = openGenerative(ctx, rt, dir, nil, diffusion.Options{}, nil, log); err != nil || gen.Inpainter != nil || gen.TextToImage == nil || gen.TextToImage.Model() != "t2i" {
		t.Fatalf("one text-to-image model: %+v, %v", gen, err)
	}
	cl.Close()
	if _, err := diffusion.Install(ctx, rt, src, dir, diffusion.InstallOptions{Name: "inp-a"}); err != nil {
		t.Fatal(err)
	}
	gen, cl, err = openGenerative(ctx, rt, dir, nil, diffusion.Options{}, nil, log)
	if err != nil || gen.Inpainter == nil {
		t.Fatalf("one inpainting model: %+v, %v", gen, err)
	}
	cl.Close()
	if _, err := diffusion.Install(ctx, rt, src, dir, diffusion.InstallOptions{Name: "inp-b"}); err != nil {
		t.Fatal(err)
	}
	_, _, err = openGenerative(ctx, rt, dir, nil, diffusion.Options{}, nil, log)
	if err == nil || !strings.Contains(err.Error(), "inp-a") || !strings.Contains(err.Error(), "inp-b") || !strings.Contains(err.Error(), "FASHIOND_GENERATIVE_INPAINTING") {
		t.Fatalf("two inpainting models: %v", err)
	}
	gen, cl, err = openGenerative(ctx, rt, dir, map[diffusion.Task]string{diffusion.Inpainting: "inp-b"}, diffusion.Options{}, nil, log)
	if err != nil || gen.Inpainter == nil || gen.Inpainter.Model() != "inp-b" {
		t.Fatalf("the named inpainting model: %+v, %v", gen, err)
	}
	cl.Close()
	gen, cl, err = openGenerative(ctx, rt, dir, map[diffusion.Task]string{diffusion.Inpainting: "none", diffusion.TextToImage: "none"}, diffusion.Options{}, nil, log)
	if err != nil || gen.Inpainter != nil || gen.TextToImage != nil {
		t.Fatalf("roles off: %+v, %v", gen, err)
	}
	cl.Close()
	if _, _, err = openGenerative(ctx, rt, dir, map[diffusion.Task]string{diffusion.Inpainting: "t2i"}, diffusion.Options{}, nil, log); err == nil || !strings.Contains(err.Error(), `inpainting model "t2i" is not installed`) {
		t.Fatalf("a text-to-image model named for inpainting: %v", err)
	}
}

// TestRegistryReportsGenerativeModels: with an inpainting model the
// pipelines that use it name it; the others name none.
func TestRegistryReportsGenerativeModels(t *testing.T) {
	inp := pipelinetest.ContractInpainter(t)
	reg, _ := Registry(pipelinetest.Perception(t), nil, Generative{Inpainter: inp})
	want := map[string]bool{"prompt-tryon": true, "tryon": true, "image-to-video": true, "pose-control": true, "angle-generation": true}
	for _, name := range reg.Names() {
		p, _ := reg.Get(name)
		got := pipelines.GenerativeModels(p)
		if want[name] != (len(got) == 1 && got[0] == "oracle-inpaint") {
			t.Errorf("%s: generative models %v", name, got)
		}
	}
	reg, _ = Registry(pipelinetest.Perception(t), nil, Generative{})
	for _, name := range reg.Names() {
		p, _ := reg.Get(name)
		if got := pipelines.GenerativeModels(p); len(got) != 0 {
			t.Errorf("%s without generative models: %v", name, got)
		}
	}
}
