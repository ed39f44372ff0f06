package tryon

import (
	"context"
	"image"
	"math"
	"testing"

	"fashiond/internal/pipelinetest"
	"fashiond/perception"
	"fashiond/pipelines/capability/raster"
)

// TestTryonNoGapUnderSleeve: on fashn_garment.webp the old black sleeves
// flare wider and lower than the red tee's; the part of them the new
// sleeve leaves uncovered lay over the upper arm, and the inpainting
// filled it from the light wall beside it: a white gap that cut each arm
// from its sleeve (both arms, the tryon and product-to-model outputs of
// issue 21's third pass, every check passed). The measure: pixels of the
// upper arms (a band of 0.1 shoulder widths round each shoulder-to-elbow
// line) that were the dark old sleeve in the photo and are the wall's
// light grey in the output.
func TestTryonNoGapUnderSleeve(t *testing.T) {
	orig, out := redTeeOn(t, "fashn_garment.webp")
	pose, err := pipelinetest.Perception(t).Pose(context.Background(), orig)
	if err != nil {
		t.Fatal(err)
	}
	gap := armGap(orig, out, pose)
	t.Logf("wall-grey pixels where the old sleeve lay over the upper arms: %d", gap)
	if gap > maxArmGap {
		t.Errorf("%d wall-grey pixels on the upper arms, want at most %d", gap, maxArmGap)
	}
}

// redTeeOn runs tryon (the red flat-lay tee, standard) on a shared photo
// and returns the photo and the output.
func redTeeOn(t *testing.T, photo string) (orig, out *image.RGBA) {
	t.Helper()
	res, err := run(t, Inputs{PersonImage: "file:images/" + photo, GarmentImage: "file:garments/flatlay_tee_red.png", Accuracy: "standard", SampleCount: 1})
	if err != nil {
		t.Fatal(err)
	}
	out = raster.RGBA(res.Outputs[0].Image)
	pipelinetest.WritePNG(t, "tryon_audit_"+photo+".png", out)
	return raster.RGBA(pipelinetest.Image(t, "images/"+photo)), out
}

// maxArmGap is the most wall-grey pixels TestTryonNoGapUnderSleeve
// accepts on the upper arms (a few at the sleeve's soft edge).
const maxArmGap = 20

// armGap counts the pixels within 0.1 shoulder widths of a shoulder-to-elbow
// line that are dark in orig (every channel below 60: the black sleeve) and
// light neutral grey in out (every channel at least 190, within 20 of each
// other: the wall).
func armGap(orig, out *image.RGBA, pose *perception.Pose) int {
	k := pose.Keypoints
	pt := func(i int) [2]float64 { return [2]float64{k[i].X, k[i].Y} }
	sw := math.Hypot(k[perception.KpLeftShoulder].X-k[perception.KpRightShoulder].X, k[perception.KpLeftShoulder].Y-k[perception.KpRightShoulder].Y)
	r := 0.1 * sw
	n := 0
	for _, arm := range [][2][2]float64{{pt(perception.KpLeftShoulder), pt(perception.KpLeftElbow)}, {pt(perception.KpRightShoulder), pt(perception.KpRightElbow)}} {
		a, b := arm[0], arm[1]
		dx, dy := b[0]-a[0], b[1]-a[1]
		l2 := dx*dx + dy*dy
		for y := range orig.Rect.Dy() {
			for x := range orig.Rect.Dx() {
				t := math.Min(math.Max(((float64(x)-a[0])*dx+(float64(y)-a[1])*dy)/l2, 0), 1)
				if math.Hypot(float64(x)-a[0]-t*dx, float64(y)-a[1]-t*dy) > r {
					continue
				}
				i := y*orig.Stride + 4*x
				o, e := orig.Pix[i:i+3], out.Pix[i:i+3]
				if max(o[0], o[1], o[2]) < 60 && min(e[0], e[1], e[2]) >= 190 && max(e[0], e[1], e[2])-min(e[0], e[1], e[2]) <= 20 {
					n++
				}
			}
		}
	}
	return n
}

// TestTryonKeepsTransparency: codait_man_tpose_cutout.png is a cut-out
// person (RGBA, the background transparent). The transfer works on the
// premultiplied pixels, where the transparent background is black, and
// the blend band round the subject made it partly opaque: a black halo
// about 13 pixels wide round the head, arms and legs (issue 21's third
// pass; every check passed, as none compares alpha). The edit must not
// make any transparent pixel of the photo visible.
func TestTryonKeepsTransparency(t *testing.T) {
	orig, out := redTeeOn(t, "codait_man_tpose_cutout.png")
	shown := 0
	for i := 3; i < len(orig.Pix); i += 4 {
		if orig.Pix[i] == 0 && out.Pix[i] != 0 {
			shown++
		}
	}
	t.Logf("transparent pixels of the photo made visible: %d", shown)
	if shown != 0 {
		t.Errorf("%d transparent pixels of the photo made visible, want 0", shown)
	}
}
