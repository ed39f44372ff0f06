package prompttryon

import (
	"context"
	"errors"
	"image"
	"image/draw"

	"fashiond/pipelines"
	"fashiond/pipelines/capability/generative"
	"fashiond/pipelines/capability/recolour"
	"fashiond/pipelines/capability/selfcheck"
)

// The generative stage: with an installed inpainting model, the subject's
// garment region (grown to the silhouette the requested garment needs) is
// inpainted from a prompt built from the request; everything outside the
// mask (face, hair, hands beyond it, background, other people) is the
// source's own pixels.
const (
	genPromptPrefix = "a fashion photo of a person wearing "
	genPromptSuffix = ", realistic fabric, natural drape and folds, matching the photo's lighting"
	genNegative     = "deformed, extra limbs, extra fingers, blurry, text, watermark, cartoon"
)

// genPrompt is the inpainting prompt for a request prompt.
func genPrompt(prompt string) string { return genPromptPrefix + prompt + genPromptSuffix }

// generativeDress inpaints the garment region of the crop.
func generativeDress(ctx context.Context, inp generative.Inpainter, crop *image.RGBA, r *recolour.Regions, spec recolour.Spec, prompt string, face *image.Rectangle, sample int, step func(done, total int)) (*image.RGBA, generative.Info, error) {
	if err := r.Check(spec); err != nil {
		return nil, generative.Info{}, err
	}
	mask := recolour.GarmentMask(r, spec, face)
	out, info, err := inp.Inpaint(ctx, crop, mask, generative.Prompt{Text: genPrompt(prompt), Negative: genNegative, Seed: pipelines.Seed(prompt) + uint64(sample), Progress: step})
	if err != nil {
		return nil, info, err
	}
	res := image.NewRGBA(crop.Rect)
	draw.Draw(res, res.Rect, out, out.Rect.Min, draw.Src)
	return res, info, nil
}

// dressed is one sample dressed and confined to the subject.
type dressed struct {
	img    *image.RGBA
	checks []pipelines.Check
	gen    *generative.Info // nil: the reference path made it
	notes  []string
}

// dressSample dresses one sample: generatively when an inpainter is
// installed and its result passes the self-checks, else by the reference
// recolouring (saying why when the generative result was dropped).
func (pl *Pipeline) dressSample(ctx context.Context, subj *subject, r *recolour.Regions, spec recolour.Spec, prompt string, sample int, step func(done, total int)) (*dressed, error) {
	var dropped string
	if pl.inp != nil {
		img, info, err := generativeDress(ctx, pl.inp, subj.cropImg, r, spec, prompt, subj.faceInCrop(), sample, step)
		var re *recolour.RegionError
		switch {
		case errors.As(err, &re):
			return nil, &pipelines.Error{Msg: err.Error(), Err: err}
		case err != nil && ctx.Err() != nil:
			return nil, ctx.Err()
		case err != nil:
			return nil, pipelines.Transientf("prompt-tryon: %v", err)
		}
		out, checks, err := subj.confine(ctx, img)
		if err != nil {
			return nil, err
		}
		checks = append(checks, selfcheck.HairChange(subj.cropImg, img, r.HairMask()))
		cerr := pipelines.CheckError(Name, checks)
		if cerr == nil {
			return &dressed{img: out, checks: checks, gen: &info}, nil
		}
		dropped = "the generative result was not used: " + cerr.Error() + "; the reference result below passed instead"
	}
	img, err := recolour.DressRegions(subj.cropImg, r, spec, int64(sample))
	if err != nil {
		var re *recolour.RegionError
		if errors.As(err, &re) {
			return nil, &pipelines.Error{Msg: err.Error(), Err: err}
		}
		return nil, pipelines.Failf("prompt-tryon: %v", err)
	}
	out, checks, err := subj.confine(ctx, img)
	if err != nil {
		return nil, err
	}
	checks = append(checks, selfcheck.HairChange(subj.cropImg, img, r.HairMask()))
	if err := pipelines.CheckError(Name, checks); err != nil {
		return nil, err
	}
	d := &dressed{img: out, checks: checks}
	if dropped != "" {
		d.notes = []string{dropped}
	}
	return d, nil
}
