package repose

import (
	"context"
	"testing"

	"fashiond/internal/pipelinetest"
)

// TestIdentityReposeNoSeams re-poses the standing man into his own pose:
// the layers land where they were, so inside the person the output must be
// the photo. Where an arm layer meets the body (the shirt's sides) the two
// soft edges used to let the light background plate through as thin
// lines; count the person pixels (well inside the mask) whose luma moved
// by more than 40 (measured: 0.0025 of them before the body reached under
// the limbs, 0.0003 after).
func TestIdentityReposeNoSeams(t *testing.T) {
	p := pipelinetest.Perception(t)
	sc := testScene(t, p, "images/fashn_garment.webp")
	src := AllKnown(SkeletonFromPose(sc.Pose, sc.Image.Rect.Dx(), sc.Image.Rect.Dy()))
	r, err := ReposeDetail(context.Background(), p, sc, src)
	if err != nil {
		t.Fatal(err)
	}
	w, h := sc.Image.Rect.Dx(), sc.Image.Rect.Dy()
	inner := 0
	bad := 0
	pm := sc.PersonMask
	for y := 4; y < h-4; y++ {
		for x := 4; x < w-4; x++ {
			// well inside: the mask is full 4 px around
			if pm.Pix[(y-4)*pm.Stride+x] < 250 || pm.Pix[(y+4)*pm.Stride+x] < 250 ||
				pm.Pix[y*pm.Stride+x-4] < 250 || pm.Pix[y*pm.Stride+x+4] < 250 {
				continue
			}
			inner++
			o := y*sc.Image.Stride + x*4
			l := func(b []uint8) int { return (299*int(b[o]) + 587*int(b[o+1]) + 114*int(b[o+2])) / 1000 }
			if d := l(r.Image.Pix) - l(sc.Image.Pix); d > 40 || d < -40 {
				bad++
			}
		}
	}
	frac := float64(bad) / float64(inner)
	t.Logf("%d of %d inner person pixels changed by > 40 luma (%.4f)", bad, inner, frac)
	if frac > 0.001 {
		t.Errorf("%.4f of the person changed under the identity pose (seams), want <= 0.001", frac)
	}
}
