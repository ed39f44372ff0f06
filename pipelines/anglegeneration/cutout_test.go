package anglegeneration

import (
	"context"
	"encoding/json"
	"image/color"
	"slices"
	"testing"

	"fashiond/internal/pipelinetest"
	"fashiond/pipelines"
	"fashiond/pipelines/capability/raster"
	"fashiond/pipelines/capability/selfcheck"
)

// TestCutoutOnWhite runs angle-generation on the transparent cut-out
// codait_man_tpose_cutout.png (quality 1k, classical path). Before the
// photo was laid over white, every view was refused with largest_hole
// reading the premultiplied, black, transparent background as a hole
// (front 0.0025, right45 0.019, back 0.0564). Now the front and right45
// views are returned (looked at: the man on white, clean; right45 the
// classical foreshortened turn), their background is white and a note
// says so.
func TestCutoutOnWhite(t *testing.T) {
	pl := New(pipelinetest.Perception(t))
	for _, c := range []struct {
		id   string
		hole float64 // largest_hole of the returned view
	}{
		{id: Front, hole: 0.0005},
		{id: Right45, hole: 0.0017},
	} {
		t.Run(c.id, func(t *testing.T) {
			in, _ := json.Marshal(map[string]any{"imageUrl": "file:images/codait_man_tpose_cutout.png", "angleIds": []string{c.id}, "quality": "1k"})
			res, err := pl.Run(context.Background(), &pipelines.Request{Model: "angle-generation", Inputs: pipelinetest.Inputs(t, "angle-generation", string(in)), Progress: pipelinetest.NoProgress, Images: pipelinetest.Loader{Dir: pipelinetest.Testdata(t)}})
			if err != nil {
				t.Fatal(err)
			}
			o := res.Outputs[0]
			pipelinetest.WritePNG(t, "cutout_"+c.id+".png", o.Image)
			if !slices.Contains(o.Notes, raster.OnWhiteNote) {
				t.Errorf("notes %q lack %q", o.Notes, raster.OnWhiteNote)
			}
			for _, ch := range o.Checks {
				if !ch.Pass {
					t.Errorf("check %+v failed", ch)
				}
				if ch.Name == selfcheck.NameHole && ch.Value != c.hole {
					t.Errorf("%s = %v, want %v", ch.Name, ch.Value, c.hole)
				}
			}
			b := o.Image.Bounds()
			for _, p := range [][2]int{{b.Min.X, b.Min.Y}, {b.Max.X - 1, b.Min.Y}, {b.Min.X, b.Max.Y - 1}, {b.Max.X - 1, b.Max.Y - 1}} {
				r, g, bl, _ := o.Image.At(p[0], p[1]).RGBA()
				if got := (color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8), 255}); got.R < 250 || got.G < 250 || got.B < 250 {
					t.Errorf("corner %v = %v, want white", p, got)
				}
			}
		})
	}
}
