package modelcreate

import (
	"context"
	"image"
	"strings"
	"testing"

	"fashiond/internal/golden"
	"fashiond/internal/pipelinetest"
	"fashiond/pipelines/capability/generative"
	"fashiond/pipelines/capability/raster"
)

func TestGenPrompt(t *testing.T) {
	got := genPrompt(Inputs{Gender: "woman", BodyType: "athletic", Prompt: "short red hair", Clothing: "a navy blazer", Pose: "hands on hips"})
	want := "a full-body fashion photo of one person: woman, athletic, short red hair; wearing a navy blazer; hands on hips; plain light studio background, soft natural light, sharp focus"
	if got != want {
		t.Fatalf("got %q", got)
	}
	if got := genPrompt(Inputs{}); !strings.Contains(got, "one person: a fashion model; standing, facing the camera") {
		t.Fatalf("empty request: %q", got)
	}
}

// TestGeneratedPhotoWithoutPersonFallsBack: the oracle text-to-image
// contract model makes stripes, not a person; generate uses a preset and
// says why.
func TestGeneratedPhotoWithoutPersonFallsBack(t *testing.T) {
	pl := New(pipelinetest.Perception(t), library(t)).WithTextToImage(pipelinetest.ContractTextToImage(t))
	res, err := pl.Run(context.Background(), request(t, newStudio(), map[string]any{"type": "generate", "gender": "man", "prompt": "in a studio", "quality": "1k", "aspectRatio": "3:4", "sampleCount": 1}))
	if err != nil {
		t.Fatal(err)
	}
	o := res.Outputs[0]
	if err := golden.CheckDigest(goldenList, "text-to-image/oracle-fallback", raster.RGBA(o.Image)); err != nil {
		t.Error(err)
	}
	if o.Path != "reference" || !strings.Contains(o.Method, "preset:") || !strings.Contains(strings.Join(o.Notes, " | "), `the installed text-to-image model "oracle-floatb" made no usable model photo (sample 1: no person found in it); a preset model photo was used instead`) {
		t.Fatalf("path %s, method %s, notes %q", o.Path, o.Method, o.Notes)
	}
}

// photoGenerator is a test double of a text-to-image model that "makes" a
// real photo of a standing man: it exercises the pipeline's generative
// path, not a model.
type photoGenerator struct{ img image.Image }

func (photoGenerator) Model() string { return "photo-double" }
func (p photoGenerator) Generate(_ context.Context, _, _ int, pr generative.Prompt) (*image.NRGBA, generative.Info, error) {
	b := p.img.Bounds()
	out := image.NewNRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	for y := range b.Dy() {
		for x := range b.Dx() {
			out.Set(x, y, p.img.At(b.Min.X+x, b.Min.Y+y))
		}
	}
	return out, generative.Info{Model: "photo-double", Seed: pr.Seed, Prompt: pr.Text, Steps: 1, Strength: 1}, nil
}

// TestGeneratedModelPhoto: with a generator whose photo holds one person,
// generate works on it without the preset library and saves the model.
func TestGeneratedModelPhoto(t *testing.T) {
	pl := New(pipelinetest.Perception(t), nil).WithTextToImage(photoGenerator{pipelinetest.Image(t, "images/codait_man_standing.jpg")})
	st := newStudio()
	res, err := pl.Run(context.Background(), request(t, st, map[string]any{"type": "generate", "gender": "man", "prompt": "short hair", "quality": "1k", "aspectRatio": "3:4", "sampleCount": 1}))
	if err != nil {
		t.Fatal(err)
	}
	o := res.Outputs[0]
	if err := golden.CheckDigest(goldenList, "text-to-image/photo-double", raster.RGBA(o.Image)); err != nil {
		t.Error(err)
	}
	if o.Path != "generative" || !strings.HasPrefix(o.Method, "text-to-image:photo-double") || !strings.Contains(strings.Join(o.Notes, " "), "man, short hair") {
		t.Fatalf("path %s, method %s, notes %q", o.Path, o.Method, o.Notes)
	}
	if len(st.recs) != 1 {
		t.Fatalf("%d saved models, want 1", len(st.recs))
	}
}
