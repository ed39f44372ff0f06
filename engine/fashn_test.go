package engine

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"fashiond/diffusion"
	"fashiond/inference"
	"fashiond/internal/pipelinetest"
	"fashiond/internal/testenv"
	"fashiond/pipelines"
	"fashiond/pipelines/capability/generative"
)

// TestOpenGenerativeFashnRole: an installed fashn-vton model (the small
// random-weight export of FASHN VTON's TryOnModel) is the try-on role as a
// FashnVTON TryOner, with BlazePose as its pose source when DWPose is not
// installed; without any pose model the role is an error naming DWPose;
// GET /v1/models lists it for tryon and product-to-model.
func TestOpenGenerativeFashnRole(t *testing.T) {
	ctx := context.Background()
	rt, err := inference.Open(ctx, inference.Config{LibPath: testenv.ORTLib(), IntraOpThreads: 1, Device: "cpu"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	dir := t.TempDir()
	log := slog.New(slog.DiscardHandler)
	src := filepath.Join(pipelinetest.Root(), "diffusion/testdata/fashn/tiny")
	if _, err := diffusion.Install(ctx, rt, src, dir, diffusion.InstallOptions{Name: "fashn-tiny"}); err != nil {
		t.Fatal(err)
	}
	p := pipelinetest.Perception(t)
	gen, cl, err := openGenerative(ctx, rt, dir, nil, diffusion.Options{}, p, log)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, ok := gen.TryOner.(*generative.FashnVTON); !ok || gen.TryOner.Model() != "fashn-tiny" {
		t.Fatalf("try-on role: %T %v", gen.TryOner, gen.TryOner)
	}
	reg, _ := Registry(p, nil, gen)
	got := pipelines.GenerativeModels(mustGet(t, reg, "tryon"))
	if !slices.Equal(got, []string{"fashn-tiny"}) {
		t.Errorf("tryon's generative models %v", got)
	}
	if _, _, err := openGenerative(ctx, rt, dir, nil, diffusion.Options{}, nil, log); err == nil || !strings.Contains(err.Error(), "DWPose") {
		t.Fatalf("without a pose model: %v", err)
	}
}

func mustGet(t *testing.T, reg *pipelines.Registry, name string) pipelines.Pipeline {
	t.Helper()
	p, ok := reg.Get(name)
	if !ok {
		t.Fatalf("no pipeline %s", name)
	}
	return p
}
