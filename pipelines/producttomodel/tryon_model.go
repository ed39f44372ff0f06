package producttomodel

import (
	"context"
	"fmt"
	"image"
	"slices"

	"fashiond/pipelines"
	"fashiond/pipelines/capability/garment"
	"fashiond/pipelines/capability/generative"
	"fashiond/pipelines/capability/selfcheck"
	"fashiond/pipelines/capability/transfer"
	"fashiond/spec"
)

// The try-on stage: with an installed try-on model (CatVTON layout) the
// product is put on the subject of the model photo (given, generated or
// preset) by the model over the garment region the classical transfer
// computes on the subject's crop (transfer.Subject.TryOnRegion), as tryon
// does; the transfer's result stays the fallback.

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

// dress puts g on the subject of the model photo: the classical transfer
// on the subject's crop, placed back confined to the subject's region
// (transfer.Subject), then, with an installed try-on model, the model over
// the transfer's garment region of the crop (the subject's face box cut
// out), placed back alike. Both are measured (changed_outside_subject,
// face_region_change, face_found); a try-on output that fails a check
// gives way to the transfer's result, and a note names the check; a
// transfer result that fails one fails the job.
func (pl *Pipeline) dress(ctx context.Context, subj *transfer.Subject, product image.Image, g *garment.Garment, o transfer.Options) (*dressed, error) {
	out, info, err := subj.Transfer(ctx, pl.p, g, o)
	if err != nil {
		return nil, err
	}
	img, checks, err := pl.place(ctx, subj, out, subj.FrameLayer(info.Layer))
	if err != nil {
		return nil, fmt.Errorf("product-to-model: %w", err)
	}
	classical := &dressed{img: img, info: info, checks: checks, notes: withNote(info.Notes, subj.Note())}
	if pl.ton == nil {
		return classical, pipelines.CheckError(spec.ModelProductToModel, classical.checks)
	}
	tried, err := pl.tryOn(ctx, subj, product, g, info, o)
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
	classical.notes = withNote(classical.notes,
		"the try-on model's output was not used: "+cerr.Error()+"; the classical transfer was used instead")
	return classical, nil
}

// tryOn runs the try-on model over the transfer's garment region of the
// subject's crop, places the result back and measures it.
func (pl *Pipeline) tryOn(ctx context.Context, subj *transfer.Subject, product image.Image, g *garment.Garment, info *transfer.TransferInfo, o transfer.Options) (*dressed, error) {
	var progress func(done, total int)
	if o.Progress != nil {
		progress = func(done, total int) { o.Progress("generative", float64(done)/float64(max(total, 1))) }
	}
	out, gi, err := pl.ton.TryOn(ctx, subj.CropImage(), product, subj.TryOnRegion(info), generative.TryOnOptions{
		Seed: uint64(o.Seed + int64(o.Variation)), Steps: transfer.TryOnSteps(o.Accuracy), Progress: progress,
		Kind: info.Kind, FlatLay: !g.Worn, GarmentMask: g.Mask,
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, pipelines.Transientf("product-to-model: try-on model: %v", err)
	}
	img, checks, err := pl.place(ctx, subj, out, subj.FrameLayer(subj.TryOnRegion(info)))
	if err != nil {
		return nil, fmt.Errorf("product-to-model: %w", err)
	}
	notes := withNote([]string{gi.TryOnNote(), transfer.TryOnRegionNote}, subj.Note())
	return &dressed{img: img, info: info, checks: checks, tryOn: &gi, notes: notes}, nil
}

// place puts an edited crop back on the subject (transfer.Subject.Place:
// changed_outside_subject, face_region_change, face_found) and adds
// hands_covered (selfcheck.HandsCovered: the garment must not cover the
// subject's hands) and arm_painted (selfcheck.ArmPainted: the arms must
// not be painted by a fill; layer, in the photo's coordinates, is where
// the edit may draw: the transfer's garment layer, the try-on region).
func (pl *Pipeline) place(ctx context.Context, subj *transfer.Subject, out image.Image, layer *image.Gray) (*image.RGBA, []pipelines.Check, error) {
	img, checks, err := subj.Place(ctx, pl.p, out)
	if err != nil {
		return nil, nil, err
	}
	hands, err := selfcheck.HandsCovered(ctx, pl.p, subj.Img, img, subj.Analysis.SubjectPerson().Region)
	if err != nil {
		return nil, nil, err
	}
	arms, err := selfcheck.ArmPainted(ctx, pl.p, subj.Img, img, layer, subj.Analysis.SubjectPerson().Region)
	if err != nil {
		return nil, nil, err
	}
	return img, append(checks, hands, arms), nil
}

// withNote is notes (never modified) with note appended when it is not
// empty.
func withNote(notes []string, note string) []string {
	if note == "" {
		return notes
	}
	return append(slices.Clip(notes), note)
}
