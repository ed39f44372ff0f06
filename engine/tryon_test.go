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
)

// TestOpenGenerativeTryOnRole: an installed try-on model (the oracle
// CatVTON-layout contract model) is the try-on role without any setting,
// is not taken for inpainting, "none" turns it off, two need a name, and
// tryon (only) reports it in GET /v1/models.
func TestOpenGenerativeTryOnRole(t *testing.T) {
	ctx := context.Background()
	rt, err := inference.Open(ctx, inference.Config{LibPath: testenv.ORTLib(), IntraOpThreads: 1, Device: "cpu"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	dir := t.TempDir()
	log := slog.New(slog.DiscardHandler)
	src := filepath.Join(pipelinetest.Root(), "diffusion/testdata/contract/oracle-catvton")
	if _, err := diffusion.Install(ctx, rt, src, dir, diffusion.InstallOptions{Name: "vton-a"}); err != nil {
		t.Fatal(err)
	}
	gen, cl, err := openGenerative(ctx, rt, dir, nil, diffusion.Options{}, nil, log)
	if err != nil || gen.TryOner == nil || gen.TryOner.Model() != "vton-a" || gen.Inpainter != nil {
		t.Fatalf("one try-on model: %+v, %v", gen, err)
	}
	reg, _ := Registry(pipelinetest.Perception(t), nil, gen)
	for _, name := range reg.Names() {
		p, _ := reg.Get(name)
		got := pipelines.GenerativeModels(p)
		if want := name == "tryon"; want != slices.Equal(got, []string{"vton-a"}) {
			t.Errorf("%s: generative models %v", name, got)
		}
	}
	cl.Close()
	gen, cl, err = openGenerative(ctx, rt, dir, map[diffusion.Task]string{diffusion.TryOn: "none"}, diffusion.Options{}, nil, log)
	if err != nil || gen.TryOner != nil {
		t.Fatalf("role off: %+v, %v", gen, err)
	}
	cl.Close()
	if _, err := diffusion.Install(ctx, rt, src, dir, diffusion.InstallOptions{Name: "vton-b"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err = openGenerative(ctx, rt, dir, nil, diffusion.Options{}, nil, log); err == nil || !strings.Contains(err.Error(), "FASHIOND_GENERATIVE_TRY_ON") || !strings.Contains(err.Error(), "vton-b") {
		t.Fatalf("two try-on models: %v", err)
	}
	gen, cl, err = openGenerative(ctx, rt, dir, map[diffusion.Task]string{diffusion.TryOn: "vton-b"}, diffusion.Options{}, nil, log)
	if err != nil || gen.TryOner == nil || gen.TryOner.Model() != "vton-b" {
		t.Fatalf("the named try-on model: %+v, %v", gen, err)
	}
	cl.Close()
}
