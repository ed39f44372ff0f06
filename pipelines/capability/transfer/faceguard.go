package transfer

import (
	"context"
	"fmt"
	"image"
	"math"

	"fashiond/perception"
	"fashiond/pipelines"
)

// The face guard: the pose model's shoulders are checked against the
// subject's detected face before a garment is placed, and the face, and the
// neck's skin and hair above the shoulders, are kept in front of the
// garment. On head-and-shoulders and three-quarter photos BlazePose puts the
// shoulders on the face (at the eyes of a portrait cut at the collar, at
// the chin of a turned head) or on top of each other (a side view), and the
// garment then lands on the face; the face box is measured by the face
// detector, which holds on such photos.
const (
	// faceMinScore is the detector score from which a face counts.
	faceMinScore = 0.6
	// minNeckDrop: the shoulder joints' midpoint lies at least this many
	// face heights below the chin (the face box's bottom edge); on the
	// project's frontal photos it lies 0.6 to 0.75 below. Higher shoulders
	// are moved down to it.
	minNeckDrop = 0.3
	// onFaceDrop: shoulders less than this many face heights below the
	// chin are on the face (the pose has lost the body).
	onFaceDrop = 0.1
	// minShoulderFaces: the shoulder joints are at least this many face
	// widths apart (frontal photos: 1.8 to 2.3); closer ones (a side view)
	// are spread about their midpoint to it.
	minShoulderFaces = 1.2
	// minTorsoInFrame: at least this many shoulder widths of the torso
	// must lie in the photo below the shoulder joints for a garment to be
	// placed.
	minTorsoInFrame = 0.6
	// faceKeepMargin grows the face box (share of its width and height on
	// each side) into what stays in front of the garment.
	faceKeepMargin = 0.05
	// neckHalfWidth: skin and hair above the shoulder joints' line within
	// this many shoulder widths of the neck's axis stay in front of the
	// garment (the neck hides the back of a collar).
	neckHalfWidth = 0.3
	// minShoulderPx is the smallest shoulder width (pixels) the transfer
	// works with.
	minShoulderPx = 8
)

// subjectFace is the largest face the detector finds on img with at least
// faceMinScore, or nil.
func subjectFace(ctx context.Context, p perception.Perception, img image.Image) (*perception.Face, error) {
	faces, err := p.Faces(ctx, img)
	if err != nil {
		return nil, fmt.Errorf("tryon: faces: %w", err)
	}
	var best *perception.Face
	area := 0.0
	for i, f := range faces {
		a := (f.Box[2] - f.Box[0]) * (f.Box[3] - f.Box[1])
		if f.Score >= faceMinScore && a > area {
			best, area = &faces[i], a
		}
	}
	return best, nil
}

// guardShoulders moves the image-side shoulder joints l and r (l on the
// viewer's left) where the face f says they must be: at least minNeckDrop
// face heights below the chin and minShoulderFaces face widths apart. It
// returns the downward shift of their midpoint (the pose's arms, placed as
// wrongly, move with it) and whether it moved them; a nil face leaves
// them. The joints are expected below the face, the image's y axis
// pointing down.
func guardShoulders(f *perception.Face, l, r perception.Point) (nl, nr perception.Point, drop float64, moved bool) {
	if f == nil {
		return l, r, 0, false
	}
	fw, fh := f.Box[2]-f.Box[0], f.Box[3]-f.Box[1]
	m := mid(l, r)
	half := sub(r, m)
	if minY := f.Box[3] + minNeckDrop*fh; m.Y < minY {
		drop, moved = minY-m.Y, true
		m.Y = minY
	}
	if want := minShoulderFaces * fw / 2; math.Hypot(half.X, half.Y) < want {
		dir := unit(half)
		if dir.X <= 0 { // coincident or crossed joints: spread them level
			dir = perception.Point{X: 1}
		}
		half, moved = mul(dir, want), true
	}
	return sub(m, half), add(m, half), drop, moved
}

