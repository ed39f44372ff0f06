// Package producttomodel is the reference pipeline of the "product-to-model"
// model: it puts the garment of a flat-lay or ghost-mannequin product photo
// on a model. The model is modelImageUrl when given, else presets chosen
// from the preset library by the words of customPrompt (gender, pose,
// setting words; the garment's kind restricts the framing: bottoms and
// dresses need full-body models). Different samples use different presets
// where the library has them, and a different fit of the garment when a
// preset repeats. The garment is placed by the try-on transfer
// (transfer.Transfer, "high" accuracy at 1k, "hyper" at 2k and 4k; with an
// installed try-on model, by that model over the transfer's garment region,
// the transfer staying the fallback: tryon_model.go), the photo
// is framed around the person at the requested ratio, the styleId look is
// applied (default "studio": the neutral studio presentation, i.e. neutral
// white balance, clean bright exposure and the background replaced by a
// seamless light-grey paper sweep behind the person), and the result is
// brought to the exact tier size with Perception.ToTier.
package producttomodel

import (
	"context"
	"fmt"
	"image"
	"image/draw"
	"math"
	"strings"

	"fashiond/models"
	"fashiond/pipelines"
	"fashiond/pipelines/garment"
	"fashiond/pipelines/generative"
	"fashiond/pipelines/mask"
	"fashiond/pipelines/presets"
	"fashiond/pipelines/style"
	"fashiond/pipelines/transfer"
	"fashiond/spec"
)

// DefaultStyle is the look used when styleId is omitted: the neutral studio
// presentation.
const DefaultStyle = "studio"

// Inputs are the product-to-model job inputs: the API has checked them
// against the spec, and spec.Decode applies its defaults.
type Inputs = pipelines.ProductToModelInputs

// Pipeline implements pipelines.Pipeline for product-to-model.
type Pipeline struct {
	p   models.Perception
	lib *presets.Library
	t2i generative.Generator
	ton generative.TryOner
}

// New returns the pipeline over the perception models and the preset model
// library (lib may be nil: then every job must bring modelImageUrl).
func New(p models.Perception, lib *presets.Library) *Pipeline { return &Pipeline{p: p, lib: lib} }

// Name implements pipelines.Pipeline.
func (*Pipeline) Name() string { return spec.ModelProductToModel }

// framings lists the preset framings that can show a garment kind.
func framings(kind string) []string {
	if kind == garment.KindTop {
		return []string{presets.FullBody, presets.UpperBody}
	}
	return []string{presets.FullBody}
}

type base struct {
	img  image.Image
	name string // "modelImageUrl" or "preset <id>"
}

// Run implements pipelines.Pipeline.
func (pl *Pipeline) Run(ctx context.Context, req *pipelines.Request) (*pipelines.Result, error) {
	var in Inputs
	if err := spec.Decode(spec.ModelProductToModel, req.Inputs, &in); err != nil {
		return nil, pipelines.Failf("invalid inputs: %v", err)
	}
	progress := req.Progress
	if progress == nil {
		progress = func(string, float64, string) {}
	}
	progress("load", 0.02, "")
	prod, err := req.Images.Load(ctx, "inputs.productImage", in.ProductImage)
	if err != nil {
		return nil, err
	}
	progress("garment", 0.06, "")
	g, err := transfer.AnalyzeGarment(ctx, pl.p, prod)
	if err != nil {
		return nil, err
	}
	n := in.SampleCount
	seed := seedOf(req.JobID)
	bases, gens, baseNotes, err := pl.modelBases(ctx, req, in, g, seed)
	if err != nil {
		return nil, err
	}
	acc := transfer.AccuracyHigh
	if in.Quality != "1k" {
		acc = transfer.AccuracyHyper
	}
	sid := in.StyleID
	if sid == "" {
		sid = DefaultStyle
	}
	res := &pipelines.Result{}
	seen := map[string]int{}
	for i, bs := range bases {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		detail := fmt.Sprintf("sample %d/%d", i+1, n)
		start := 0.1 + 0.9*float64(i)/float64(n)
		span := 0.9 / float64(n)
		// A repeated model gets a different fit.
		variation := seen[bs.name]
		seen[bs.name]++
		d, err := pl.dress(ctx, bs.img, prod, g, transfer.Options{
			Accuracy: acc, Variation: variation, Seed: seed + int64(i),
			Progress: func(stage string, f float64) { progress(stage, start+span*0.7*f, detail) },
		})
		if err != nil {
			return nil, err
		}
		progress("style", start+span*0.75, detail)
		framed, _ := frame(d.img, d.info.PersonMask, in.Ratio)
		styled, err := pl.style(ctx, framed, sid, seed+int64(i))
		if err != nil {
			return nil, err
		}
		progress("tier", start+span*0.85, detail)
		final, err := pl.p.ToTier(ctx, styled.Image, in.Quality, in.Ratio)
		if err != nil {
			return nil, fmt.Errorf("product-to-model: %w", err)
		}
		notes := append([]string{
			fmt.Sprintf("model: %s; look: %s (%s)", bs.name, sid, style.Describe(sid)),
		}, d.notes...)
		notes = append(notes, styled.Notes...)
		notes = append(notes, baseNotes...)
		o := pipelines.Output{
			Image:  final,
			Path:   "reference",
			Method: d.info.Method + "+style-" + sid + "+tier",
			Notes:  notes,
			Checks: append(styled.Checks, d.checks...),
		}
		if d.tryOn != nil {
			o.Path = "generative"
			o.Method = "try-on(" + d.tryOn.Model + ")+style-" + sid + "+tier"
		}
		if gi := gens[i]; gi != nil {
			o.Path = "generative"
			o.Method = "text-to-image(" + gi.Model + ")+" + o.Method
			o.Notes = append(o.Notes, gi.Note("the model photo was"))
		}
		res.Outputs = append(res.Outputs, o)
	}
	progress("done", 1, "")
	return res, nil
}

