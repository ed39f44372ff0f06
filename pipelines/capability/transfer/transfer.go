package transfer

import (
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"math/rand/v2"

	"fashiond/perception"
	"fashiond/pipelines"
	"fashiond/pipelines/capability/garment"
	"fashiond/pipelines/capability/mask"
	"fashiond/pipelines/capability/raster"
)

// Accuracy levels.
const (
	AccuracyStandard = "standard"
	AccuracyHigh     = "high"
	AccuracyHyper    = "hyper"
)

// Options tune one transfer.
type Options struct {
	// Accuracy: "standard" (affine torso, straight sleeves and legs), "high"
	// (thin-plate spline torso on 12 landmarks, sleeves and legs bent at the
	// elbow and knee) or "hyper" (high at 2x2 supersampling plus shading
	// transfer from the original clothes and edge refinement). "" = standard.
	Accuracy string
	// Variation 0 is the neutral fit; 1, 2, 3 draw fit and drape changes
	// (width, length, sleeve length, hem drape) from Seed.
	Variation int
	Seed      int64
	// Progress, when set, receives the stage and the fraction of this
	// transfer done.
	Progress func(stage string, fraction float64)
}

// TransferInfo describes what a transfer did.
type TransferInfo struct {
	Kind   string // garment kind placed
	Method string // e.g. "affine-warp", "tps-warp", "tps-warp-hires+shading+edge-refine"
	Notes  []string
	// Coverage is the fraction of the old garment region the new garment
	// covers; the rest was filled (inpainted).
	Coverage float64
	// Targets are the body positions the garment landmarks were placed at.
	Targets map[string]perception.Point
	// Layer is the composited garment's alpha at the output size.
	Layer *image.Gray
	// Replaced is the old garment region that was removed.
	Replaced *image.Gray
	// PersonMask is the person in the output (the person model's mask
	// joined with the parsing's skin, clothes and hair next to it and the
	// new garment).
	PersonMask *image.Gray
}

// fit holds the variation parameters.
type fit struct {
	width, length, sleeve, drape float64
}

func fitFor(o Options) fit {
	if o.Variation <= 0 {
		return fit{1, 1, 1, 0}
	}
	r := rand.New(rand.NewPCG(uint64(o.Seed), uint64(o.Variation)*0x9e3779b97f4a7c15))
	sgn := func() float64 {
		if r.IntN(2) == 0 {
			return -1
		}
		return 1
	}
	// Each variation moves every parameter by a noticeable amount.
	return fit{
		width:  1 + sgn()*(0.04+0.05*r.Float64()),
		length: 1 + sgn()*(0.04+0.06*r.Float64()),
		sleeve: 1 + sgn()*(0.08+0.12*r.Float64()),
		drape:  sgn() * (0.03 + 0.04*r.Float64()),
	}
}

// part is one warped garment piece.
type part struct {
	name  string
	lay   *layer
	front bool // drawn over arms (sleeves)
	// allow limits where the part may be drawn (nil: anywhere).
	allow *image.Gray
}

