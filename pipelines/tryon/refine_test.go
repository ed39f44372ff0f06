package tryon

import (
	"context"
	"image"
	"image/color"
	"strings"
	"testing"

	"fashiond/internal/pipelinetest"
	"fashiond/pipelines/capability/garment"
	"fashiond/pipelines/capability/generative"
)

func TestRefinePrompt(t *testing.T) {
	cases := []struct {
		g    garment.Garment
		want string
	}{
		{garment.Garment{Kind: garment.KindTop, Dominant: color.RGBA{210, 25, 35, 255}}, "a red top"},
		{garment.Garment{Kind: garment.KindTop, Sleeves: true, Dominant: color.RGBA{20, 30, 75, 255}}, "a navy top with sleeves"},
		{garment.Garment{Kind: garment.KindBottom, Trousers: true, Dominant: color.RGBA{30, 70, 190, 255}}, "blue trousers"},
		{garment.Garment{Kind: garment.KindBottom, Dominant: color.RGBA{15, 15, 15, 255}}, "a black skirt"},
		{garment.Garment{Kind: garment.KindFull, Dominant: color.RGBA{245, 150, 185, 255}}, "a pink dress"},
	}
	for _, c := range cases {
		if got := refinePrompt(&c.g); !strings.Contains(got, "wearing "+c.want+",") {
			t.Errorf("%+v: %q lacks %q", c.g.Kind, got, c.want)
		}
	}
}

// TestGenerativeRefinement runs tryon with the oracle inpainting contract
// model (a closed-form graph, not a real generative model) installed: the
// refined output says path generative, names the model and the strength of
// standard accuracy, and passes its self-checks.
func TestGenerativeRefinement(t *testing.T) {
	pl := New(pipelinetest.Perception(t)).WithInpainter(pipelinetest.ContractInpainter(t))
	res, err := pl.Run(context.Background(), request(t, Inputs{PersonImage: "file:images/fashn_model.webp", GarmentImage: "file:images/fashn_garment.webp"}))
	if err != nil {
		t.Fatal(err)
	}
	o := res.Outputs[0]
	if o.Path != "generative" || !strings.Contains(o.Method, "generative-refinement(oracle-inpaint)") || !strings.Contains(strings.Join(o.Notes, " "), "strength 0.3") {
		t.Fatalf("path %s, method %s, notes %q", o.Path, o.Method, o.Notes)
	}
	for _, c := range o.Checks {
		if !c.Pass {
			t.Fatalf("returned output fails %+v", c)
		}
	}
}

// blackout is an Inpainter that ignores the mask and paints the whole
// image black (confinement keeps the rest of the photo; the face check
// catches it).
type blackout struct{}

func (blackout) Inpaint(_ context.Context, img image.Image, _ *image.Gray, p generative.Prompt) (*image.NRGBA, generative.Info, error) {
	out := image.NewNRGBA(img.Bounds())
	for i := 3; i < len(out.Pix); i += 4 {
		out.Pix[i] = 255
	}
	return out, generative.Info{Model: "blackout", Seed: p.Seed}, nil
}

func (blackout) Model() string { return "blackout" }

// TestFailedRefinementFallsBack: a refinement that fails the self-checks is
// dropped for the reference result, and the note names the failed check.
func TestFailedRefinementFallsBack(t *testing.T) {
	pl := New(pipelinetest.Perception(t)).WithInpainter(blackout{})
	res, err := pl.Run(context.Background(), request(t, Inputs{PersonImage: "file:images/fashn_model.webp", GarmentImage: "file:images/fashn_garment.webp"}))
	if err != nil {
		t.Fatal(err)
	}
	o := res.Outputs[0]
	if o.Path != "reference" || !strings.Contains(strings.Join(o.Notes, " "), "the generative refinement was not used: tryon: self-check face_region_change failed") {
		t.Fatalf("path %s, notes %q", o.Path, o.Notes)
	}
}
