// Package posecontrol is the pose-control pipeline: it re-poses the person of
// a model image into each requested pose, keeping face, clothing and
// background.
//
// Reference path: the source pose and person layers come from the
// perception models (scene.Layers); a target skeleton comes from a template
// image (pose model) or from a custom text through the pose vocabulary
// (POSES.md); the repose capability retargets and deforms the person. This
// package is the adapter: it decodes the inputs, loads the images, confines
// the result to the subject on a photo of several people, runs the
// self-checks and applies the tier.
package posecontrol

import (
	"context"
	"errors"
	"fmt"
	"image"
	"log/slog"
	"strings"

	"fashiond/perception"
	"fashiond/pipelines"
	"fashiond/pipelines/capability/body"
	"fashiond/pipelines/capability/generative"
	"fashiond/pipelines/capability/raster"
	"fashiond/pipelines/capability/repose"
	"fashiond/pipelines/capability/scene"
	"fashiond/pipelines/capability/selfcheck"
	"fashiond/spec"
)

// Method is Output.Method of every pose-control result.
const Method = repose.Method

// maxWorkPixels is the working resolution cap; ToTier reaches the tier.
const maxWorkPixels = repose.MaxWorkPixels

// Pipeline is the pose-control pipeline.
type Pipeline struct {
	p   perception.Perception
	log *slog.Logger
	inp generative.Inpainter
}

// New returns the pipeline over the perception models.
func New(p perception.Perception) *Pipeline {
	return &Pipeline{p: p, log: slog.Default().With("pipeline", spec.ModelPoseControl)}
}

// Name implements pipelines.Pipeline.
func (*Pipeline) Name() string { return spec.ModelPoseControl }

// PoseSpec is one element of inputs.poses.
type PoseSpec = spec.Pose

// Inputs are the normalised pose-control inputs: the API has checked them
// against the spec and applied its defaults.
type Inputs = spec.PoseControlInputs

// Run implements pipelines.Pipeline.
func (pl *Pipeline) Run(ctx context.Context, req *pipelines.Request) (*pipelines.Result, error) {
	typed, err := pipelines.InputsOf[Inputs](req)
	if err != nil {
		return nil, err
	}
	in := *typed
	// Read every custom text first: a text the pose vocabulary does not
	// understand fails the job before any image work.
	parsed := make([]repose.ParsedPose, len(in.Poses))
	for i, ps := range in.Poses {
		if ps.Type != spec.PoseCustom {
			continue
		}
		pp, err := repose.ParsePoseText(ps.Text)
		if err != nil {
			return nil, pipelines.Failf("poses[%d]: %v", i, err)
		}
		parsed[i] = pp
	}
	progress := req.Progress
	progress("load", 0.02, "")
	img, err := req.Images.Load(ctx, "inputs.modelImage", in.ModelImage)
	if err != nil {
		return nil, asJobError(err)
	}
	// A cut-out's transparent background is black once premultiplied: the
	// checks read it as a hole torn in the picture (largest_hole).
	img, flattened := raster.OnWhite(img)
	ratio := in.Ratio
	if ratio == "" {
		b := img.Bounds()
		ratio = perception.RatioOf(b.Dx(), b.Dy())
	}
	progress("layers", 0.08, "")
	jb, err := pl.source(ctx, repose.FitPixels(img, maxWorkPixels))
	if err != nil {
		return nil, err
	}
	jb.in, jb.req, jb.progress, jb.ratio = in, req, progress, ratio
	res := &pipelines.Result{}
	for i, ps := range in.Poses {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		progress("pose", 0.1+0.85*float64(i)/float64(len(in.Poses)), fmt.Sprintf("pose %d/%d", i+1, len(in.Poses)))
		target, notes, err := pl.target(ctx, jb, i, ps, parsed[i])
		if err != nil {
			return nil, err
		}
		o, err := pl.pose(ctx, jb, i, ps, target, notes)
		if err != nil {
			return nil, err
		}
		if flattened {
			o.Notes = append(o.Notes, raster.OnWhiteNote)
		}
		res.Outputs = append(res.Outputs, o)
	}
	progress("done", 1, "")
	return res, nil
}

// poseJob is what every pose of one job shares: the inputs, the source's
// layers, its people, its re-poser and skeleton, and the output ratio.
type poseJob struct {
	in       Inputs
	req      *pipelines.Request
	progress pipelines.ProgressFunc
	ratio    string
	sc       *scene.Scene
	a        *body.Analysis
	rp       *repose.Reposer
	src      repose.Skeleton
}

