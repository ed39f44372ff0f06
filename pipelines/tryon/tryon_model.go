package tryon

import (
	"context"
	"image"
	"image/draw"
	"math"

	"fashiond/models"
	"fashiond/pipelines"
	"fashiond/pipelines/generative"
	"fashiond/pipelines/mask"
	"fashiond/pipelines/transfer"
)

// With an installed try-on model (CatVTON layout) the garment is put on by
// the model instead of the warp: accuracy chooses its steps (CatVTON's own
// default is 50), the guidance is the model's fashiond.json default.
var tryOnSteps = map[string]int{
	transfer.AccuracyStandard: 20,
	transfer.AccuracyHigh:     30,
	transfer.AccuracyHyper:    50,
}

const (
	// tryOnGrowPx grows the garment region so the model repaints its seams.
	tryOnGrowPx = 2
	// tryOnFaceMargin widens the subject's face box (share of its size on
	// each side) before it is cut out of the region.
	tryOnFaceMargin = 0.15
	// tryOnNoteRegion says what the model repainted and what it kept.
	tryOnNoteRegion = "the model repainted the subject's garment region as the classical transfer computes it " +
		"(the old garment it removes joined with where it lays the new one, behind arms, hands and hair; grown by 2 px, the face box cut out); " +
		"face, hands, hair, the other people and the background are the photo's own"
)

// tryOnMask is the region the try-on model repaints on the subject's crop:
// the old garment region the classical transfer removed joined with the
// new garment's layer (which lies behind arms, hands, hair and face), grown
// by tryOnGrowPx, minus the subject's face box with a margin.
func (s *subject) tryOnMask(info *transfer.TransferInfo) *image.Gray {
	lay := mask.Binary(info.Layer, 128)
	m := image.NewGray(lay.Rect)
	copy(m.Pix, lay.Pix)
	if info.Replaced != nil && info.Replaced.Rect.Size() == m.Rect.Size() {
		rep := mask.Binary(info.Replaced, 128)
		for i, v := range rep.Pix {
			m.Pix[i] = max(m.Pix[i], v)
		}
	}
	m = mask.Dilate(m, tryOnGrowPx)
	if f := s.a.SubjectPerson().Face; f != nil {
		bw, bh := f.Box[2]-f.Box[0], f.Box[3]-f.Box[1]
		face := image.Rect(
			int(math.Floor(f.Box[0]-tryOnFaceMargin*bw)), int(math.Floor(f.Box[1]-tryOnFaceMargin*bh)),
			int(math.Ceil(f.Box[2]+tryOnFaceMargin*bw)), int(math.Ceil(f.Box[3]+tryOnFaceMargin*bh)),
		).Sub(s.crop.Min).Intersect(m.Rect)
		draw.Draw(m, face, image.Black, image.Point{}, draw.Src)
	}
	return m
}

// tryOn puts the garment photo on the subject with the try-on model over
// the region of tryOnMask, places the result back and measures it with the
// same self-checks as the classical result.
func (s *subject) tryOn(ctx context.Context, p models.Perception, ton generative.TryOner, garmentImg image.Image,
	info *transfer.TransferInfo, o transfer.Options) (pipelines.Output, error) {
	var progress func(done, total int)
	if o.Progress != nil {
		progress = func(done, total int) { o.Progress("generative", float64(done)/float64(max(total, 1))) }
	}
	out, gi, err := ton.TryOn(ctx, subImage(s.img, s.crop), garmentImg, s.tryOnMask(info), generative.TryOnOptions{
		Seed: uint64(o.Seed + int64(o.Variation)), Steps: tryOnSteps[o.Accuracy], Progress: progress,
	})
	if err != nil {
		return pipelines.Output{}, err
	}
	rgba := image.NewRGBA(out.Rect)
	draw.Draw(rgba, rgba.Rect, out, out.Rect.Min, draw.Src)
	ti := *info
	ti.Method = "try-on(" + gi.Model + ")"
	ti.Notes = []string{gi.TryOnNote(), tryOnNoteRegion}
	gen, err := s.measure(ctx, p, rgba, &ti)
	if err != nil {
		return pipelines.Output{}, err
	}
	gen.Path = "generative"
	return gen, nil
}
