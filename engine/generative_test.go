package engine

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"fashiond/diffusion"
	"fashiond/inference"
	"fashiond/internal/pipelinetest"
	"fashiond/perception"
	"fashiond/pipelines"
)

// genRepo is what the tests of the generative roles start from: a CPU
// runtime (closed with the test), an empty models folder and a silent
// logger.
type genRepo struct {
	ctx context.Context
	rt  *inference.Runtime
	dir string
	log *slog.Logger
}

func newGenRepo(t *testing.T) *genRepo {
	return &genRepo{ctx: context.Background(), rt: pipelinetest.CPURuntime(t, 1), dir: t.TempDir(), log: slog.New(slog.DiscardHandler)}
}

// install installs the repository's folder rel (e.g. a contract model)
// under name.
func (g *genRepo) install(t *testing.T, rel, name string) {
	t.Helper()
	if _, err := diffusion.Install(g.ctx, g.rt, filepath.Join(pipelinetest.Root(), rel), g.dir, diffusion.InstallOptions{Name: name}); err != nil {
		t.Fatal(err)
	}
}

// open opens the generative roles as the engine does, with the roles
// named and body as the pose source.
func (g *genRepo) open(roles map[diffusion.Task]string, body perception.BodyPoser) (Generative, io.Closer, error) {
	return openGenerative(g.ctx, g.rt, g.dir, roles, diffusion.Options{}, body, g.log)
}

// TestOpenGenerativeByRole: no inpainting model keeps the classical path;
// exactly one is used; two without a choice is an error naming both.
func TestOpenGenerativeByRole(t *testing.T) {
	g := newGenRepo(t)
	gen, cl, err := g.open(nil, nil)
	if err != nil || gen.Inpainter != nil {
		t.Fatalf("empty repository: %+v, %v", gen, err)
	}
	cl.Close()
	const inpaint = "diffusion/testdata/contract/oracle-inpaint"
	g.install(t, "diffusion/testdata/contract/oracle-floatb", "t2i")
	if gen, cl, err = g.open(nil, nil); err != nil || gen.Inpainter != nil || gen.TextToImage == nil || gen.TextToImage.Model() != "t2i" {
		t.Fatalf("one text-to-image model: %+v, %v", gen, err)
	}
	cl.Close()
	g.install(t, inpaint, "inp-a")
	gen, cl, err = g.open(nil, nil)
	if err != nil || gen.Inpainter == nil {
		t.Fatalf("one inpainting model: %+v, %v", gen, err)
	}
	cl.Close()
	g.install(t, inpaint, "inp-b")
	_, _, err = g.open(nil, nil)
	if err == nil || !strings.Contains(err.Error(), "inp-a") || !strings.Contains(err.Error(), "inp-b") || !strings.Contains(err.Error(), "FASHIOND_GENERATIVE_INPAINTING") {
		t.Fatalf("two inpainting models: %v", err)
	}
	gen, cl, err = g.open(map[diffusion.Task]string{diffusion.Inpainting: "inp-b"}, nil)
	if err != nil || gen.Inpainter == nil || gen.Inpainter.Model() != "inp-b" {
		t.Fatalf("the named inpainting model: %+v, %v", gen, err)
	}
	cl.Close()
	gen, cl, err = g.open(map[diffusion.Task]string{diffusion.Inpainting: "none", diffusion.TextToImage: "none"}, nil)
	if err != nil || gen.Inpainter != nil || gen.TextToImage != nil {
		t.Fatalf("roles off: %+v, %v", gen, err)
	}
	cl.Close()
	if _, _, err = g.open(map[diffusion.Task]string{diffusion.Inpainting: "t2i"}, nil); err == nil || !strings.Contains(err.Error(), `inpainting model "t2i" is not installed`) {
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