// source analyses the working image's people, splits it into layers (the
// subject's, on a photo of several people) and prepares the re-poser. A
// person to re-pose shows a face or, seen from behind or in profile, body
// joints on the person mask (body.PosedPerson): the pose model's skeleton
// on a product or an empty scene is a guess; and a body below the face:
// on a head-and-shoulders portrait the skeleton lies on the face.
func (pl *Pipeline) source(ctx context.Context, work *image.RGBA) (*poseJob, error) {
	a, err := pl.people(ctx, work)
	if err != nil {
		return nil, err
	}
	var opt scene.Options
	if a != nil && a.Several() {
		opt.Subject = a.EditAlpha()
	}
	sc, err := scene.Layers(ctx, pl.p, work, opt)
	if err != nil {
		return nil, asJobError(err)
	}
	if err := repose.SourceUsable(sc); err != nil {
		return nil, pipelines.Failf("pose-control: %v in inputs.modelImage", err)
	}
	if faces, err := pl.p.Faces(ctx, sc.Image); err != nil {
		return nil, asJobError(err)
	} else if len(faces) == 0 && !body.PosedPerson(sc.Pose, sc.PersonMask) {
		return nil, pipelines.Failf("pose-control: no person found in inputs.modelImage (no face, and fewer than %d body joints of the pose model on the person mask)", body.MinJointsOnMask)
	} else if err := repose.BodyBelowFace(sc.Pose, faces); err != nil {
		return nil, pipelines.Failf("pose-control: inputs.modelImage: %v", err)
	}
	src := repose.AllKnown(repose.SkeletonFromPose(sc.Pose, sc.Image.Rect.Dx(), sc.Image.Rect.Dy()))
	rp, err := repose.NewReposer(ctx, pl.p, sc)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, pipelines.Failf("pose-control: inputs.modelImage: %v", err)
	}
	return &poseJob{sc: sc, a: a, rp: rp, src: src}, nil
}

// target is pose i's target skeleton (from its template image or its
// parsed custom text pp) and the notes that say how it was read.
func (pl *Pipeline) target(ctx context.Context, jb *poseJob, i int, ps PoseSpec, pp repose.ParsedPose) (repose.Skeleton, []string, error) {
	var target repose.Skeleton
	notes := append([]string(nil), repose.Notes...)
	switch ps.Type {
	case spec.PoseTemplate:
		field := fmt.Sprintf("inputs.poses[%d].cdnUrl", i)
		timg, err := jb.req.Images.Load(ctx, field, ps.CDNURL)
		if err != nil {
			var pe *pipelines.Error
			if errors.As(err, &pe) {
				return target, nil, &pipelines.Error{Msg: fmt.Sprintf("poses[%d]: %s", i, pe.Msg), Transient: pe.Transient, Err: err}
			}
			return target, nil, pipelines.Failf("poses[%d]: %v", i, err)
		}
		target, err = repose.TargetFromImage(ctx, pl.p, timg)
		if err != nil {
			if ctx.Err() != nil {
				return target, nil, ctx.Err()
			}
			return target, nil, pipelines.Failf("poses[%d]: %v", i, err)
		}
		if target.Facing() != jb.src.Facing() {
			notes = append(notes, "the template faces the other way: its left and right limbs were swapped to copy the picture's layout")
		}
	case spec.PoseCustom:
		var err error
		target, err = pp.Apply(jb.src)
		if err != nil {
			return target, nil, pipelines.Failf("poses[%d]: %v", i, err)
		}
		notes = append(notes, "pose read as: "+strings.Join(pp.Matched, ", "))
		if len(pp.Ignored) > 0 {
			notes = append(notes, "words not understood and ignored: "+strings.Join(pp.Ignored, " "))
		}
	}
	return target, notes, nil
}

// pose re-poses the person into target (pose i) when the photo shows every
// arm the target moves, fills the uncovered
// background with the inpainting model when there is one, measures and
// checks the result, and brings it to the tier.
func (pl *Pipeline) pose(ctx context.Context, jb *poseJob, i int, ps PoseSpec, target repose.Skeleton, notes []string) (pipelines.Output, error) {
	n := len(jb.in.Poses)
	if err := repose.MovedArmsVisible(jb.sc.Pose, jb.src, target); err != nil {
		return pipelines.Output{}, pipelines.Failf("pose-control: poses[%d]: %v", i, err)
	}
	r, err := jb.rp.Repose(ctx, target)
	if err != nil {
		if ctx.Err() != nil {
			return pipelines.Output{}, ctx.Err()
		}
		return pipelines.Output{}, pipelines.Failf("poses[%d]: %v", i, err)
	}
	var gen *generative.Info
	if pl.inp != nil {
		step := func(done, total int) {
			jb.progress("generative", 0.1+0.85*float64(i)/float64(n), fmt.Sprintf("pose %d/%d, step %d/%d", i+1, n, done, total))
		}
		img, info, ok, err := pl.fillDisocclusion(ctx, r.Image, jb.sc.PersonMask, r.Alpha, fmt.Sprintf("%d:%+v", i, ps), step)
		if err != nil {
			if ctx.Err() != nil {
				return pipelines.Output{}, ctx.Err()
			}
			return pipelines.Output{}, pipelines.Transientf("pose-control: poses[%d]: generative background: %v", i, err)
		}
		if ok {
			r.Image, gen = img, &info
		}
	}
	m, err := pl.measure(ctx, jb.sc.Image, jb.sc.PersonMask, jb.rp.S, r, jb.a)
	if err != nil {
		return pipelines.Output{}, err
	}
	if m.note != "" {
		notes = append(notes, m.note)
	}
	if err := m.checkError(i); err != nil {
		return pipelines.Output{}, err
	}
	checks := m.checks
	out, err := pl.p.ToTier(ctx, m.final, jb.in.Quality, jb.ratio)
	if err != nil {
		if ctx.Err() != nil {
			return pipelines.Output{}, ctx.Err()
		}
		return pipelines.Output{}, pipelines.Failf("poses[%d]: %v", i, err)
	}
	o := pipelines.Output{Image: out, Path: "reference", Method: Method, Notes: notes, Checks: checks}
	if gen != nil {
		o.Path, o.Method = "generative", Method+"+generative-background("+gen.Model+")"
		o.Notes = append(o.Notes, gen.Note("the background the person uncovered by moving was"))
	}
	return o, nil
}

