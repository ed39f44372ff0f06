package selfcheck

import (
	"image"
	"math"

	"fashiond/perception"
	"fashiond/pipelines"
	"fashiond/pipelines/capability/raster"
)

// NameHandLeftBehind is the check of a moved hand still showing where it
// was.
const NameHandLeftBehind = "hand_left_behind"

const (
	// MaxHandLeftBehind is the largest share of a moved hand's old place
	// (see handLeftBehind) that the output still shows as in the source.
	// Measured on pose-control, classical path, on the shared photos
	// (every output looked at): "arms crossed" and "t-pose" left
	// fashn_model's hand on his knee (0.4573) and fashn_garment's hands
	// at the hem (0.1712) beside the re-posed arms, a third and fourth
	// hand, while every other check passed; outputs whose arms did not
	// move ("looking left") read 0. No shared photo gives a clean
	// classical re-pose with moved arms to measure a whole output on;
	// the limit sits well under the smaller leftover.
	MaxHandLeftBehind = 0.1
	// handMovedFrac is how far, as a fraction of the forearm's length, a
	// wrist must move for its old place to be measured.
	handMovedFrac = 0.75
	// handCentreFrac places a hand's centre beyond the wrist, along the
	// forearm, as a fraction of the forearm's length.
	handCentreFrac = 0.25
	// handRadiusFrac is a hand's radius as a fraction of the forearm's
	// length.
	handRadiusFrac = 0.3
	// handSameTol is the per-channel difference (0..255) under which an
	// output pixel is the source's own.
	handSameTol = 12
	// handMinOld is the fewest pixels of a hand's old place the check
	// reads; with fewer (the new place covers the old) the hand counts 0.
	handMinOld = 40
)

// HandLeftBehind measures, for every forearm bone (elbow to wrist) the
// pose moved by more than handMovedFrac of its length, the hand's old
// place: the source person's pixels (was) within handRadiusFrac of the
// forearm's length around a point handCentreFrac beyond the old wrist,
// away from the new hand's place; the share of them that out still shows
// as the source does (every channel within handSameTol) is the old hand
// left in the picture beside the new one. The worst hand is the value.
// src, out, was share one size.
func HandLeftBehind(src, out image.Image, was *image.Gray, forearms []Bone) pipelines.Check {
	s, o := raster.RGBA(src), raster.RGBA(out)
	worst := 0.0
	if s.Rect.Size() == o.Rect.Size() && was.Rect.Size() == s.Rect.Size() {
		for _, b := range forearms {
			worst = math.Max(worst, handLeftBehind(s, o, was, b))
		}
	}
	return pipelines.MaxCheck(NameHandLeftBehind, round4(worst), MaxHandLeftBehind)
}

// handLeftBehind is one forearm's share (0 when it did not move far
// enough or its old place is too small to read).
func handLeftBehind(s, o *image.RGBA, was *image.Gray, b Bone) float64 {
	length := dist(b.Src[0], b.Src[1])
	if length < 1 || dist(b.Src[1], b.Out[1]) < handMovedFrac*length {
		return 0
	}
	oldC, newC := handCentre(b.Src), handCentre(b.Out)
	r := handRadiusFrac * length
	var n, same int
	for y := int(oldC.Y - r); y <= int(oldC.Y+r); y++ {
		for x := int(oldC.X - r); x <= int(oldC.X+r); x++ {
			p := perception.Point{X: float64(x), Y: float64(y)}
			if !(image.Point{X: x, Y: y}).In(s.Rect) || dist(p, oldC) > r || dist(p, newC) <= r || was.GrayAt(x, y).Y < 128 {
				continue
			}
			n++
			if samePixel(s, o, x, y) {
				same++
			}
		}
	}
	if n < handMinOld {
		return 0
	}
	return float64(same) / float64(n)
}

// handCentre is a point handCentreFrac of the forearm's length beyond the
// wrist (bone: elbow, wrist).
func handCentre(bone [2]perception.Point) perception.Point {
	dx, dy := bone[1].X-bone[0].X, bone[1].Y-bone[0].Y
	return perception.Point{X: bone[1].X + handCentreFrac*dx, Y: bone[1].Y + handCentreFrac*dy}
}

func samePixel(s, o *image.RGBA, x, y int) bool {
	i, j := s.PixOffset(x, y), o.PixOffset(x, y)
	for c := range 3 {
		d := int(s.Pix[i+c]) - int(o.Pix[j+c])
		if d < -handSameTol || d > handSameTol {
			return false
		}
	}
	return true
}

func dist(a, b perception.Point) float64 { return math.Hypot(a.X-b.X, a.Y-b.Y) }

// NameHandOutOfFrame is the check of a moved hand placed outside the
// picture.
const NameHandOutOfFrame = "hand_out_of_frame"

// HandOutOfFrame is the share of the forearms the pose moved (the wrist by
// more than handMovedFrac of the forearm's length) whose hand (see
// handCentre) the target places outside the w×h picture. Such an arm
// reaches out of the frame as a sleeve with no forearm or hand in it, and
// the limb-width check cannot read a bone it cannot see; any fails.
func HandOutOfFrame(w, h int, forearms []Bone) pipelines.Check {
	moved, out := 0, 0
	frame := image.Rect(0, 0, w, h)
	for _, b := range forearms {
		length := dist(b.Src[0], b.Src[1])
		if length < 1 || dist(b.Src[1], b.Out[1]) < handMovedFrac*length {
			continue
		}
		moved++
		c := handCentre(b.Out)
		if !(image.Point{X: int(math.Floor(c.X)), Y: int(math.Floor(c.Y))}).In(frame) {
			out++
		}
	}
	v := 0.0
	if moved > 0 {
		v = float64(out) / float64(moved)
	}
	return pipelines.MaxCheck(NameHandOutOfFrame, round4(v), 0)
}
