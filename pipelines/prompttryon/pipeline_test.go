package prompttryon

import (
	"context"
	"encoding/json"
	"errors"
	"image"
	"math"
	"strings"
	"testing"

	"fashiond/internal/pipelinetest"
	"fashiond/perception"
	"fashiond/pipelines"
	"fashiond/pipelines/capability/presets"
	"fashiond/pipelines/capability/raster"
)

func run(t *testing.T, pl *Pipeline, in map[string]any) (*pipelines.Result, error) {
	t.Helper()
	b, _ := json.Marshal(in)
	var stages []string
	req := &pipelines.Request{JobID: "t", Model: Name, Inputs: pipelinetest.Inputs(t, Name, string(b)), Images: pipelinetest.Loader{Dir: pipelinetest.Testdata(t)},
		Progress: func(s string, f float64, d string) { stages = append(stages, s) }}
	res, err := pl.Run(context.Background(), req)
	if err == nil && (len(stages) < 4 || stages[len(stages)-1] != "done") {
		t.Errorf("progress stages %v", stages)
	}
	return res, err
}

func TestRun(t *testing.T) {
	pl := New(pipelinetest.Perception(t), nil)
	if pl.Name() != "prompt-tryon" {
		t.Fatal(pl.Name())
	}
	person := "file:images/fashn_model.webp"
	res, err := run(t, pl, map[string]any{"personImage": person, "prompt": "burgundy t-shirt", "quality": "1k", "sampleCount": 2})
	if err != nil {
		t.Fatal(err)
	}
	w, h, _ := perception.TierSize("1k", perception.RatioOf(832, 1248))
	if len(res.Outputs) != 2 {
		t.Fatalf("%d outputs", len(res.Outputs))
	}
	for _, o := range res.Outputs {
		if b := o.Image.Bounds(); b.Dx() != w || b.Dy() != h {
			t.Errorf("output %dx%d, want %dx%d", b.Dx(), b.Dy(), w, h)
		}
		if o.Path != "reference" || !strings.Contains(o.Method, "burgundy") || len(o.Notes) == 0 {
			t.Errorf("output metadata %q %q %v", o.Path, o.Method, o.Notes)
		}
	}
	// The samples differ in the garment (a shade variation), not elsewhere.
	a, b := raster.RGBA(res.Outputs[0].Image), raster.RGBA(res.Outputs[1].Image)
	chest := image.Rect(a.Rect.Dx()*60/100, a.Rect.Dy()*36/100, a.Rect.Dx()*76/100, a.Rect.Dy()*46/100)
	bg := image.Rect(a.Rect.Dx()*85/100, a.Rect.Dy()*5/100, a.Rect.Dx()*97/100, a.Rect.Dy()*20/100)
	meanDiff := func(r image.Rectangle) float64 {
		var d float64
		for y := r.Min.Y; y < r.Max.Y; y++ {
			for x := r.Min.X; x < r.Max.X; x++ {
				for k := 0; k < 3; k++ {
					d += math.Abs(float64(a.Pix[y*a.Stride+x*4+k]) - float64(b.Pix[y*b.Stride+x*4+k]))
				}
			}
		}
		return d / float64(3*r.Dx()*r.Dy())
	}
	if d := meanDiff(chest); d < 3 {
		t.Errorf("samples 1 and 2 are (nearly) copies on the chest: mean diff %.2f", d)
	}
	if d := meanDiff(bg); d > 0.5 {
		t.Errorf("samples 1 and 2 differ in the background: %.2f", d)
	}

	// Ratio, style and tier.
	res, err = run(t, pl, map[string]any{"personImage": "file:images/astronaut.png", "prompt": "navy jacket", "quality": "2k",
		"ratio": "3:4", "styleId": "editorial", "sampleCount": 1})
	if err != nil {
		t.Fatal(err)
	}
	w, h, _ = perception.TierSize("2k", "3:4")
	if b := res.Outputs[0].Image.Bounds(); b.Dx() != w || b.Dy() != h || !strings.Contains(res.Outputs[0].Method, "style=editorial") {
		t.Errorf("2k 3:4 editorial: %v %q", b, res.Outputs[0].Method)
	}

	// Errors.
	for _, c := range []struct {
		in   map[string]any
		want string
	}{
		{map[string]any{"personImage": person, "prompt": "make it nice"}, `could not find a colour or pattern in "make it nice"; understood region=top, no colour, no pattern`},
		{map[string]any{"personImage": "file:images/missing.png", "prompt": "red shirt"}, "inputs.personImage"},
		{map[string]any{"personImage": "file:images/astronaut.png", "prompt": "olive trousers"}, "found no bottom region"},
		{map[string]any{"personImage": person, "prompt": "red shirt", "modelImageUrl": "preset:nobody"}, "no preset library"},
		{map[string]any{"personImage": "file:garments/flatlay_tee_red.png", "prompt": "navy top"}, "no person found"},
	} {
		_, err := run(t, pl, c.in)
		var pe *pipelines.Error
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err = %v, want %q", c.in, err, c.want)
		}
	}
}

func TestModelImageFromPresets(t *testing.T) {
	dir := t.TempDir()
	if err := copyPresets(t, dir); err != nil {
		t.Fatal(err)
	}
	lib, err := presets.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	pl := New(pipelinetest.Perception(t), lib)
	res, err := run(t, pl, map[string]any{"personImage": "file:images/fashn_model.webp", "prompt": "coral top",
		"modelImageUrl": "preset:man-standing-studio"})
	if err != nil {
		t.Fatal(err)
	}
	// The base is the preset (576x864, 2:3), recoloured.
	w, h, _ := perception.TierSize("1k", "2:3")
	if b := res.Outputs[0].Image.Bounds(); b.Dx() != w || b.Dy() != h || !strings.Contains(res.Outputs[0].Method, "base=modelImageUrl") {
		t.Errorf("%v %q", b, res.Outputs[0].Method)
	}
	if _, err := run(t, pl, map[string]any{"personImage": "file:images/fashn_model.webp", "prompt": "coral top",
		"modelImageUrl": "preset:nobody"}); err == nil || !strings.Contains(err.Error(), "unknown preset") {
		t.Errorf("unknown preset: %v", err)
	}
}