// people analyses the people of the working image (body package). A photo
// without any person gives nil: the scene's own test then fails the job
// with its reason.
func (pl *Pipeline) people(ctx context.Context, work *image.RGBA) (*body.Analysis, error) {
	a, err := body.Analyze(ctx, pl.p, work)
	switch {
	case errors.Is(err, body.ErrNoPerson):
		return nil, nil
	case err != nil && ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		return nil, pipelines.Transientf("pose-control: perception failed: %v", err)
	}
	return a, nil
}

// measured is a re-posed image confined to the subject and measured: the
// final image, its checks, a note naming the subject ("" for one person)
// and the moved bones the output does not show in the target's direction
// (pose_agreement's misses).
type measured struct {
	final  *image.RGBA
	checks []pipelines.Check
	note   string
	missed []string
}

// measure confines a re-posed image to the subject on a photo of several
// people (a.Several()) and measures it: changed_outside_subject (several
// people only), largest_hole (new black regions), largest_tear (the
// inpainted plate showing through a gap in the re-posed body; was is the
// scene's person mask), largest_torn_hole (the same through a hole of any
// width that the re-posed body encloses), the body-integrity checks,
// carried_background, pose_agreement and duplicated_head (the subject's
// faces where it is and where it stood, against the photo's on its own
// region).
func (pl *Pipeline) measure(ctx context.Context, src *image.RGBA, was *image.Gray, source repose.Skeleton, r *repose.Rendered, a *body.Analysis) (measured, error) {
	m := measured{final: r.Image}
	var person *image.Gray
	band := 0.0
	own, region := was, []*image.Gray{was, r.Alpha}
	if a != nil && a.Several() {
		var alpha *image.Gray
		m.final, alpha = a.ConfineMoved(src, r.Image, r.Alpha)
		m.checks = append(m.checks, selfcheck.ChangedOutside(src, m.final, alpha))
		person, band = r.Alpha, a.Band()
		own, region = selfcheck.OwnAlpha(a), []*image.Gray{alpha}
		m.note = fmt.Sprintf("subject: %s; only the subject is re-posed, the other people and the rest of the photo are unchanged", a.Rule)
	}
	m.checks = append(m.checks, repose.IntegrityChecks(src, m.final, was, source, r)...)
	agree, missed, err := repose.PoseAgreementMissed(ctx, pl.p, m.final, person, band, source, r.Target)
	if err != nil {
		return measured{}, perceptionError(ctx, err)
	}
	m.checks, m.missed = append(m.checks, agree), missed
	head, err := selfcheck.DuplicatedHead(ctx, pl.p, src, m.final, own, region...)
	if err != nil {
		return measured{}, perceptionError(ctx, err)
	}
	m.checks = append(m.checks, head)
	return m, nil
}

// perceptionError is a measuring step's error: the context's when it
// ended, else a transient job error.
func perceptionError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return pipelines.Transientf("pose-control: %v", err)
}

// checkError is the job error of pose i's failed checks (nil when all
// pass). When pose_agreement is the one that failed, it names the bones
// the output does not show as asked.
func (m measured) checkError(i int) error {
	err := pipelines.CheckError(fmt.Sprintf("pose-control: poses[%d]", i), m.checks)
	var cf *pipelines.CheckFailure
	if err == nil || len(m.missed) == 0 || !errors.As(err, &cf) || cf.Check.Name != repose.NamePoseAgreement {
		return err
	}
	return &pipelines.Error{Msg: fmt.Sprintf("%v (on the output the pose model finds the %s more than %d degrees from the requested direction, or not at all)", err, listWords(m.missed), repose.PoseTolDeg), Err: cf}
}

// listWords joins words as an English list ("a", "a and b", "a, b and c").
func listWords(w []string) string {
	if len(w) < 2 {
		return strings.Join(w, "")
	}
	return strings.Join(w[:len(w)-1], ", ") + " and " + w[len(w)-1]
}

func asJobError(err error) error {
	var pe *pipelines.Error
	if errors.As(err, &pe) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return pipelines.Failf("%v", err)
}
