package all

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"fashiond/diffusion"
	"fashiond/inference"
	"fashiond/pipelines/pipelinetest"
)

// TestOpenGenerativeByRole: no inpainting model keeps the classical path;
// exactly one is used; two without a choice is an error naming both.
func TestOpenGenerativeByRole(t *testing.T) {
	ctx := context.Background()
	rt, err := inference.Open(ctx, inference.Config{LibPath: filepath.Join(pipelinetest.Root(), ".deps/onnxruntime/1.30.0/libonnxruntime.so.1"), IntraOpThreads: 1, Device: "cpu"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	dir := t.TempDir()
	log := slog.New(slog.DiscardHandler)
	gen, cl, err := OpenGenerative(ctx, rt, dir, false, log)
	if err != nil || gen.Inpainter != nil {
		t.Fatalf("empty repository: %+v, %v", gen, err)
	}
	cl.Close()
	src := filepath.Join(pipelinetest.Root(), "diffusion/testdata/contract/oracle-inpaint")
	if _, err := diffusion.Install(ctx, rt, filepath.Join(pipelinetest.Root(), "diffusion/testdata/contract/oracle-floatb"), dir, diffusion.InstallOptions{Name: "t2i"}); err != nil {
		t.Fatal(err)
	}
	if gen, cl, err = OpenGenerative(ctx, rt, dir, false, log); err != nil || gen.Inpainter != nil || gen.TextToImage == nil || gen.TextToImage.Model() != "t2i" {
		t.Fatalf("one text-to-image model: %+v, %v", gen, err)
	}
	cl.Close()
	if _, err := diffusion.Install(ctx, rt, src, dir, diffusion.InstallOptions{Name: "inp-a"}); err != nil {
		t.Fatal(err)
	}
	gen, cl, err = OpenGenerative(ctx, rt, dir, false, log)
	if err != nil || gen.Inpainter == nil {
		t.Fatalf("one inpainting model: %+v, %v", gen, err)
	}
	cl.Close()
	if _, err := diffusion.Install(ctx, rt, src, dir, diffusion.InstallOptions{Name: "inp-b"}); err != nil {
		t.Fatal(err)
	}
	_, _, err = OpenGenerative(ctx, rt, dir, false, log)
	if err == nil || !strings.Contains(err.Error(), "inp-a") || !strings.Contains(err.Error(), "inp-b") {
		t.Fatalf("two inpainting models: %v", err)
	}
}
