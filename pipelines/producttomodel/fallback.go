package producttomodel

import (
	"context"
	"errors"
	"fmt"
	"image"

	"fashiond/pipelines"
	"fashiond/pipelines/capability/presets"
	"fashiond/pipelines/capability/transfer"
)

// A request that brings no model photo is dressed on the project's own
// presets: it must not fail because the preset it drew failed a
// self-check (a face the style stage lost at a ratio, a body the transfer
// cannot dress). The sample is then dressed on the next preset in the
// library's rank order for the request's words, and a note says which
// preset failed and why. Only when every qualifying preset fails does the
// job fail, naming the first preset's failure.

// dressBase finds the subject of bs (once per photo, cached in subjects)
// and dresses sample i on it; a repeated model gets a different fit
// (seen counts the uses of each model).
func (pl *Pipeline) dressBase(ctx context.Context, j *job, i int, bs base, subjects map[image.Image]*transfer.Subject, seen map[string]int) (pipelines.Output, error) {
	subj, ok := subjects[bs.img]
	if !ok {
		var err error
		if subj, err = pl.findSubject(ctx, bs); err != nil {
			return pipelines.Output{}, err
		}
		subjects[bs.img] = subj
	}
	return pl.sample(ctx, j, i, bs, subj, seen[bs.name])
}

// retryPresets dresses sample i on the other presets that qualify for the
// request, in rank order, then, when the request names a gender, the
// other gender's presets (a note says so), after failed (a preset) failed
// with ferr (a permanent job error). It returns the output and the preset used, or
// ferr when failed is not a preset, the error is not a job's own, or every
// other preset fails too.
func (pl *Pipeline) retryPresets(ctx context.Context, j *job, i int, failed base, ferr error, subjects map[image.Image]*transfer.Subject, seen map[string]int) (pipelines.Output, base, error) {
	var pe *pipelines.Error
	if failed.preset == "" || pl.lib == nil || !errors.As(ferr, &pe) || pe.Transient || ctx.Err() != nil {
		return pipelines.Output{}, failed, ferr
	}
	filter := presets.Filter{Framing: framings(j.g.Kind), Dressable: true}
	tried := []string{fmt.Sprintf("preset %s failed: %s", failed.preset, pe.Msg)}
	done := map[string]bool{failed.preset: true}
	candidates := pl.ranked(j.in.CustomPrompt, j.seed, filter)
	if g := presets.TextGender(j.in.CustomPrompt); g != "" {
		// Last, the other gender's presets: a request must not fail on the
		// project's own library (a short-sleeved top leaves the only
		// female full-body preset's long-sleeved arm to a fill,
		// arm_painted); the note says why.
		for _, p := range pl.ranked("", j.seed, filter) {
			if p.Gender != "" && p.Gender != g {
				candidates = append(candidates, p)
			}
		}
	}
	for _, p := range candidates {
		if done[p.ID] {
			continue
		}
		done[p.ID] = true
		img, err := pl.lib.Image(p)
		if err != nil {
			return pipelines.Output{}, failed, fmt.Errorf("product-to-model: %w", err)
		}
		bs := base{img: img, name: "preset " + p.ID, photo: "the preset model photo " + p.ID, preset: p.ID, why: pl.lib.Why(p, j.in.CustomPrompt, filter)}
		o, err := pl.dressBase(ctx, j, i, bs, subjects, seen)
		if err == nil {
			o.Notes = append(o.Notes, tried...)
			if g := presets.TextGender(j.in.CustomPrompt); g != "" && p.Gender != "" && p.Gender != g {
				o.Notes = append(o.Notes, fmt.Sprintf("the request asks for a %s model; no %s preset could be dressed with this garment, so the %s preset %s was used", g, g, p.Gender, p.ID))
			}
			return o, bs, nil
		}
		if !errors.As(err, &pe) || pe.Transient || ctx.Err() != nil {
			return pipelines.Output{}, failed, err
		}
		tried = append(tried, fmt.Sprintf("preset %s failed: %s", p.ID, pe.Msg))
	}
	return pipelines.Output{}, failed, ferr
}

// ranked is every preset that qualifies for text under filter, best
// first (presets.Library.Choose's order), each once.
func (pl *Pipeline) ranked(text string, seed int64, filter presets.Filter) []presets.Preset {
	all := pl.lib.Choose(text, len(pl.lib.All()), seed, filter)
	var out []presets.Preset
	seen := map[string]bool{}
	for _, p := range all {
		if !seen[p.ID] {
			seen[p.ID] = true
			out = append(out, p)
		}
	}
	return out
}
