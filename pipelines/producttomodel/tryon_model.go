package producttomodel

import (
	"context"
	"image"

	"fashiond/models"
	"fashiond/pipelines"
	"fashiond/pipelines/body"
	"fashiond/pipelines/garment"
	"fashiond/pipelines/generative"
	"fashiond/pipelines/raster"
	"fashiond/pipelines/selfcheck"
	"fashiond/pipelines/transfer"
	"fashiond/spec"
)

// The try-on stage: with an installed try-on model (CatVTON layout) the
// product is put on the model photo (given, generated or preset) by the
// model over the garment region the classical transfer computes
// (transfer.TryOnRegion), as tryon does; the transfer's result stays the
// fallback.

// WithTryOner makes the pipeline put the product on the model photo with an
// installed try-on model instead of the classical transfer (nil keeps the
// transfer).
func (pl *Pipeline) WithTryOner(ton generative.TryOner) *Pipeline {
	pl.ton = ton
	return pl
}

// dressed is a model photo with the garment on, before framing and style.
type dressed struct {
	img    *image.RGBA
	info   *transfer.TransferInfo
	checks []pipelines.Check
	// tryOn is set when the try-on model's output was used.
	tryOn *generative.Info
	// notes replace info.Notes: the try-on model's, or the transfer's plus
	// why the try-on output was dropped.
	notes []string
}

// dress puts g on the model photo: the classical transfer, then, with an
// installed try-on model, the model over the transfer's garment region
// (the model photo's face box cut out). A try-on output that fails the
// face checks gives way to the transfer's result, and a note names the
// check; a transfer result that fails them fails the job.
func (pl *Pipeline) dress(ctx context.Context, model, product image.Image, g *garment.Garment, o transfer.Options) (*dressed, error) {
	out, info, err := transfer.Transfer(ctx, pl.p, model, g, o)
	if err != nil {
		return nil, err
	}
	face, err := pl.modelFace(ctx, model)
	if err != nil {
		return nil, err
	}
	classical := &dressed{img: out, info: info, notes: info.Notes}
	if face != nil {
		classical.checks = []pipelines.Check{selfcheck.FaceChange(model, out, *face)}
	}
	if pl.ton == nil {
		return classical, pipelines.CheckError(spec.ModelProductToModel, classical.checks)
	}
	tried, err := pl.tryOn(ctx, model, product, face, info, o)
	if err != nil {
		return nil, err
	}
	cerr := pipelines.CheckError(spec.ModelProductToModel, tried.checks)
	if cerr == nil {
		return tried, nil
	}
	if err := pipelines.CheckError(spec.ModelProductToModel, classical.checks); err != nil {
		return nil, err
	}
	classical.notes = append(classical.notes[:len(classical.notes):len(classical.notes)],
		"the try-on model's output was not used: "+cerr.Error()+"; the classical transfer was used instead")
	return classical, nil
}

// tryOn runs the try-on model over the transfer's garment region of the
// model photo and measures the result (face unchanged, face still found).
func (pl *Pipeline) tryOn(ctx context.Context, model, product image.Image, face *models.Face, info *transfer.TransferInfo, o transfer.Options) (*dressed, error) {
	var progress func(done, total int)
	if o.Progress != nil {
		progress = func(done, total int) { o.Progress("generative", float64(done)/float64(max(total, 1))) }
	}
	out, gi, err := pl.ton.TryOn(ctx, model, product, info.TryOnRegion(face, model.Bounds().Min), generative.TryOnOptions{
		Seed: uint64(o.Seed + int64(o.Variation)), Steps: transfer.TryOnSteps(o.Accuracy), Progress: progress,
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, pipelines.Transientf("product-to-model: try-on model: %v", err)
	}
	img := raster.CopyRGBA(out)
	d := &dressed{img: img, info: info, tryOn: &gi, notes: []string{gi.TryOnNote(), transfer.TryOnRegionNote}}
	if face != nil {
		found, err := selfcheck.FaceFound(ctx, pl.p, img, *face)
		if err != nil {
			return nil, err
		}
		d.checks = []pipelines.Check{selfcheck.FaceChange(model, img, *face), found}
	}
	return d, nil
}

// modelFace is the face of the model photo's subject (nil when none is
// seen: the transfer has already refused photos without a person).
func (pl *Pipeline) modelFace(ctx context.Context, model image.Image) (*models.Face, error) {
	a, err := body.Analyze(ctx, pl.p, model)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, nil
	}
	return a.SubjectPerson().Face, nil
}
