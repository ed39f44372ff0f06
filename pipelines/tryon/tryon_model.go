package tryon

import (
	"context"
	"image"
	"image/draw"

	"fashiond/perception"
	"fashiond/pipelines"
	"fashiond/pipelines/capability/garment"
	"fashiond/pipelines/capability/generative"
	"fashiond/pipelines/capability/transfer"
)

// tryOnMask is the region the try-on model repaints on the subject's crop
// (transfer.TryOnRegion: the transfer's garment region, the subject's face
// box cut out).
func (s *subject) tryOnMask(info *transfer.TransferInfo) *image.Gray {
	return info.TryOnRegion(s.a.SubjectPerson().Face, s.crop.Min)
}

// tryOn puts the garment photo on the subject with the try-on model over
// the region of tryOnMask, places the result back and measures it with the
// same self-checks as the classical result.
func (s *subject) tryOn(ctx context.Context, p perception.Perception, ton generative.TryOner, garmentImg image.Image,
	g *garment.Garment, info *transfer.TransferInfo, o transfer.Options) (pipelines.Output, error) {
	var progress func(done, total int)
	if o.Progress != nil {
		progress = func(done, total int) { o.Progress("generative", float64(done)/float64(max(total, 1))) }
	}
	out, gi, err := ton.TryOn(ctx, subImage(s.img, s.crop), garmentImg, s.tryOnMask(info), generative.TryOnOptions{
		Seed: uint64(o.Seed + int64(o.Variation)), Steps: transfer.TryOnSteps(o.Accuracy), Progress: progress,
		Kind: info.Kind, FlatLay: !g.Worn, GarmentMask: g.Mask,
	})
	if err != nil {
		return pipelines.Output{}, err
	}
	rgba := image.NewRGBA(out.Rect)
	draw.Draw(rgba, rgba.Rect, out, out.Rect.Min, draw.Src)
	ti := *info
	ti.Method = "try-on(" + gi.Model + ")"
	ti.Notes = []string{gi.TryOnNote(), transfer.TryOnRegionNote}
	// The model may draw anywhere in its region (arms included):
	// arm_painted counts only what changed outside it.
	ti.Layer = s.tryOnMask(info)
	gen, err := s.measure(ctx, p, rgba, &ti)
	if err != nil {
		return pipelines.Output{}, err
	}
	gen.Path = "generative"
	return gen, nil
}
