package selfcheck

import (
	"context"
	"fmt"
	"image"
	"math"

	"fashiond/perception"
	"fashiond/pipelines"
	"fashiond/pipelines/capability/raster"
)

// NameHandsCovered is the hands check's name.
const NameHandsCovered = "hands_covered"

const (
	// MaxHandsCovered is the largest share of the subject's visible hand
	// pixels that a garment edit may change. Measured on tryon (red tee,
	// green long-sleeve) on six shared photos and product-to-model on the
	// presets, all looked at: intact hands 0-0.26 (fashn_model: the
	// long-sleeve's cuff at the wrist 0.15, the khaki trousers under the
	// hand on his knee 0.26); the woman on the bicycle in
	// pixabay_two_women_bikes 0.50-0.62 (the garment's box over her hand
	// and the handlebar it grips).
	MaxHandsCovered = 0.35
	// handReachFrac is how far beyond the wrist a hand reaches, as a
	// fraction of the forearm's length.
	handReachFrac = 0.6
	// handMinVisibility is the pose model's visibility from which a wrist
	// and its elbow count as seen.
	handMinVisibility = 0.5
	// handMinPixels is the fewest hand pixels the check measures; with
	// fewer (hands hidden, out of frame) it reads 0.
	handMinPixels = 50
	// handChangeTol is the per-channel difference (0..255) from which a
	// hand pixel counts as changed: larger than ChangeTol, as the blend
	// band's feathering may tint a hand's edge.
	handChangeTol = 24
)

// HandsCovered measures how much of the subject's visible hands an edit
// changed: the skin pixels (skin/clothes/hair model) of the subject's
// region (region, 255 on; nil: the whole frame) lying beyond each wrist
// the pose model sees (away from the elbow, within handReachFrac of the
// forearm's length), and the share of them that out changed by more than
// handChangeTol in a channel. out has orig's size; another size counts
// as fully changed.
func HandsCovered(ctx context.Context, p perception.Perception, orig, out image.Image, region *image.Gray) (pipelines.Check, error) {
	o, e, pose, err := posed(ctx, p, orig, out)
	if err != nil || pose == nil {
		return pipelines.MaxCheck(NameHandsCovered, 1, MaxHandsCovered), err
	}
	parse, err := p.Parse(ctx, o)
	if err != nil {
		return pipelines.Check{}, fmt.Errorf("selfcheck: parse: %w", err)
	}
	hand := handPixels(pose, parse.Skin, region)
	n, changed := 0, 0
	for i, v := range hand.Pix {
		if v == 0 {
			continue
		}
		n++
		if !near(o.Pix[4*i:], e.Pix[4*i:], handChangeTol) {
			changed++
		}
	}
	if n < handMinPixels {
		return pipelines.MaxCheck(NameHandsCovered, 0, MaxHandsCovered), nil
	}
	return pipelines.MaxCheck(NameHandsCovered, round4(float64(changed)/float64(n)), MaxHandsCovered), nil
}

// handPixels marks (255) the skin pixels (skin at least 128) inside region
// beyond each seen wrist: within handReachFrac of the forearm's length of
// the wrist, on the side away from the elbow.
func handPixels(pose *perception.Pose, skin, region *image.Gray) *image.Gray {
	w, h := skin.Rect.Dx(), skin.Rect.Dy()
	m := image.NewGray(image.Rect(0, 0, w, h))
	for _, arm := range [][2]int{{perception.KpLeftElbow, perception.KpLeftWrist}, {perception.KpRightElbow, perception.KpRightWrist}} {
		el, wr := pose.Keypoints[arm[0]], pose.Keypoints[arm[1]]
		if el.Visibility < handMinVisibility || wr.Visibility < handMinVisibility {
			continue
		}
		dx, dy := wr.X-el.X, wr.Y-el.Y
		fl := math.Hypot(dx, dy)
		if fl < 2 {
			continue
		}
		r := handReachFrac * fl
		for y := max(0, int(wr.Y-r)); y < min(h, int(wr.Y+r)+1); y++ {
			for x := max(0, int(wr.X-r)); x < min(w, int(wr.X+r)+1); x++ {
				px, py := float64(x)-wr.X, float64(y)-wr.Y
				if px*px+py*py > r*r || px*dx+py*dy < 0 {
					continue
				}
				i := y*w + x
				if skin.Pix[y*skin.Stride+x] >= 128 && (region == nil || region.Pix[y*region.Stride+x] != 0) {
					m.Pix[i] = 255
				}
			}
		}
	}
	return m
}

// posed is orig and out as RGBA and the pose model's pose of orig; the
// pose is nil (and nothing is run) when the two differ in size.
func posed(ctx context.Context, p perception.Perception, orig, out image.Image) (o, e *image.RGBA, pose *perception.Pose, err error) {
	o, e = raster.RGBA(orig), raster.RGBA(out)
	if o.Rect.Size() != e.Rect.Size() {
		return o, e, nil, nil
	}
	if pose, err = p.Pose(ctx, o); err != nil {
		return nil, nil, nil, fmt.Errorf("selfcheck: pose: %w", err)
	}
	return o, e, pose, nil
}
