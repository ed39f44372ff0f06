package tryon

import (
	"context"
	"errors"
	"fmt"
	"image"
	"slices"

	"fashiond/perception"
	"fashiond/pipelines"
	bodypkg "fashiond/pipelines/capability/body"
	"fashiond/pipelines/capability/garment"
	"fashiond/pipelines/capability/generative"
	"fashiond/pipelines/capability/selfcheck"
	"fashiond/pipelines/capability/transfer"
	"fashiond/spec"
)

// subject is the person image with its chosen subject: the transfer works
// on the subject's crop and its result is confined to the subject's region
// (transfer.Subject). img, a, crop and alpha are the embedded Subject's
// Img, Analysis, Crop and Alpha under the names tryon_model.go and its
// tests use.
type subject struct {
	*transfer.Subject
	img   *image.RGBA
	a     *bodypkg.Analysis
	crop  image.Rectangle
	alpha *image.Gray
}

// findSubject analyses the people in the person image and chooses the
// subject (body package rule).
func findSubject(ctx context.Context, p perception.Perception, person image.Image) (*subject, error) {
	s, err := transfer.FindSubject(ctx, p, person, "personImage")
	var pe *pipelines.Error
	if err != nil && !errors.As(err, &pe) {
		return nil, fmt.Errorf("tryon: %w", err)
	}
	if err != nil {
		return nil, err
	}
	return &subject{Subject: s, img: s.Img, a: s.Analysis, crop: s.Crop, alpha: s.Alpha}, nil
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
func (s *subject) transfer(ctx context.Context, p perception.Perception, gen generators, g *garment.Garment, o transfer.Options) (pipelines.Output, error) {
	out, info, err := s.Transfer(ctx, p, g, o)
	if err != nil {
		return pipelines.Output{}, err
	}
	var dropped string
	if gen.ton != nil {
		tried, err := s.tryOn(ctx, p, gen.ton, gen.garment, g, info, o)
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
func (s *subject) classical(ctx context.Context, p perception.Perception, inp generative.Inpainter, out *image.RGBA,
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
// face unchanged, face found: transfer.Subject.Place; hands_covered;
// arm_painted over info.Layer, the garment's own pixels).
func (s *subject) measure(ctx context.Context, p perception.Perception, out *image.RGBA, info *transfer.TransferInfo) (pipelines.Output, error) {
	final, checks, err := s.Place(ctx, p, out)
	if err != nil {
		return pipelines.Output{}, fmt.Errorf("tryon: %w", err)
	}
	hands, err := selfcheck.HandsCovered(ctx, p, s.Img, final, s.Analysis.SubjectPerson().Region)
	if err != nil {
		return pipelines.Output{}, fmt.Errorf("tryon: %w", err)
	}
	arms, err := selfcheck.ArmPainted(ctx, p, s.Img, final, s.FrameLayer(info.Layer), s.Analysis.SubjectPerson().Region)
	if err != nil {
		return pipelines.Output{}, fmt.Errorf("tryon: %w", err)
	}
	checks = append(checks, hands, arms)
	notes := slices.Clip(info.Notes)
	if n := s.Note(); n != "" {
		notes = append(notes, n)
	}
	return pipelines.Output{Image: final, Path: "reference", Method: info.Method, Notes: notes, Checks: checks}, nil
}

// subImage is the pixels of img inside r with origin (0,0).
func subImage(img *image.RGBA, r image.Rectangle) *image.RGBA { return bodypkg.Crop(img, r) }
