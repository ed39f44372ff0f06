// Package prompttryon is the prompt-tryon model: dress a person image in a
// garment described by text. It parses the prompt into garments (region,
// colour, pattern), finds the garment regions with the perception models
// (pose, person segmentation, skin/clothes/hair parsing), recolours and
// re-textures them keeping the photo's own shading and folds, applies the
// optional photographic style and produces the quality tier.
//
// This is a reference pipeline: it changes the colour and pattern of the
// garments the person wears; it cannot change a garment's cut or shape
// (a prompt for a dress on a person in trousers recolours the trousers and
// the top), which needs a generative model.
package prompttryon

import (
	"context"
	"errors"
	"fmt"
	"image"
	"slices"
	"strings"

	"fashiond/perception"
	"fashiond/pipelines"
	"fashiond/pipelines/capability/generative"
	"fashiond/pipelines/capability/presets"
	"fashiond/pipelines/capability/recolour"
	"fashiond/pipelines/capability/style"
	"fashiond/spec"
)

// Name is the model name of the interface spec.
const Name = spec.ModelPromptTryOn

// maxWorkPixels caps the working resolution; ToTier reaches the tier.
const maxWorkPixels = 4_000_000

// Inputs are the normalised job inputs: the API has checked them against
// the spec and applied its defaults.
type Inputs = spec.PromptTryOnInputs

// Pipeline implements pipelines.Pipeline for prompt-tryon.
type Pipeline struct {
	p       perception.Perception
	presets *presets.Library
	inp     generative.Inpainter
}

// WithInpainter makes the pipeline inpaint the garment region with an
// installed inpainting model (nil keeps the reference path).
func (pl *Pipeline) WithInpainter(inp generative.Inpainter) *Pipeline {
	pl.inp = inp
	return pl
}

// GenerativeModels implements pipelines.GenerativeUser.
func (pl *Pipeline) GenerativeModels() []string {
	if pl.inp == nil {
		return nil
	}
	return []string{pl.inp.Model()}
}

// New returns the pipeline. presets may be nil; with a library,
// modelImageUrl may name a preset as "preset:<id>".
func New(p perception.Perception, lib *presets.Library) *Pipeline {
	return &Pipeline{p: p, presets: lib}
}

// Name implements pipelines.Pipeline.
func (*Pipeline) Name() string { return Name }

// Run implements pipelines.Pipeline.
func (pl *Pipeline) Run(ctx context.Context, req *pipelines.Request) (*pipelines.Result, error) {
	typed, err := pipelines.InputsOf[Inputs](req)
	if err != nil {
		return nil, err
	}
	in := *typed
	spec, err := recolour.Parse(in.Prompt)
	if err != nil {
		return nil, &pipelines.Error{Msg: err.Error(), Err: err}
	}
	progress := req.Progress

	progress("load", 0.02, "")
	person, err := req.Images.Load(ctx, "inputs.personImage", in.PersonImage)
	if err != nil {
		return nil, loadErr(err)
	}
	base := person
	var notes []string
	method := []string{}
	if in.ModelImageURL != "" {
		base, err = pl.modelImage(ctx, req, in.ModelImageURL)
		if err != nil {
			return nil, err
		}
		notes = append(notes, "modelImageUrl replaced the person: the garment was applied to the reference model's own clothes, and personImage was not otherwise used")
		method = append(method, "base=modelImageUrl")
	}
	work := recolour.FitPixels(base, maxWorkPixels)

	progress("perception", 0.1, "people, pose, person mask, clothes parsing")
	subj, err := findSubject(ctx, pl.p, work)
	if err != nil {
		return nil, err
	}
	r, err := recolour.FindRegions(ctx, pl.p, subj.cropImg)
	if err != nil {
		return nil, subj.regionsErr(ctx, err)
	}
	ratio := in.Ratio
	if ratio == "" {
		b := base.Bounds()
		ratio = perception.RatioOf(b.Dx(), b.Dy())
	}

	method = append(method, referenceMethod(in, spec)...)
	res := &pipelines.Result{}
	for s := 0; s < in.SampleCount; s++ {
		frac := func(f float64) float64 { return 0.2 + 0.8*(float64(s)+f)/float64(in.SampleCount) }
		detail := fmt.Sprintf("sample %d/%d", s+1, in.SampleCount)
		progress("dress", frac(0), detail)
		step := func(done, total int) {
			progress("generative", frac(0.3*float64(done)/float64(max(total, 1))), fmt.Sprintf("%s, step %d/%d", detail, done, total))
		}
		d, err := pl.dressSample(ctx, subj, r, spec, in.Prompt, s, step)
		if err != nil {
			return nil, err
		}
		out, checks := d.img, d.checks
		var img image.Image = out
		var styleNotes []string
		if in.StyleID != "" {
			progress("style", frac(0.4), detail)
			st, err := pl.style(ctx, out, in.StyleID, int64(s))
			if err != nil {
				return nil, err
			}
			img, styleNotes, checks = st.Image, st.Notes, append(checks, st.Checks...)
		}
		progress("tier", frac(0.6), detail)
		final, err := pl.p.ToTier(ctx, img, in.Quality, ratio)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, pipelines.Transientf("prompt-tryon: upscaling to %s failed: %v", in.Quality, err)
		}
		o := pipelines.Output{
			Image:  final,
			Path:   "reference",
			Method: strings.Join(method, "; "),
			Checks: checks,
		}
		pathNotes := referenceNotes
		if d.gen != nil {
			o.Path = "generative"
			o.Method = strings.Replace(o.Method, "albedo-replacement-with-shading-transfer", "generative-inpainting("+d.gen.Model+")", 1)
			pathNotes = []string{d.gen.Note("the garment region (grown to the requested garment's silhouette; face, background and other people kept) was")}
		}
		o.Notes = slices.Concat(notes, pathNotes, subj.notes(), d.notes, styleNotes)
		res.Outputs = append(res.Outputs, o)
	}
	progress("done", 1, "")
	return res, nil
}

