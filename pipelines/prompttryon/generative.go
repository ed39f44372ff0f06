package prompttryon

import (
	"context"
	"errors"
	"hash/fnv"
	"image"
	"image/draw"
	"math"
	"slices"

	"fashiond/pipelines"
	"fashiond/pipelines/generative"
	"fashiond/pipelines/mask"
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
	// growFrac grows the garment region by this share of the crop's
	// diagonal, so a garment can be a little wider or longer than the old.
	growFrac = 0.02
	// faceMarginFrac keeps this share of the face box's size around the
	// face out of the mask.
	faceMarginFrac = 0.15
	// legsStopFrac: a dress covers the legs down to this share of the
	// person's height below the waist (the feet stay).
	legsStopFrac = 0.85
)

// sleeveNouns add the arms; dressNouns add the legs below the waist.
var (
	sleeveNouns = []string{"jacket", "blazer", "coat", "cardigan", "sweater", "jumper", "hoodie", "sweatshirt", "parka",
		"raincoat", "trench", "puffer", "bomber", "anorak", "windbreaker", "turtleneck", "pullover", "kimono", "shacket"}
	dressNouns = []string{"dress", "gown", "sundress", "maxi", "kaftan", "robe", "jumpsuit", "boilersuit", "coveralls"}
)

// genPrompt is the inpainting prompt for a request prompt.
func genPrompt(prompt string) string { return genPromptPrefix + prompt + genPromptSuffix }

// genSeed derives a sample's seed from the prompt, so a request is
// reproducible.
func genSeed(prompt string, sample int) uint64 {
	h := fnv.New64a()
	h.Write([]byte(prompt))
	return h.Sum64() + uint64(sample)
}

// garmentMask is the region the generative stage repaints on the crop:
// the spec's garment regions, grown, plus the arms for sleeved garments
// and the legs for dresses, within the person (dilated), never the face.
func garmentMask(r *regions, spec Spec, face *image.Rectangle) *image.Gray {
	w, h := r.w, r.h
	m := image.NewGray(image.Rect(0, 0, w, h))
	for _, g := range spec.Garments {
		alpha := map[string][]float32{RegionTop: r.top.P, RegionBottom: r.bottom.P, RegionFull: r.full.P}[g.Region]
		for i, a := range alpha {
			if a >= 0.5 {
				m.Pix[i] = 255
			}
		}
		addShape(m, r, g.Noun)
	}
	grow := growFrac * math.Hypot(float64(w), float64(h))
	m = mask.Dilate(m, grow)
	person := mask.Dilate(mask.Binary(mask.FromFloat(r.person.P, w, h), 128), grow)
	for i := range m.Pix {
		m.Pix[i] &= person.Pix[i]
	}
	if face != nil {
		d := int(faceMarginFrac * float64(max(face.Dx(), face.Dy())))
		draw.Draw(m, face.Inset(-d), image.Black, image.Point{}, draw.Src)
	}
	return m
}

// addShape adds the arms (sleeved garments: person pixels between the
// shoulders' height and the waist) or the legs (dresses) to m.
func addShape(m *image.Gray, r *regions, noun string) {
	w, h := r.w, r.h
	waist := int(r.waistY)
	var y0, y1 int
	switch {
	case slices.Contains(sleeveNouns, noun):
		y0, y1 = int(r.waistY+r.upY*r.torso), waist
	case slices.Contains(dressNouns, noun):
		bottom := waist
		for y := h - 1; y > waist; y-- {
			if rowHasPerson(r, y) {
				bottom = y
				break
			}
		}
		y0, y1 = waist, waist+int(legsStopFrac*float64(bottom-waist))
	default:
		return
	}
	for y := max(0, y0); y < min(h, y1); y++ {
		for x := range w {
			if r.person.P[y*w+x] >= 0.5 {
				m.Pix[y*w+x] = 255
			}
		}
	}
}

func rowHasPerson(r *regions, y int) bool {
	return slices.ContainsFunc(r.person.P[y*r.w:(y+1)*r.w], func(v float32) bool { return v >= 0.5 })
}

// generativeDress inpaints the garment region of the crop.
func generativeDress(ctx context.Context, inp generative.Inpainter, crop *image.RGBA, r *regions, spec Spec, prompt string, face *image.Rectangle, sample int) (*image.RGBA, generative.Info, error) {
	mask := garmentMask(r, spec, face)
	out, info, err := inp.Inpaint(ctx, crop, mask, generative.Prompt{Text: genPrompt(prompt), Negative: genNegative, Seed: genSeed(prompt, sample)})
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
func (pl *Pipeline) dressSample(ctx context.Context, subj *subject, r *regions, spec Spec, prompt string, sample int) (*dressed, error) {
	var dropped string
	if pl.inp != nil {
		img, info, err := generativeDress(ctx, pl.inp, subj.cropImg, r, spec, prompt, subj.faceInCrop(), sample)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, pipelines.Transientf("prompt-tryon: %v", err)
		}
		out, checks, err := subj.confine(ctx, img)
		if err != nil {
			return nil, err
		}
		cerr := pipelines.CheckError(Name, checks)
		if cerr == nil {
			return &dressed{img: out, checks: checks, gen: &info}, nil
		}
		dropped = "the generative result was not used: " + cerr.Error() + "; the reference result below passed instead"
	}
	img, err := dress(subj.cropImg, r, spec, int64(sample))
	if err != nil {
		var re *RegionError
		if errors.As(err, &re) {
			return nil, &pipelines.Error{Msg: err.Error(), Err: err}
		}
		return nil, pipelines.Failf("prompt-tryon: %v", err)
	}
	out, checks, err := subj.confine(ctx, img)
	if err != nil {
		return nil, err
	}
	if err := pipelines.CheckError(Name, checks); err != nil {
		return nil, err
	}
	d := &dressed{img: out, checks: checks}
	if dropped != "" {
		d.notes = []string{dropped}
	}
	return d, nil
}
