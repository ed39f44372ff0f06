package repose

import (
	"context"
	"math"
	"testing"

	"fashiond/internal/pipelinetest"
	"fashiond/pipelines/capability/raster"
	"fashiond/pipelines/capability/selfcheck"
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

// TestLegsNotUnderTheBodyFill is issue 21's "arms raised" on
// codait_man_standing: the pose model puts his knees deeper than his
// hips, the legs were drawn behind the body layer, and the body layer's
// inpainted fill over the top of the legs showed as a dark smear across
// the belt and the top of the jeans. The hips band (from a tenth of the
// torso above the hips to 15% below, between the hips) must stay as in the photo: its mean absolute RGB difference
// was 11.8 with the smear and is 0.7 with the legs in front.
func TestLegsNotUnderTheBodyFill(t *testing.T) {
	s, r := reposeText(t, pipelinetest.Perception(t), "images/codait_man_standing.jpg", "arms raised")
	writePNG(t, "hips_codait_arms_raised", r.Image)
	S := r.Target
	lh, rh := S.Joints[23], S.Joints[24]
	torso := math.Hypot((S.Joints[11].X+S.Joints[12].X-lh.X-rh.X)/2, (S.Joints[11].Y+S.Joints[12].Y-lh.Y-rh.Y)/2)
	y0, y1 := int((lh.Y+rh.Y)/2-0.1*torso), int((lh.Y+rh.Y)/2+0.15*torso)
	x0, x1 := int(math.Min(lh.X, rh.X)), int(math.Max(lh.X, rh.X))
	src, out := raster.RGBA(s.Image), r.Image
	var sum, n float64
	for y := y0; y < y1; y++ {
		for x := x0; x < x1; x++ {
			i := y*src.Stride + x*4
			for c := range 3 {
				sum += math.Abs(float64(src.Pix[i+c]) - float64(out.Pix[i+c]))
			}
			n += 3
		}
	}
	d := sum / n
	t.Logf("hips band %d..%d x %d..%d: mean abs difference %.1f", x0, x1, y0, y1, d)
	if d > maxHipsDiff {
		t.Errorf("the hips band changed by %.1f on average (limit %g): the body's fill shows over the legs", d, float64(maxHipsDiff))
	}
}

// maxHipsDiff is the largest mean absolute RGB difference of the hips band
// in TestLegsNotUnderTheBodyFill: the smear measured 11.8, the fixed
// render 0.7.
const maxHipsDiff = 5

// TestUnmovedPartsAreTheSource is issue 21's faint seam down the right of
// codait_man_standing's shirt: the arm layers' soft edges composited over
// the body layer's texture, inpainted under the limbs. A part the pose
// does not move must show the photo itself: over the arms' layers (which
// neither "looking at camera" nor "looking left" moves) the share of
// pixels that differ from the photo by more than unmovedTol in any
// channel was 0.1782 on both before the fix (the arms' soft edges and the
// seam) and must be 0. With the head turned the neck moves, and with it
// the tops of the shoulders beside it: the arm pixels there (above the
// shoulders' line plus shoulderBand of the torso) are left out.
func TestUnmovedPartsAreTheSource(t *testing.T) {
	p := pipelinetest.Perception(t)
	s := testScene(t, p, "images/codait_man_standing.jpg")
	rp, err := NewReposer(context.Background(), p, s)
	if err != nil {
		t.Fatal(err)
	}
	src := raster.RGBA(s.Image)
	for _, text := range []string{"looking at camera", "looking left"} {
		t.Run(text, func(t *testing.T) {
			target, err := TargetFromText(text, s.Pose)
			if err != nil {
				t.Fatal(err)
			}
			r, err := rp.Repose(context.Background(), target)
			if err != nil {
				t.Fatal(err)
			}
			writePNG(t, "unmoved_"+text, r.Image)
			S := rp.S
			top := math.Max(S.Joints[11].Y, S.Joints[12].Y) + shoulderBand*norm(sub(S.MidShoulder(), S.MidHip()))
			n, changed := 0, 0
			for i := range rp.cov[partArmL] {
				if rp.cov[partArmL][i] == 0 && rp.cov[partArmR][i] == 0 || float64(i/src.Rect.Dx()) < top {
					continue
				}
				n++
				o := i * 4
				for c := range 3 {
					if d := int(src.Pix[o+c]) - int(r.Image.Pix[o+c]); d > unmovedTol || d < -unmovedTol {
						changed++
						break
					}
				}
			}
			frac := float64(changed) / float64(max(n, 1))
			t.Logf("%d of %d arm-layer pixels differ from the photo (%.4f)", changed, n, frac)
			if n == 0 || changed != 0 {
				t.Errorf("%.4f of the unmoved arms' pixels changed, want none (over %d)", frac, n)
			}
		})
	}
}

// shoulderBand is the share of the torso below the shoulders' line that
// TestUnmovedPartsAreTheSource leaves out (the neck moved with the head).
const shoulderBand = 0.1

// unmovedTol is the largest channel difference TestUnmovedPartsAreTheSource
// takes for the photo's own pixel.
const unmovedTol = 2

// TestHeadTurnKeepsTheFace is issue 21's squeezed face: "looking left"
// and "looking right" on codait_man_standing, whose hair the top edge
// cuts. The edge held the hair and forehead where they were while the
// chin moved with the turned head, and the face was sheared sideways.
// The output's face against the photo's (selfcheck.FaceCompare: each
// aligned on its own five landmarks) kept face_texture 0.797 / 0.847
// then; sliding the head along the edge, 0.949 / 0.950.
func TestHeadTurnKeepsTheFace(t *testing.T) {
	p := pipelinetest.Perception(t)
	ctx := context.Background()
	for _, text := range []string{"looking left", "looking right"} {
		t.Run(text, func(t *testing.T) {
			s, r := reposeText(t, p, "images/codait_man_standing.jpg", text)
			writePNG(t, "head_turn_"+text, r.Image)
			fs, err := p.Faces(ctx, s.Image)
			if err != nil || len(fs) == 0 {
				t.Fatalf("no face in the photo: %v", err)
			}
			fo, err := p.Faces(ctx, r.Image)
			if err != nil || len(fo) == 0 {
				t.Fatalf("no face on the output: %v", err)
			}
			checks, err := selfcheck.FaceCompare(r.Image, fo[0].Landmarks, s.Image, fs[0].Landmarks)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range checks {
				t.Logf("%s %v", c.Name, c.Value)
				if c.Name == selfcheck.NameFaceTexture && c.Value < minTurnedFaceTexture {
					t.Errorf("face_texture %v, want >= %v (the face sheared)", c.Value, minTurnedFaceTexture)
				}
			}
		})
	}
}

// minTurnedFaceTexture is TestHeadTurnKeepsTheFace's limit, between the
// sheared faces (0.797, 0.847 on 221227f) and the slid ones (0.949, 0.950).
const minTurnedFaceTexture = 0.9
