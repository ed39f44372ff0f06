package engine

import (
	"slices"
	"strings"
	"testing"

	"fashiond/internal/pipelinetest"
	"fashiond/pipelines"
	"fashiond/pipelines/capability/generative"
)

// TestOpenGenerativeFashnRole: an installed fashn-vton model (the small
// random-weight export of FASHN VTON's TryOnModel) is the try-on role as a
// FashnVTON TryOner, with BlazePose as its pose source when DWPose is not
// installed; without any pose model the role is an error naming DWPose;
// GET /v1/models lists it for tryon and product-to-model.
func TestOpenGenerativeFashnRole(t *testing.T) {
	g := newGenRepo(t)
	g.install(t, "diffusion/testdata/fashn/tiny", "fashn-tiny")
	p := pipelinetest.Perception(t)
	gen, cl, err := g.open(nil, p)
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
	if _, _, err := g.open(nil, nil); err == nil || !strings.Contains(err.Error(), "DWPose") {
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
