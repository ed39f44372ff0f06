package selfcheck

import (
	"context"
	"image"
	"math"

	"fashiond/perception"
	"fashiond/pipelines"
)

// NameArmPainted is the check of an arm painted by a fill.
const NameArmPainted = "arm_painted"

const (
	// MaxArmPainted is the largest share of the subject's arm band (see
	// ArmPainted) that an edit may show neither as the source nor under
	// the new garment. Measured on tryon, classical path, red tee and
	// green long-sleeve, every output looked at: clean outputs on
	// codait_man_standing, fashn_model, astronaut, the dog photo (green
	// long-sleeve) 0-0.0027; fashn_garment with the red tee 0.0194 (the
	// strip of upper-arm skin transfer's armfill paints on purpose under
	// the short sleeve, looked at: a whole arm); the red tee on
	// pexels_woman_dog_standing 0.3790 (the hoodie's sleeve over the arm
	// reaching across the dog filled with a blurred, half-transparent skin
	// band, the hand floating at its end; every other check passed).
	MaxArmPainted = 0.1
	// armBandFrac is the band's half-width round each arm bone, as a
	// fraction of that bone's length.
	armBandFrac = 0.12
	// armMinVisibility is the pose model's visibility from which a joint
	// counts as seen.
	armMinVisibility = 0.5
	// armMinPixels is the fewest band pixels the check measures; with
	// fewer (arms hidden, out of frame) it reads 0.
	armMinPixels = 50
	// armKeepTol is the per-channel difference (0..255) under which an
	// output pixel is the source's own (the blend band's feathering and
	// shading may tint it a little).
	armKeepTol = 24
	// armLayerMin is the garment layer's alpha (0..255) from which a pixel
	// counts as under the new garment.
	armLayerMin = 64
)

// ArmPainted measures how much of the subject's arms an edit painted with
// neither the source's pixels nor the new garment: over the band (within
// armBandFrac of each bone's length) round every shoulder-to-elbow and
// elbow-to-wrist bone whose two joints the pose model sees in orig,
// inside the subject's region (255 on; nil: the whole frame), the share
// of pixels that out shows changed by more than armKeepTol in a channel
// while the garment layer (alpha, in orig's coordinates: its Rect places
// it in the frame, pixels outside it count as not under the garment; nil:
// no garment) is below armLayerMin there. Those pixels were synthesized
// by a fill: the classical path cannot draw a bare arm where a longer
// sleeve was, and its fill is a blurred band with the hand floating at its
// end. out has orig's size; another size counts as fully painted.
func ArmPainted(ctx context.Context, p perception.Perception, orig, out image.Image, layer, region *image.Gray) (pipelines.Check, error) {
	o, e, pose, err := posed(ctx, p, orig, out)
	if err != nil || pose == nil {
		return pipelines.MaxCheck(NameArmPainted, 1, MaxArmPainted), err
	}
	return pipelines.MaxCheck(NameArmPainted, armPainted(o, e, pose, layer, region), MaxArmPainted), nil
}

// armPainted is ArmPainted's share on o and e (one size) with the pose
// seen in o (0 when the band has fewer than armMinPixels pixels).
func armPainted(o, e *image.RGBA, pose *perception.Pose, layer, region *image.Gray) float64 {
	w := o.Rect.Dx()
	band := armBand(pose, w, o.Rect.Dy(), region)
	n, painted := 0, 0
	for i, v := range band.Pix {
		if v == 0 {
			continue
		}
		n++
		x, y := i%w, i/w
		if near(o.Pix[y*o.Stride+4*x:], e.Pix[y*e.Stride+4*x:], armKeepTol) {
			continue
		}
		if layer != nil && layer.GrayAt(x, y).Y >= armLayerMin {
			continue
		}
		painted++
	}
	if n < armMinPixels {
		return 0
	}
	return round4(float64(painted) / float64(n))
}

// armBones are the arm bones ArmPainted measures round.
var armBones = [][2]int{
	{perception.KpLeftShoulder, perception.KpLeftElbow}, {perception.KpLeftElbow, perception.KpLeftWrist},
	{perception.KpRightShoulder, perception.KpRightElbow}, {perception.KpRightElbow, perception.KpRightWrist},
}

// armBand marks (255) the pixels of a w×h frame inside region (nil: all)
// within armBandFrac of its length of each seen arm bone.
func armBand(pose *perception.Pose, w, h int, region *image.Gray) *image.Gray {
	m := image.NewGray(image.Rect(0, 0, w, h))
	for _, b := range armBones {
		a, c := pose.Keypoints[b[0]], pose.Keypoints[b[1]]
		if a.Visibility < armMinVisibility || c.Visibility < armMinVisibility {
			continue
		}
		dx, dy := c.X-a.X, c.Y-a.Y
		l2 := dx*dx + dy*dy
		if l2 < 4 {
			continue
		}
		r := armBandFrac * math.Sqrt(l2)
		x0, x1 := max(0, int(math.Min(a.X, c.X)-r)), min(w-1, int(math.Max(a.X, c.X)+r))
		y0, y1 := max(0, int(math.Min(a.Y, c.Y)-r)), min(h-1, int(math.Max(a.Y, c.Y)+r))
		for y := y0; y <= y1; y++ {
			for x := x0; x <= x1; x++ {
				px, py := float64(x)-a.X, float64(y)-a.Y
				t := math.Min(math.Max((px*dx+py*dy)/l2, 0), 1)
				if math.Hypot(px-t*dx, py-t*dy) > r || (region != nil && region.Pix[y*region.Stride+x] == 0) {
					continue
				}
				m.Pix[y*w+x] = 255
			}
		}
	}
	return m
}
