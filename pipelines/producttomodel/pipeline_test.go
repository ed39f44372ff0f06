package producttomodel

import (
	"context"
	"encoding/json"
	"errors"
	"image"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"fashiond/internal/pipelinetest"
	"fashiond/internal/testenv"
	"fashiond/perception"
	"fashiond/pipelines"
	"fashiond/pipelines/capability/garment"
	"fashiond/pipelines/capability/presets"
	"fashiond/pipelines/capability/style"
)

// library is the built-in preset library (pipelinetest.PresetDir).
func library(t *testing.T) *presets.Library {
	t.Helper()
	l, err := presets.Open(pipelinetest.PresetDir(t))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// subLibrary is a library of the presets of full named by ids.
func subLibrary(t *testing.T, full *presets.Library, ids ...string) *presets.Library {
	t.Helper()
	var keep []presets.Preset
	dir := t.TempDir()
	for _, p := range full.All() {
		if !slices.Contains(ids, p.ID) {
			continue
		}
		keep = append(keep, p)
		b, err := os.ReadFile(filepath.Join(full.Dir(), p.File))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p.File), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	man, _ := json.Marshal(map[string]any{"presets": keep})
	if err := os.WriteFile(filepath.Join(dir, "presets.json"), man, 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := presets.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func run(t *testing.T, lib *presets.Library, in Inputs) (*pipelines.Result, error) {
	t.Helper()
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	req := &pipelines.Request{
		JobID: "job-" + in.CustomPrompt, Model: "product-to-model", Inputs: pipelinetest.Inputs(t, "product-to-model", string(raw)),
		Images:   pipelinetest.Loader{Dir: pipelinetest.Testdata(t)},
		Progress: func(string, float64, string) {},
	}
	return New(pipelinetest.Perception(t), lib).Run(context.Background(), req)
}

// colourShare is the fraction of pixels within CIEDE2000 d of c.
func colourShare(img image.Image, c garment.Lab, d float64) float64 {
	b := img.Bounds()
	n := 0
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			if garment.DeltaE2000Lab(garment.ToLab(uint8(r>>8), uint8(g>>8), uint8(bl>>8)), c) < d {
				n++
			}
		}
	}
	return float64(n) / float64((b.Dx()/2)*(b.Dy()/2))
}

// TestPresetModelsFromPrompt: two samples for "a man" use two different
// preset models, each exactly the 1k 3:4 tier size, each showing the red of
// the tee on a good share of the picture, in the default studio look.
func TestPresetModelsFromPrompt(t *testing.T) {
	res, err := run(t, library(t), Inputs{ProductImage: "file:garments/flatlay_tee_red.png", CustomPrompt: "a man, relaxed pose", Quality: "1k", SampleCount: 2, Ratio: "3:4"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Outputs) != 2 {
		t.Fatalf("%d outputs, want 2", len(res.Outputs))
	}
	w, h, _ := perception.TierSize("1k", "3:4")
	red := garment.ToLab(200, 30, 40)
	var used []string
	for i, o := range res.Outputs {
		if s := o.Image.Bounds().Size(); s.X != w || s.Y != h {
			t.Errorf("output %d is %v, want %dx%d", i, s, w, h)
		}
		if o.Path != "reference" || !strings.Contains(o.Method, "+style-studio+tier") {
			t.Errorf("output %d: path %q method %q", i, o.Path, o.Method)
		}
		if len(o.Checks) == 0 || o.Checks[0].Name != style.NamePaintedOver || !o.Checks[0].Pass {
			t.Errorf("output %d: checks %+v, want %s first and passing", i, o.Checks, style.NamePaintedOver)
		}
		share := colourShare(o.Image, red, 15)
		if share < 0.03 {
			t.Errorf("output %d: the tee's red covers %.1f%% of the picture, want >= 3%%", i, 100*share)
		}
		t.Logf("output %d: %s; red share %.1f%%", i, o.Notes[0], 100*share)
		testenv.WritePNG(t, "ptm_preset_"+string(rune('0'+i))+".png", o.Image)
		used = append(used, o.Notes[0])
	}
	if used[0] == used[1] {
		t.Errorf("both samples used the same model: %q", used[0])
	}
}

// TestModelImageAndStyle: modelImageUrl is the model; ratio 1:1 at 1k gives
// exactly 1000x1000; the editorial style is named.
func TestModelImageAndStyle(t *testing.T) {
	res, err := run(t, nil, Inputs{ProductImage: "file:garments/flatlay_tee_navy_stripes.png", ModelImageURL: "file:images/fashn_model.webp", StyleID: "editorial", Quality: "1k", SampleCount: 1, Ratio: "1:1"})
	if err != nil {
		t.Fatal(err)
	}
	o := res.Outputs[0]
	w, h, _ := perception.TierSize("1k", "1:1")
	if s := o.Image.Bounds().Size(); s.X != w || s.Y != h {
		t.Fatalf("output %v, want %dx%d", s, w, h)
	}
	if !strings.Contains(o.Method, "style-editorial") || !strings.Contains(o.Notes[0], "modelImageUrl") {
		t.Errorf("method %q notes %q", o.Method, o.Notes[0])
	}
	testenv.WritePNG(t, "ptm_model_editorial.png", o.Image)
	navy := garment.ToLab(29, 39, 82)
	if share := colourShare(o.Image, navy, 18); share < 0.03 {
		t.Errorf("navy covers %.1f%% of the picture, want >= 3%%", 100*share)
	}
}

// TestNoFittingPreset: trousers need a full-body model; in a library whose
// only woman is upper-body, "a woman" is a job error naming what is
// missing and what the library has. With the built-in library the same
// request gets the full-body woman.
func TestNoFittingPreset(t *testing.T) {
	full := library(t)
	small := subLibrary(t, full, "woman-halfbody-side", "man-seated-industrial")
	in := Inputs{ProductImage: "file:garments/flatlay_trousers_khaki.png", CustomPrompt: "a woman in a studio", Quality: "1k", SampleCount: 1, Ratio: "3:4"}
	_, err := run(t, small, in)
	var pe *pipelines.Error
	want := `no preset model fits customPrompt "a woman in a studio": no female full-body model (the library has: male full-body, female upper-body); a bottom garment needs a full-body model`
	if !errors.As(err, &pe) || !strings.Contains(pe.Msg, want) {
		t.Fatalf("error %v, want a job error containing %q", err, want)
	}
	if got := full.Choose(in.CustomPrompt, 1, 0, presets.Filter{Framing: framings(garment.KindBottom)}); len(got) != 1 || got[0].ID != "woman-standing-grass" {
		t.Fatalf("built-in library chose %v for a woman in trousers, want woman-standing-grass", got)
	}
}

// TestFrameKeepsPerson: framing to a ratio keeps the person's box inside.
func TestFrameKeepsPerson(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 800, 1200))
	pm := image.NewGray(img.Rect)
	for y := 100; y < 500; y++ {
		for x := 500; x < 700; x++ {
			pm.Pix[y*800+x] = 255
		}
	}
	for _, r := range []string{"1:1", "16:9", "3:4", "9:16"} {
		out, m := frame(img, pm, r)
		a, b, _ := perception.ParseRatio(r)
		got := float64(out.Rect.Dx()) / float64(out.Rect.Dy())
		if d := got - float64(a)/float64(b); d > 0.01 || d < -0.01 {
			t.Errorf("%s: aspect %.3f", r, got)
		}
		n := 0
		for _, v := range m.Pix {
			if v == 255 {
				n++
			}
		}
		if n != 400*200 {
			t.Errorf("%s: the crop keeps %d of %d person pixels", r, n, 400*200)
		}
	}
}