// presetBases chooses preset model photos by customPrompt's words, the
// garment's kind restricting the framing.
func (pl *Pipeline) presetBases(in Inputs, g *garment.Garment, seed int64) ([]base, error) {
	if pl.lib == nil {
		return nil, pipelines.Failf("no model image: modelImageUrl was not given and no preset model library is installed")
	}
	filter := presets.Filter{Framing: framings(g.Kind)}
	chosen := pl.lib.Choose(in.CustomPrompt, in.SampleCount, seed, filter)
	if len(chosen) == 0 {
		return nil, pipelines.Failf("no preset model fits customPrompt %q: %s; a %s garment needs a %s model; give modelImageUrl", in.CustomPrompt, pl.lib.Missing(in.CustomPrompt, filter), g.Kind, strings.Join(framings(g.Kind), " or "))
	}
	cache := map[string]image.Image{}
	bases := make([]base, len(chosen))
	for i, p := range chosen {
		img, ok := cache[p.ID]
		if !ok {
			var err error
			if img, err = pl.lib.Image(p); err != nil {
				return nil, fmt.Errorf("product-to-model: %w", err)
			}
			cache[p.ID] = img
		}
		bases[i] = base{img, "preset " + p.ID}
	}
	return bases, nil
}

// style applies the look under the backdrop rule (style.AnalyzeScene) and
// fails the job naming a failed self-check of the styled photo.
func (pl *Pipeline) style(ctx context.Context, img *image.RGBA, sid string, seed int64) (*style.Styled, error) {
	scene, err := style.AnalyzeScene(ctx, pl.p, img)
	if err == nil {
		var st *style.Styled
		if st, err = style.ApplyScene(ctx, pl.p, img, sid, seed, scene); err == nil {
			return st, pipelines.CheckError(spec.ModelProductToModel, st.Checks)
		}
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return nil, pipelines.Transientf("product-to-model: style: %v", err)
}

// frame crops img to the ratio around the person (the person mask's box,
// keeping as much of the image as the ratio allows), so that the tier's
// centre crop does not cut the person. It returns the crop and the person
// mask cropped alike.
func frame(img *image.RGBA, pm *image.Gray, ratio string) (*image.RGBA, *image.Gray) {
	a, b, err := models.ParseRatio(ratio)
	w, h := img.Rect.Dx(), img.Rect.Dy()
	if err != nil || w == 0 || h == 0 {
		return img, pm
	}
	want := float64(a) / float64(b)
	cw, ch := w, h
	if float64(w)/float64(h) > want {
		cw = int(math.Round(float64(h) * want))
	} else {
		ch = int(math.Round(float64(w) / want))
	}
	// Centre the crop on the person's box, clamped to the image.
	cx, cy := float64(w)/2, float64(h)/2
	if pm != nil {
		if bb := mask.BBox(mask.Binary(pm, 128)); !bb.Empty() {
			cx, cy = float64(bb.Min.X+bb.Max.X)/2, float64(bb.Min.Y+bb.Max.Y)/2
			// Keep the head: a person taller than the crop is framed from the top.
			if bb.Dy() > ch {
				cy = float64(bb.Min.Y) + float64(ch)/2 - 0.02*float64(ch)
			}
		}
	}
	x0 := min(max(int(math.Round(cx-float64(cw)/2)), 0), w-cw)
	y0 := min(max(int(math.Round(cy-float64(ch)/2)), 0), h-ch)
	r := image.Rect(x0, y0, x0+cw, y0+ch)
	out := image.NewRGBA(image.Rect(0, 0, cw, ch))
	draw.Draw(out, out.Rect, img, r.Min, draw.Src)
	var m *image.Gray
	if pm != nil {
		m = image.NewGray(image.Rect(0, 0, cw, ch))
		draw.Draw(m, m.Rect, pm, r.Min, draw.Src)
	}
	return out, m
}

// seedOf derives a stable seed from the job id (FNV-1a).
func seedOf(id string) int64 {
	var h uint64 = 14695981039346656037
	for i := 0; i < len(id); i++ {
		h ^= uint64(id[i])
		h *= 1099511628211
	}
	return int64(h >> 1)
}
