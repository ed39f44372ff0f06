// Package tryon is the reference pipeline of the "tryon" model: it puts the
// garment of garmentImage on the person of personImage. This package is
// the adapter: it decodes the inputs, loads the images, chooses the subject
// (package body), calls the transfer capability on the subject's crop,
// confines the result to the subject's region, runs the self-checks and,
// with an installed try-on model (CatVTON layout), puts the garment on with
// it over the garment region the transfer computes, else, with an installed
// inpainting model, refines the warp. Output is at the person image's size.
package tryon

import (
	"context"
	"fmt"

	"fashiond/perception"
	"fashiond/pipelines"
	"fashiond/pipelines/capability/generative"
	"fashiond/pipelines/capability/transfer"
	"fashiond/spec"
)

// Inputs are the tryon job inputs (spec defaults applied by the API).
type Inputs = spec.TryOnInputs

// Pipeline implements pipelines.Pipeline for "tryon".
type Pipeline struct {
	p   perception.Perception
	inp generative.Inpainter
	ton generative.TryOner
}

// New returns the tryon pipeline over the perception models.
func New(p perception.Perception) *Pipeline { return &Pipeline{p: p} }

// WithInpainter makes the pipeline refine each transfer's garment region
// with an installed inpainting model at a low strength (nil keeps the
// reference path).
func (pl *Pipeline) WithInpainter(inp generative.Inpainter) *Pipeline {
	pl.inp = inp
	return pl
}

// WithTryOner makes the pipeline put the garment on with an installed
// try-on model (CatVTON layout) instead of the warp; the warp (and its
// refinement) stays the fallback. nil keeps the classical path.
func (pl *Pipeline) WithTryOner(ton generative.TryOner) *Pipeline {
	pl.ton = ton
	return pl
}

// GenerativeModels implements pipelines.GenerativeUser: the try-on model,
// then the inpainting model, those installed.
func (pl *Pipeline) GenerativeModels() []string {
	var out []string
	if pl.ton != nil {
		out = append(out, pl.ton.Model())
	}
	if pl.inp != nil {
		out = append(out, pl.inp.Model())
	}
	return out
}

// Name implements pipelines.Pipeline.
func (*Pipeline) Name() string { return spec.ModelTryOn }

// Run implements pipelines.Pipeline: sampleCount outputs, variation 0 the
// neutral fit and the others different fit and drape parameters.
func (pl *Pipeline) Run(ctx context.Context, req *pipelines.Request) (*pipelines.Result, error) {
	typed, err := pipelines.InputsOf[Inputs](req)
	if err != nil {
		return nil, err
	}
	in := *typed
	n := in.SampleCount
	progress := req.Progress
	progress("load", 0.02, "")
	person, err := req.Images.Load(ctx, "inputs.personImage", in.PersonImage)
	if err != nil {
		return nil, err
	}
	gimg, err := req.Images.Load(ctx, "inputs.garmentImage", in.GarmentImage)
	if err != nil {
		return nil, err
	}
	progress("subject", 0.05, "")
	subj, err := findSubject(ctx, pl.p, person)
	if err != nil {
		return nil, err
	}
	progress("garment", 0.08, "")
	g, err := transfer.AnalyzeGarment(ctx, pl.p, gimg)
	if err != nil {
		return nil, err
	}
	res := &pipelines.Result{}
	for i := 0; i < n; i++ {
		base := 0.15 + 0.85*float64(i)/float64(n)
		span := 0.85 / float64(n)
		detail := fmt.Sprintf("sample %d/%d", i+1, n)
		o, err := subj.transfer(ctx, pl.p, generators{inp: pl.inp, ton: pl.ton, garment: gimg}, g, transfer.Options{
			Accuracy: in.Accuracy, Variation: i, Seed: int64(pipelines.Seed(req.JobID) >> 1),
			Progress: func(stage string, f float64) { progress(stage, base+span*f, detail) },
		})
		if err != nil {
			return nil, err
		}
		if err := pipelines.CheckError(spec.ModelTryOn, o.Checks); err != nil {
			return nil, err
		}
		res.Outputs = append(res.Outputs, o)
	}
	return res, nil
}