// referenceNotes say what the reference path (recolouring) cannot do.
var referenceNotes = []string{"reference path: colour and pattern of the existing garments are changed; the garment's cut and shape are the photo's own (a generative model would be needed to change them)",
	"badges, prints, cords and objects held against the garment keep their colour when they differ clearly from it; hands resting on a garment keep a small margin of the old colour around them"}

// referenceMethod describes the reference path's steps for the method
// string: perception, regions, the recolouring, the parsed spec, the
// variations and the style.
func referenceMethod(in Inputs, sp recolour.Spec) []string {
	method := []string{"perception(pose+selfie+skin/clothes/hair)", "garment-regions(colour-refined waist split)",
		"albedo-replacement-with-shading-transfer", "spec: " + sp.String()}
	if in.SampleCount > 1 {
		method = append(method, fmt.Sprintf("variations: sample 1 exact, samples 2-%d with shade changes up to ±3.5 L*, ±5° hue and ±10%% chroma, and ±12%% pattern scale plus a new pattern phase", in.SampleCount))
	}
	if in.StyleID != "" {
		method = append(method, "style="+in.StyleID)
	}
	return method
}

// style applies styleId to the dressed photo under the style package's
// backdrop rule (no backdrop behind several people, a seated person, or a
// cut-out that would paint over the person) and fails naming a failed
// self-check.
func (pl *Pipeline) style(ctx context.Context, img *image.RGBA, id string, seed int64) (*style.Styled, error) {
	scene, err := style.AnalyzeScene(ctx, pl.p, img)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, pipelines.Transientf("prompt-tryon: style: %v", err)
	}
	st, err := style.ApplyScene(ctx, pl.p, img, id, seed, scene)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, pipelines.Failf("prompt-tryon: %v", err)
	}
	return st, pipelines.CheckError(Name, st.Checks)
}

// modelImage loads modelImageUrl: "preset:<id>" from the preset library,
// anything else through the image loader.
func (pl *Pipeline) modelImage(ctx context.Context, req *pipelines.Request, ref string) (image.Image, error) {
	if id, ok := strings.CutPrefix(ref, "preset:"); ok {
		if pl.presets == nil {
			return nil, pipelines.Failf("inputs.modelImageUrl: preset %q requested but no preset library is installed (run scripts/setup-presets.sh)", id)
		}
		p, ok := pl.presets.Get(id)
		if !ok {
			var ids []string
			for _, p := range pl.presets.All() {
				ids = append(ids, p.ID)
			}
			return nil, pipelines.Failf("inputs.modelImageUrl: unknown preset %q (installed: %s)", id, strings.Join(ids, ", "))
		}
		img, err := pl.presets.Image(p)
		if err != nil {
			return nil, pipelines.Failf("inputs.modelImageUrl: %v", err)
		}
		return img, nil
	}
	img, err := req.Images.Load(ctx, "inputs.modelImageUrl", ref)
	if err != nil {
		return nil, loadErr(err)
	}
	return img, nil
}

// loadErr keeps a loader's *pipelines.Error (transient or not) and wraps
// anything else as a permanent job error.
func loadErr(err error) error {
	var pe *pipelines.Error
	if errors.As(err, &pe) {
		return err
	}
	return &pipelines.Error{Msg: err.Error(), Err: err}
}
