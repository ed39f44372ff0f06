package modelcreate

import (
	"context"
	"image"
	"math"

	"fashiond/cv"
	"fashiond/perception"
	"fashiond/pipelines"
	"fashiond/pipelines/capability/raster"
	"fashiond/pipelines/capability/selfcheck"
	"fashiond/spec"
)

// faceLandmarks returns a saved model's five landmarks, detecting them on
// its image when the record has none.
func (pl *Pipeline) faceLandmarks(ctx context.Context, rec pipelines.SavedModel, img image.Image) ([5]perception.Point, error) {
	var l [5]perception.Point
	if len(rec.Landmarks) == 10 {
		for i := range l {
			l[i] = perception.Point{X: rec.Landmarks[2*i], Y: rec.Landmarks[2*i+1]}
		}
		return l, nil
	}
	faces, err := pl.p.Faces(ctx, img)
	if err != nil {
		return l, jobErr(ctx, err)
	}
	if len(faces) == 0 {
		return l, pipelines.Failf("model-create: saved model %q (faceModelId) has no face found", rec.ID)
	}
	b := img.Bounds()
	for i, p := range faces[0].Landmarks {
		l[i] = perception.Point{X: p.X + float64(b.Min.X), Y: p.Y + float64(b.Min.Y)}
	}
	return l, nil
}

// FaceMask is the inner-face ellipse (eyebrows to chin, cheek to cheek) for
// five landmarks (right eye, left eye, nose, right and left mouth corner)
// on a w x h canvas.
func FaceMask(l [5]perception.Point, w, h int) *image.Gray {
	eye := perception.Point{X: (l[0].X + l[1].X) / 2, Y: (l[0].Y + l[1].Y) / 2}
	mouth := perception.Point{X: (l[3].X + l[4].X) / 2, Y: (l[3].Y + l[4].Y) / 2}
	d := math.Hypot(l[1].X-l[0].X, l[1].Y-l[0].Y)
	ax, ay := (l[1].X-l[0].X)/d, (l[1].Y-l[0].Y)/d // along the eye line
	// "down" is perpendicular to the eye line, towards the mouth.
	dx, dy := -ay, ax
	if (mouth.X-eye.X)*dx+(mouth.Y-eye.Y)*dy < 0 {
		dx, dy = -dx, -dy
	}
	top := perception.Point{X: eye.X - 0.5*d*dx, Y: eye.Y - 0.5*d*dy}
	bottom := perception.Point{X: mouth.X + 0.45*d*dx, Y: mouth.Y + 0.45*d*dy}
	c := perception.Point{X: (top.X + bottom.X) / 2, Y: (top.Y + bottom.Y) / 2}
	ry := math.Hypot(bottom.X-top.X, bottom.Y-top.Y) / 2
	rx := 0.9 * d
	m := image.NewGray(image.Rect(0, 0, w, h))
	r := int(math.Ceil(math.Max(rx, ry))) + 1
	for y := max(0, int(c.Y)-r); y < min(h, int(c.Y)+r+1); y++ {
		for x := max(0, int(c.X)-r); x < min(w, int(c.X)+r+1); x++ {
			px, py := float64(x)-c.X, float64(y)-c.Y
			u := (px*ax + py*ay) / rx
			v := (px*dx + py*dy) / ry
			if u*u+v*v <= 1 {
				m.Pix[y*m.Stride+x] = 255
			}
		}
	}
	return m
}

