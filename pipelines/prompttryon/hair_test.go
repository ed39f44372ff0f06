package prompttryon

import (
	"bytes"
	"context"
	"image"
	"image/draw"
	"image/png"
	"os"
	"testing"

	"fashiond/internal/pipelinetest"
	"fashiond/pipelines/capability/raster"
	"fashiond/pipelines/capability/recolour"
	"fashiond/pipelines/capability/selfcheck"
)

// TestHairOverTheShoulderKept: "a red top" on the side half-body photo,
// whose backlit hair hangs over her shoulder and back and which the
// skin/clothes/hair parser labels clothes below the head's outline. The
// hanging hair (the box of the photo it hangs in, beside the top's edge:
// x 320-410, y 330-520 of the 426x636 photo, looked at by hand; it holds
// the hair, the glow between its strands and its tips, no garment) must
// stay hair. Measured: 0.8247 of the box changed before hanging hair was
// followed (nearly all of it red), 0.0675 after (a
// patch of the thinnest tips at the bottom of the tail is still painted,
// x 325-355, y 485-510).
func TestHairOverTheShoulderKept(t *testing.T) {
	const maxChanged = 0.1
	pl := New(pipelinetest.Perception(t), nil)
	work := recolour.FitPixels(pipelinetest.Image(t, "images/pexels_woman_side_halfbody.png"), maxWorkPixels)
	d, _ := dressPhoto(t, pl, work, "a red top")
	pipelinetest.WritePNG(t, "redtop_hair_side_halfbody.png", d.img)
	box := image.NewGray(work.Rect)
	draw.Draw(box, image.Rect(320, 330, 410, 520), image.White, image.Point{}, draw.Src)
	share := pipelinetest.ChangedShare(work, d.img, box)
	t.Logf("%.4f of the hanging hair's box changed", share)
	if share > maxChanged {
		t.Errorf("%.4f of the hanging hair's box changed, want <= %.2f", share, maxChanged)
	}
}

// dressPhoto finds the subject of work and its garment regions and dresses
// sample 0 of prompt the way Run does, failing the test on any error.
func dressPhoto(t *testing.T, pl *Pipeline, work *image.RGBA, prompt string) (*dressed, *recolour.Regions) {
	t.Helper()
	ctx := context.Background()
	spec, err := recolour.Parse(prompt)
	if err != nil {
		t.Fatal(err)
	}
	s, err := findSubject(ctx, pl.p, work)
	if err != nil {
		t.Fatal(err)
	}
	r, err := recolour.FindRegions(ctx, pl.p, s.cropImg)
	if err != nil {
		t.Fatal(s.regionsErr(ctx, err))
	}
	d, err := pl.dressSample(ctx, s, r, spec, prompt, 0, func(int, int) {})
	if err != nil {
		t.Fatal(err)
	}
	return d, r
}

// TestHairChangedRefusesRedHair: hair_changed on the output the old
// regions gave the side half-body photo ("a red top" painted the hair
// over her shoulder red; every check passed it). testdata holds that
// output's part at x 250-426, y 260-560, pasted over the photo: the rest
// of the old output differs from the photo only on the top. Measured
// 0.0967 of her hair changed there (limit 0.03); clean outputs of the
// sheet photos and crowds read 0-0.0098.
func TestHairChangedRefusesRedHair(t *testing.T) {
	pl := New(pipelinetest.Perception(t), nil)
	work := recolour.FitPixels(pipelinetest.Image(t, "images/pexels_woman_side_halfbody.png"), maxWorkPixels)
	d, r := dressPhoto(t, pl, work, "a red top")
	hair := r.HairMask()
	if got := selfcheck.HairChange(work, d.img, hair); !got.Pass {
		t.Errorf("the output now: %+v, want a pass", got)
	}
	old := raster.CopyRGBA(work)
	b, err := os.ReadFile("testdata/side_halfbody_redtop_hair_before.png")
	part, derr := png.Decode(bytes.NewReader(b))
	if err != nil || derr != nil {
		t.Fatalf("the old output's part: %v, %v", err, derr)
	}
	draw.Draw(old, image.Rect(250, 260, 426, 560), part, part.Bounds().Min, draw.Src)
	got := selfcheck.HairChange(work, old, hair)
	t.Logf("old output: %+v", got)
	if got.Pass || got.Value < 0.05 {
		t.Errorf("the old output's red hair: %+v, want a failure at 0.05 or more", got)
	}
}