// shouldersOnFace fails the transfer when the pose's shoulder midpoint
// lies inside the face box (or less than onFaceDrop face heights below it): the pose model has lost the body (a head
// turned aside, a side or back view, a portrait cut at the shoulders), and
// neither the torso's size nor the arms can be told from it.
func (b *body) shouldersOnFace() error {
	f := b.face
	m := mid(b.shL, b.shR)
	if f == nil || m.X < f.Box[0] || m.X > f.Box[2] || m.Y < f.Box[1] || m.Y > f.Box[3]+onFaceDrop*(f.Box[3]-f.Box[1]) {
		return nil
	}
	return pipelines.Failf("personImage: the pose model put the subject's shoulders on the face (at y %.0f, the face box ends at y %.0f): "+
		"a head turned aside, a side or back view or a portrait cut at the shoulders; the body's shape is unknown and no garment is placed; "+
		"use a photo of the person facing the camera, down to the waist", m.Y, f.Box[3])
}

// guardPose applies guardShoulders to the body's joints: the shoulders
// move, and the elbows and wrists drop with them. Shoulders on the face
// fail (shouldersOnFace), as does a torso out of the frame
// (torsoInFrame).
func (b *body) guardPose() error {
	if err := b.shouldersOnFace(); err != nil {
		return err
	}
	var drop float64
	b.shL, b.shR, drop, b.shouldersGuessed = guardShoulders(b.face, b.shL, b.shR)
	for _, j := range []*perception.Point{&b.elL, &b.elR, &b.wrL, &b.wrR} {
		j.Y += drop
	}
	b.sw = math.Max(dist(b.shL, b.shR), minShoulderPx)
	return b.torsoInFrame()
}

// torsoInFrame fails the transfer when the shoulders lie too close to the
// photo's bottom edge for a torso garment: a head-and-shoulders portrait.
func (b *body) torsoInFrame() error {
	below := float64(b.h) - mid(b.shL, b.shR).Y
	if below >= minTorsoInFrame*b.sw {
		return nil
	}
	return pipelines.Failf("personImage shows too little of the body for a garment: the shoulders lie %.0f px above the bottom edge "+
		"(at least %.1f shoulder widths, %.0f px, of torso are needed); use a photo that shows the person down to the waist at least",
		math.Max(below, 0), minTorsoInFrame, minTorsoInFrame*b.sw)
}

// keepFace adds to what stays in front of the garment (b.front, and
// b.hands, which stays in front of the sleeves too) the face box grown by
// faceKeepMargin, and the skin and hair above the shoulder joints' line
// within neckHalfWidth of the neck's axis.
func (b *body) keepFace() {
	keep := image.NewGray(image.Rect(0, 0, b.w, b.h))
	if f := b.face; f != nil {
		mx, my := faceKeepMargin*(f.Box[2]-f.Box[0]), faceKeepMargin*(f.Box[3]-f.Box[1])
		box := image.Rect(int(math.Floor(f.Box[0]-mx)), int(math.Floor(f.Box[1]-my)),
			int(math.Ceil(f.Box[2]+mx)), int(math.Ceil(f.Box[3]+my))).Intersect(keep.Rect)
		for y := box.Min.Y; y < box.Max.Y; y++ {
			for x := box.Min.X; x < box.Max.X; x++ {
				keep.Pix[y*b.w+x] = 255
			}
		}
	}
	ms := mid(b.shL, b.shR)
	par := b.parse
	for y := 0; y < b.h; y++ {
		for x := 0; x < b.w; x++ {
			i := y*b.w + x
			skin := par.Skin.Pix[i] >= 128 && par.Skin.Pix[i] >= par.Clothes.Pix[i]
			if !skin && par.Hair.Pix[i] < 128 {
				continue
			}
			d := sub(perception.Point{X: float64(x), Y: float64(y)}, ms)
			if dot(d, b.up) > 0 && math.Abs(dot(d, b.right)) < neckHalfWidth*b.sw {
				keep.Pix[i] = 255
			}
		}
	}
	for i, v := range keep.Pix {
		if v != 0 {
			b.front.Pix[i], b.hands.Pix[i] = 255, 255
		}
	}
}
