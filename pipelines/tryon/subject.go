package tryon

import (
	"context"
	"errors"
	"fmt"
	"image"
	"slices"
	"strings"

	"fashiond/models"
	"fashiond/pipelines"
	bodypkg "fashiond/pipelines/body"
	"fashiond/pipelines/garment"
	"fashiond/pipelines/generative"
	"fashiond/pipelines/scene"
	"fashiond/pipelines/selfcheck"
	"fashiond/pipelines/transfer"
	"fashiond/spec"
)

// subject is the person image with its chosen subject: the transfer works
// on the subject's crop and its result is confined to the subject's region.
type subject struct {
	img   *image.RGBA
	a     *bodypkg.Analysis
	crop  image.Rectangle
	alpha *image.Gray
}

// findSubject analyses the people in the person image and chooses the
// subject (body package rule).
func findSubject(ctx context.Context, p models.Perception, person image.Image) (*subject, error) {
	img := scene.RGBA(person)
	a, err := bodypkg.Analyze(ctx, p, img)
	if errors.Is(err, bodypkg.ErrNoPerson) {
		return nil, pipelines.Failf("no person found in personImage: %v", err)
	}
	if err != nil {
		return nil, fmt.Errorf("tryon: %w", err)
	}
	return &subject{img: img, a: a, crop: a.CropRect(), alpha: a.EditAlpha()}, nil
}

// generators are the installed generative models the transfer may use (nil
// fields keep the classical path) and the garment photo the try-on model
// takes.
type generators struct {
	inp     generative.Inpainter
	ton     generative.TryOner
	garment image.Image
}

// transfer puts g on the subject: transfer.Transfer on the subject's crop
// (its regions are the try-on model's mask, and its result the fallback),
// then the try-on model when one is installed; a try-on output that fails a
// self-check gives way to the classical path, and the note names the check.
func (s *subject) transfer(ctx context.Context, p models.Perception, gen generators, g *garment.Garment, o transfer.Options) (pipelines.Output, error) {
	out, info, err := transfer.Transfer(ctx, p, subImage(s.img, s.crop), g, o)
	if err != nil {
		return pipelines.Output{}, s.explain(err)
	}
	var dropped string
	if gen.ton != nil {
		tried, err := s.tryOn(ctx, p, gen.ton, gen.garment, info, o)
		if err != nil {
			if ctx.Err() != nil {
				return pipelines.Output{}, ctx.Err()
			}
			return pipelines.Output{}, pipelines.Transientf("tryon: try-on model: %v", err)
		}
		cerr := pipelines.CheckError(spec.ModelTryOn, tried.Checks)
		if cerr == nil {
			return tried, nil
		}
		dropped = "the try-on model's output was not used: " + cerr.Error() + "; the classical warp was used instead"
	}
	res, err := s.classical(ctx, p, gen.inp, out, info, g, o)
	if err == nil && dropped != "" {
		res.Notes = append(res.Notes, dropped)
	}
	return res, err
}

// classical measures the warp's result and, with an inpainting model,
// refines its garment region; a refinement that fails a self-check gives
// way to the reference result.
func (s *subject) classical(ctx context.Context, p models.Perception, inp generative.Inpainter, out *image.RGBA,
	info *transfer.TransferInfo, g *garment.Garment, o transfer.Options) (pipelines.Output, error) {
	ref, err := s.measure(ctx, p, out, info)
	if err != nil || inp == nil {
		return ref, err
	}
	refined, gi, err := refine(ctx, inp, out, info.Layer, g, o.Accuracy, o.Seed+int64(o.Variation))
	if err != nil {
		if ctx.Err() != nil {
			return pipelines.Output{}, ctx.Err()
		}
		return pipelines.Output{}, pipelines.Transientf("tryon: generative refinement: %v", err)
	}
	gen, err := s.measure(ctx, p, refined, info)
	if err != nil {
		return pipelines.Output{}, err
	}
	if cerr := pipelines.CheckError(spec.ModelTryOn, gen.Checks); cerr != nil {
		ref.Notes = append(ref.Notes, "the generative refinement was not used: "+cerr.Error()+"; the reference result passed instead")
		return ref, nil
	}
	gen.Path = "generative"
	gen.Method = info.Method + "+generative-refinement(" + gi.Model + ")"
	gen.Notes = append(gen.Notes, gi.Note("after the reference warp, the garment region's seams, drape and lighting were"))
	return gen, nil
}

// measure places a transferred crop back, confined to the subject's region
// and blend band, and runs the self-checks (changed outside the subject,
// face unchanged, face found).
func (s *subject) measure(ctx context.Context, p models.Perception, out *image.RGBA, info *transfer.TransferInfo) (pipelines.Output, error) {
	final := bodypkg.ConfineCrop(s.img, out, s.crop, s.alpha)
	checks := []pipelines.Check{selfcheck.ChangedOutside(s.img, final, s.alpha)}
	notes := slices.Clip(info.Notes)
	if f := s.a.SubjectPerson().Face; f != nil {
		found, err := selfcheck.FaceFound(ctx, p, final, *f)
		if err != nil {
			return pipelines.Output{}, fmt.Errorf("tryon: %w", err)
		}
		checks = append(checks, selfcheck.FaceChange(s.img, final, *f), found)
	}
	if len(s.a.People) > 1 {
		notes = append(notes, fmt.Sprintf("subject: %s; the other people and the rest of the photo are unchanged", s.a.Rule))
	}
	return pipelines.Output{Image: final, Path: "reference", Method: info.Method, Notes: notes, Checks: checks}, nil
}

// explain turns the transfer's "no person found" into a reason about the
// subject when the analysis saw a face: the subject was found, but its body
// is not usable for a garment.
func (s *subject) explain(err error) error {
	var pe *pipelines.Error
	if !errors.As(err, &pe) || !strings.HasPrefix(pe.Msg, "no person found") || len(s.a.Faces) == 0 {
		return err
	}
	why := strings.TrimPrefix(strings.TrimPrefix(pe.Msg, "no person found in personImage"), ": ")
	return pipelines.Failf("personImage: the subject (%s) was found but its body cannot take a garment: %s", s.a.Rule, why)
}

// subImage is the pixels of img inside r with origin (0,0).
func subImage(img *image.RGBA, r image.Rectangle) *image.RGBA { return bodypkg.Crop(img, r) }