// Transfer puts garment g on the person in img and returns the result at
// the person image's size. A person that cannot be found is a
// *pipelines.Error saying so.
func Transfer(ctx context.Context, p perception.Perception, person image.Image, g *garment.Garment, o Options) (*image.RGBA, *TransferInfo, error) {
	prog := func(stage string, f float64) {
		if o.Progress != nil {
			o.Progress(stage, f)
		}
	}
	if g == nil || g.Cutout == nil || len(g.Landmarks) == 0 {
		return nil, nil, fmt.Errorf("tryon: no analysed garment")
	}
	acc := o.Accuracy
	switch acc {
	case "":
		acc = AccuracyStandard
	case AccuracyStandard, AccuracyHigh, AccuracyHyper:
	default:
		return nil, nil, fmt.Errorf("tryon: unknown accuracy %q (want standard, high or hyper)", o.Accuracy)
	}
	img := raster.CopyRGBA(person)
	prog("person", 0.05)
	b, err := analyzePerson(ctx, p, img)
	if err != nil {
		return nil, nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	prog("warp", 0.4)
	cut := decontaminate(g.Cutout)
	f := fitFor(o)
	info := &TransferInfo{Kind: g.Kind, Targets: map[string]perception.Point{}}
	var parts []part
	switch g.Kind {
	case garment.KindBottom:
		b.frontOfBottoms()
		b.lower = b.growLike(b.lower, b.legs, b.upper)
		parts, err = placeBottom(b, g, cut, acc, f, info)
	default:
		parts, err = placeTop(b, g, cut, acc, f, info)
	}
	if err != nil {
		return nil, nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	prog("composite", 0.75)
	// Full-length trousers replace the old trousers entirely: what the warp
	// leaves of them is recoloured to the garment (keeping their folds)
	// rather than inpainted from the surroundings.
	var recolour *color.RGBA
	if g.Kind == garment.KindBottom && g.Trousers {
		recolour = &g.Dominant
	}
	out, err := composite(b, g.Kind, parts, acc, info, recolour)
	if err != nil {
		return nil, nil, err
	}
	// A garment that ends up (almost) nowhere visible is a failure, not a
	// result: e.g. trousers on an upper-body photo.
	if n := mask.Count(info.Layer); n < b.w*b.h/200 {
		where := "the torso"
		if g.Kind == garment.KindBottom {
			where = "the legs"
		}
		return nil, nil, pipelines.Failf("the %s garment could not be placed: %s of the person in personImage are not visible enough (%d garment pixels)", g.Kind, where, n)
	}
	switch acc {
	case AccuracyStandard:
		info.Method = "affine-warp+lighting"
	case AccuracyHigh:
		info.Method = "tps-warp+lighting"
	case AccuracyHyper:
		info.Method = "tps-warp-hires+shading+edge-refine"
	}
	info.Notes = []string{
		"classical warp of the garment photo onto the body: parts of the garment hidden in the photo (back, inside of sleeves) are not hallucinated",
		"fit, drape and folds come from geometry, not from cloth simulation; the garment keeps the flat-lay's own lighting" + map[bool]string{true: " modulated by the original clothes' folds", false: ""}[acc == AccuracyHyper],
		"where the old garment is not covered by the new one it is filled by inpainting (OpenCV Telea), which cannot recreate skin or background detail",
	}
	prog("done", 1)
	return out, info, nil
}

// decontaminate replaces the colour of the garment's edge pixels (where
// the flat-lay's background bleeds in) with the colour of the nearest
// interior pixel.
func decontaminate(c *image.NRGBA) *image.NRGBA {
	w, h := c.Rect.Dx(), c.Rect.Dy()
	out := image.NewNRGBA(c.Rect)
	copy(out.Pix, c.Pix)
	interior := image.NewGray(image.Rect(0, 0, w, h))
	for i := 0; i < w*h; i++ {
		if c.Pix[i*4+3] == 255 {
			interior.Pix[i] = 255
		}
	}
	interior = mask.Erode(interior, 2)
	band := 4
	// Propagate interior colours outward ring by ring.
	known := interior.Pix
	for range band {
		next := append([]uint8(nil), known...)
		for y := 1; y < h-1; y++ {
			for x := 1; x < w-1; x++ {
				i := y*w + x
				if known[i] != 0 || c.Pix[i*4+3] == 0 {
					continue
				}
				var r, g, bl, n int
				for _, j := range []int{i - 1, i + 1, i - w, i + w} {
					if known[j] != 0 {
						r += int(out.Pix[j*4])
						g += int(out.Pix[j*4+1])
						bl += int(out.Pix[j*4+2])
						n++
					}
				}
				if n > 0 {
					out.Pix[i*4], out.Pix[i*4+1], out.Pix[i*4+2] = uint8(r/n), uint8(g/n), uint8(bl/n)
					next[i] = 255
				}
			}
		}
		known = next
	}
	return out
}

func workParams(acc string) (step, ss int) {
	switch acc {
	case AccuracyHyper:
		return 2, 2
	case AccuracyHigh:
		return 3, 1
	}
	return 4, 1
}

// AnalyzeGarment runs garment.Analyze and turns "no garment" into a job
// error naming the input.
func AnalyzeGarment(ctx context.Context, p perception.Perception, img image.Image) (*garment.Garment, error) {
	g, err := garment.Analyze(ctx, p, img)
	if errors.Is(err, garment.ErrNoGarment) {
		return nil, pipelines.Failf("garmentImage: %v", err)
	}
	return g, err
}
