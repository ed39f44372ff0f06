package engine

import (
	"slices"
	"strings"
	"testing"

	"fashiond/diffusion"
	"fashiond/internal/pipelinetest"
	"fashiond/pipelines"
)

// TestOpenGenerativeTryOnRole: an installed try-on model (the oracle
// CatVTON-layout contract model) is the try-on role without any setting,
// is not taken for inpainting, "none" turns it off, two need a name, and
// tryon (only) reports it in GET /v1/models.
func TestOpenGenerativeTryOnRole(t *testing.T) {
	g := newGenRepo(t)
	const catvton = "diffusion/testdata/contract/oracle-catvton"
	g.install(t, catvton, "vton-a")
	gen, cl, err := g.open(nil, nil)
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
	gen, cl, err = g.open(map[diffusion.Task]string{diffusion.TryOn: "none"}, nil)
	if err != nil || gen.TryOner != nil {
		t.Fatalf("role off: %+v, %v", gen, err)
	}
	cl.Close()
	g.install(t, catvton, "vton-b")
	if _, _, err = g.open(nil, nil); err == nil || !strings.Contains(err.Error(), "FASHIOND_GENERATIVE_TRY_ON") || !strings.Contains(err.Error(), "vton-b") {
		t.Fatalf("two try-on models: %v", err)
	}
	gen, cl, err = g.open(map[diffusion.Task]string{diffusion.TryOn: "vton-b"}, nil)
	if err != nil || gen.TryOner == nil || gen.TryOner.Model() != "vton-b" {
		t.Fatalf("the named try-on model: %+v, %v", gen, err)
	}
	cl.Close()
}
