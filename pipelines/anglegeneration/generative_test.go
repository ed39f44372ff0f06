package anglegeneration

import (
	"context"
	"encoding/json"
	"image"
	"image/color"
	"strings"
	"testing"

	"fashiond/internal/pipelinetest"
	"fashiond/pipelines"
	"fashiond/pipelines/capability/generative"
	"fashiond/pipelines/capability/mask"
	"fashiond/pipelines/capability/selfcheck"
)

// TestGenerativeFillOracle renders left45 of the standing man with the
// oracle inpainting contract model (a closed-form graph, not a real
// generative model): inside the uncovered region (where he stood and the
// turned view leaves the plate's fill) the output takes the oracle's
// pattern, outside it the classical view's pixels are unchanged; the
// output says path generative and its checks pass.
func TestGenerativeFillOracle(t *testing.T) {
	inp := pipelinetest.ContractInpainter(t)
	p := New(pipelinetest.Perception(t)).WithGenerative(inp, nil)
	r, err := p.Prepare(context.Background(), pipelinetest.Image(t, "images/codait_man_standing.jpg"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := r.Render(Left45, "")
	if err != nil {
		t.Fatal(err)
	}
	o, err := p.finish(context.Background(), r, v, Left45, 7, nil)
	if err != nil {
		t.Fatal(err)
	}
	pipelinetest.WritePNG(t, "angles_generative_fill_left45.png", o.Image)
	if o.Path != "generative" || !strings.HasSuffix(o.Method, "+generative-fill(oracle-inpaint)") || !strings.Contains(strings.Join(o.Notes, " "), `inpainting model "oracle-inpaint"`) {
		t.Fatalf("path %s method %s notes %q", o.Path, o.Method, o.Notes)
	}
	if !strings.Contains(strings.Join(v.Notes, " "), smoothFill) {
		t.Errorf("the classical left45 view's notes lack %q: the note check below proves nothing", smoothFill)
	}
	if strings.Contains(strings.Join(o.Notes, " "), smoothFill) {
		t.Errorf("a generative fill still says %q: %q", smoothFill, o.Notes)
	}
	for _, c := range o.Checks {
		if !c.Pass {
			t.Fatalf("check %+v", c)
		}
	}
	out := o.Image.(*image.RGBA)
	inner := mask.Erode(v.Uncovered, 6)
	inside, changed := 0, 0
	for i, m := range v.Uncovered.Pix {
		same := out.Pix[4*i] == v.Image.Pix[4*i] && out.Pix[4*i+1] == v.Image.Pix[4*i+1] && out.Pix[4*i+2] == v.Image.Pix[4*i+2]
		switch {
		case m < 128 && !same:
			t.Fatalf("pixel %d outside the uncovered region changed", i)
		case inner.Pix[i] >= 128:
			inside++
			if !same {
				changed++
			}
		}
	}
	if inside < 5000 || float64(changed) < 0.9*float64(inside) {
		t.Fatalf("%d of %d pixels inside the uncovered region were generated", changed, inside)
	}
}

// TestGenerativeBackInPlace renders the back of the subject of the
// two-person bikes photo with the oracle model as inpainter and refiner:
// the refine pass redraws the subject, and the other woman and everything
// outside the subject's region and band stay pixel-identical.
func TestGenerativeBackInPlace(t *testing.T) {
	inp := pipelinetest.ContractInpainter(t)
	p := New(pipelinetest.Perception(t)).WithGenerative(inp, inp.Refiner())
	in, _ := json.Marshal(map[string]any{"imageUrl": "file:images/pixabay_two_women_bikes.jpg", "angleIds": []string{Back}, "quality": "1k"})
	res, err := p.Run(context.Background(), &pipelines.Request{Model: "angle-generation", Inputs: pipelinetest.Inputs(t, "angle-generation", string(in)), Progress: pipelinetest.NoProgress, Images: pipelinetest.Loader{Dir: pipelinetest.Testdata(t)}})
	if err != nil {
		t.Fatal(err)
	}
	o := res.Outputs[0]
	pipelinetest.WritePNG(t, "angles_generative_back_bikes.png", o.Image)
	if o.Path != "generative" || !strings.Contains(o.Method, "+generative-refine(oracle-inpaint, strength 0.5)") {
		t.Fatalf("path %s method %s notes %q", o.Path, o.Method, o.Notes)
	}
	for _, c := range o.Checks {
		if !c.Pass {
			t.Fatalf("check %+v", c)
		}
	}
	// At the working resolution: the other person is untouched.
	r, err := p.Prepare(context.Background(), pipelinetest.Image(t, "images/pixabay_two_women_bikes.jpg"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := r.Render(Back, "")
	if err != nil {
		t.Fatal(err)
	}
	g, err := p.finish(context.Background(), r, v, Back, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	gi := g.Image.(*image.RGBA)
	others := r.several.OthersMask()
	for i, m := range others.Pix {
		if m != 0 && (gi.Pix[4*i] != r.s.Image.Pix[4*i] || gi.Pix[4*i+1] != r.s.Image.Pix[4*i+1] || gi.Pix[4*i+2] != r.s.Image.Pix[4*i+2]) {
			t.Fatalf("pixel %d of the other person changed", i)
		}
	}
	if c := selfcheck.ChangedOutside(r.s.Image, gi, v.Confine); !c.Pass || c.Value != 0 {
		t.Fatalf("changed outside the subject: %+v", c)
	}
	if d := pipelinetest.MeanAbsDiff(v.Image, gi); d < 1 {
		t.Fatalf("mean difference to the classical back view %.2f: nothing was redrawn", d)
	}
}

// blackInpainter is a test double of an inpainting model that returns the
// image with the mask painted black: a damaged output.
type blackInpainter struct{}

func (blackInpainter) Model() string { return "black-double" }
func (blackInpainter) Inpaint(_ context.Context, img image.Image, m *image.Gray, p generative.Prompt) (*image.NRGBA, generative.Info, error) {
	b := img.Bounds()
	out := image.NewNRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	for y := range b.Dy() {
		for x := range b.Dx() {
			c := color.NRGBAModel.Convert(img.At(b.Min.X+x, b.Min.Y+y)).(color.NRGBA)
			if m.GrayAt(x, y).Y >= 128 {
				c = color.NRGBA{0, 0, 0, 255}
			}
			out.SetNRGBA(x, y, c)
		}
	}
	return out, generative.Info{Model: "black-double", Steps: 1, Strength: 1, Seed: p.Seed, Prompt: p.Text}, nil
}

// TestDamagedGenerativeFallsBack: a generative output with a black hole
// fails largest_hole; the classical view is returned and the note names
// the check.
func TestDamagedGenerativeFallsBack(t *testing.T) {
	p := New(pipelinetest.Perception(t)).WithGenerative(blackInpainter{}, nil)
	in, _ := json.Marshal(map[string]any{"imageUrl": "file:images/codait_man_standing.jpg", "angleIds": []string{Back}, "quality": "1k"})
	res, err := p.Run(context.Background(), &pipelines.Request{Model: "angle-generation", Inputs: pipelinetest.Inputs(t, "angle-generation", string(in)), Progress: pipelinetest.NoProgress, Images: pipelinetest.Loader{Dir: pipelinetest.Testdata(t)}})
	if err != nil {
		t.Fatal(err)
	}
	o := res.Outputs[0]
	notes := strings.Join(o.Notes, " | ")
	if o.Path != "reference" || strings.Contains(o.Method, "generative") || !strings.Contains(notes, "the generative output failed the self-check largest_hole (") || !strings.Contains(notes, "the classical view is returned") {
		t.Fatalf("path %s method %s notes %q", o.Path, o.Method, notes)
	}
}

func TestAnglePrompt(t *testing.T) {
	for _, tc := range []struct{ id, want string }{
		{Back, "back view, seen from behind, the back of the head and hair of a person wearing a white top and blue trousers, full body, photographic, natural light, sharp focus"},
		{LeftSide, "side view in profile of a person wearing a white top and blue trousers, full body, photographic, natural light, sharp focus"},
		{Right45, "three-quarter view of a person wearing a white top and blue trousers, full body, photographic, natural light, sharp focus"},
	} {
		if got := anglePrompt(tc.id, "a person wearing a white top and blue trousers", true); got != tc.want {
			t.Errorf("%s: %q", tc.id, got)
		}
	}
	if got := anglePrompt(Left45, "a person wearing a white top", false); got != "three-quarter view of a person wearing a white top, upper body, photographic, natural light, sharp focus" {
		t.Errorf("upper body: %q", got)
	}
	if refineStrength(Back) != backStrength || refineStrength(RightSide) != sideStrength || refineStrength(Left45) != 0 || refineStrength(Front) != 0 {
		t.Error("refine strengths")
	}
}

// TestDescribeFromParsing: the standing man wears a white T-shirt and
// dark trousers (full body); the half-body woman a white top (the pose
// model puts her hips at her chest: the top reaching below them is still
// the top); the smiling portrait a top, and no legs (the face is larger
// than the pose's torso).
func TestDescribeFromParsing(t *testing.T) {
	for _, tc := range []struct {
		file, want string
		full       bool
	}{
		{"codait_man_standing.jpg", "a person wearing a white top and black trousers", true},
		{"pexels_woman_side_halfbody.png", "a person wearing a white top", false},
		{"pexels_woman_portrait.png", "a person wearing a grey top", false},
	} {
		r, err := New(pipelinetest.Perception(t)).Prepare(context.Background(), pipelinetest.Image(t, "images/"+tc.file))
		if err != nil {
			t.Fatal(err)
		}
		if got, full := r.describe(); got != tc.want || full != tc.full {
			t.Errorf("%s: %q, full body %v", tc.file, got, full)
		}
	}
}