// transferFace puts the saved face model's face onto the face in dst:
// the face image is aligned by a similarity fitted to the five landmarks
// (shrunk first when the alignment shrinks it, prescale) and
// Poisson-blended (cv.SeamlessClone), which keeps the face's gradients and
// takes its colours from dst along the seam. It returns the result and the
// inner-face mask the face was blended in. No colour matching precedes
// the blend: a mean shift is lost in it (only gradients are kept), and
// scaling the face model's spread to the base face's (up to 1.6 times: a
// webcam face put on the studio man) amplified its noise and the glare of
// its glasses into a white patch over one eye that every face check
// passed (looked at).
func (pl *Pipeline) transferFace(ctx context.Context, dst *image.RGBA, rec pipelines.SavedModel, fimg image.Image) (*image.RGBA, *image.Gray, error) {
	sl, err := pl.faceLandmarks(ctx, rec, fimg)
	if err != nil {
		return nil, nil, err
	}
	faces, err := pl.p.Faces(ctx, dst)
	if err != nil {
		return nil, nil, jobErr(ctx, err)
	}
	if len(faces) == 0 {
		return nil, nil, pipelines.Failf("model-create: the base model shows no face to transfer the face of %q onto", rec.ID)
	}
	dl := faces[0].Landmarks
	var a, b [][2]float64
	for i := 0; i < 5; i++ {
		a = append(a, [2]float64{sl[i].X, sl[i].Y})
		b = append(b, [2]float64{dl[i].X, dl[i].Y})
	}
	m, err := cv.SimilarityFromPointsF(a, b)
	if err != nil {
		return nil, nil, pipelines.Failf("model-create: the face of %q cannot be aligned: %v", rec.ID, err)
	}
	w, h := dst.Rect.Dx(), dst.Rect.Dy()
	fb := fimg.Bounds()
	if fb.Min != (image.Point{}) {
		m[2] -= m[0]*float64(fb.Min.X) + m[1]*float64(fb.Min.Y)
		m[5] -= m[3]*float64(fb.Min.X) + m[4]*float64(fb.Min.Y)
	}
	small := prescale(fimg, &m)
	warped := cv.WarpAffine(small, m, w, h)
	mask := FaceMask(dl, w, h)
	// Only where the warped face has pixels.
	n := 0
	for i := range mask.Pix {
		if warped.Pix[i*4+3] < 255 {
			mask.Pix[i] = 0
		}
		if mask.Pix[i] != 0 {
			n++
		}
	}
	if n < 64 {
		return nil, nil, pipelines.Failf("model-create: the face of %q is too small to transfer", rec.ID)
	}
	out, err := cv.SeamlessClone(dst, warped, mask)
	if err != nil {
		return nil, nil, pipelines.Failf("model-create: face blending failed: %v", err)
	}
	return out, mask, nil
}

// minWarpScale is the smallest scale of the face alignment that the
// bilinear warp applies alone: below it the face model's image is first
// shrunk to the alignment's scale with a filtering resampler. A bilinear
// warp that shrinks reads every k-th pixel and aliases: a face model
// uploaded at 1k (a face some 300 pixels wide) put on a preset's face of
// 55 (the office man) came out as speckled noise over the beard and
// lenses; shrunk first, it comes out smooth.
const minWarpScale = 0.9

// prescale returns img (its origin at 0) shrunk to the scale of the
// similarity m when m shrinks it below minWarpScale, rewriting m to map
// the shrunk image; else img and m unchanged.
func prescale(img image.Image, m *[6]float64) image.Image {
	s := math.Hypot(m[0], m[3])
	if s >= minWarpScale {
		return img
	}
	b := img.Bounds()
	sw, sh := max(1, int(math.Round(float64(b.Dx())*s))), max(1, int(math.Round(float64(b.Dy())*s)))
	kx, ky := float64(b.Dx())/float64(sw), float64(b.Dy())/float64(sh)
	m[0], m[3] = m[0]*kx, m[3]*kx
	m[1], m[4] = m[1]*ky, m[4]*ky
	return raster.Resize(img, sw, sh)
}

// faceIntegrity measures the transferred face on the sample (where the
// base model's face want was), before the img2img border pass (which
// redraws the ring around the face and is judged by its own checks) against the face model's own face
// (selfcheck.FaceIntegrity: texture, landmark geometry, symmetry), adds
// the checks to the sample's and fails the job when one fails.
func (pl *Pipeline) faceIntegrity(ctx context.Context, s sampleSpec, st *sampleState, want perception.Face) error {
	src, err := pl.faceLandmarks(ctx, s.faceRec, s.faceImg)
	if err != nil {
		return err
	}
	checks, err := selfcheck.FaceIntegrity(ctx, pl.p, st.img, want, s.faceImg, src)
	if err != nil {
		return jobErr(ctx, err)
	}
	st.checks = append(st.checks, checks...)
	return pipelines.CheckError(spec.ModelModelCreate, checks)
}
