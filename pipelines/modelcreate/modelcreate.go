// Package modelcreate is the model-create pipeline: "upload" validates a
// model photo (a face is required; a body pose is stored when found) and
// saves it to the studio; "generate" composes a model from the preset
// library and the studio: re-posed (pose text, poseModelId or
// poseImageBase64, through pose-control's machinery), body type, clothing
// recoloured from text (prompt-tryon), the face of a saved face model
// transferred (similarity alignment on five landmarks, Poisson
// blending), and a photographic style. Every result is saved to
// the studio so that it can serve as faceModelId or poseModelId later.
package modelcreate

import (
	"context"
	"errors"
	"fashiond/spec"
	"fmt"
	"image"
	"log/slog"
	"math"
	"strings"
	"time"

	"fashiond/perception"
	"fashiond/pipelines"
	"fashiond/pipelines/capability/body"
	"fashiond/pipelines/capability/generative"
	"fashiond/pipelines/capability/mask"
	"fashiond/pipelines/capability/presets"
	"fashiond/pipelines/capability/raster"
	"fashiond/pipelines/capability/recolour"
	"fashiond/pipelines/capability/repose"
	"fashiond/pipelines/capability/scene"
	"fashiond/pipelines/capability/selfcheck"
	"fashiond/pipelines/capability/style"
)

// Inputs are the normalised model-create inputs.
type Inputs = spec.ModelCreateInputs

// workPixels caps the working resolution; ToTier reaches the tier.
const workPixels = 1_100_000

// Pipeline is the model-create pipeline.
type Pipeline struct {
	p   perception.Perception
	lib *presets.Library
	t2i generative.Generator
	ref generative.Refiner
	log *slog.Logger
}

// New returns the pipeline over the perception models and the preset
// library (lib may be nil: generate then fails saying the library is
// missing; upload does not need it).
func New(p perception.Perception, lib *presets.Library) *Pipeline {
	return &Pipeline{p: p, lib: lib, log: slog.Default().With("pipeline", spec.ModelModelCreate)}
}

// Name implements pipelines.Pipeline.
func (*Pipeline) Name() string { return spec.ModelModelCreate }

// Run implements pipelines.Pipeline.
func (pl *Pipeline) Run(ctx context.Context, req *pipelines.Request) (*pipelines.Result, error) {
	typed, err := pipelines.InputsOf[Inputs](req)
	if err != nil {
		return nil, err
	}
	in := *typed
	if req.Studio == nil {
		return nil, pipelines.Failf("model-create: no studio is configured to save models in")
	}
	switch in.Type {
	case spec.ModelCreateUpload:
		return pl.upload(ctx, req, in)
	case spec.ModelCreateGenerate:
		return pl.generate(ctx, req, in)
	}
	return nil, pipelines.Failf("model-create: unknown type %q (want generate or upload)", in.Type)
}

func jobErr(ctx context.Context, err error) error {
	var pe *pipelines.Error
	if errors.As(err, &pe) {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return pipelines.Failf("model-create: %v", err)
}

// framed is an image cropped to a ratio around a focus and brought to its
// tier, with the map from working pixels to output pixels.
type framed struct {
	img        image.Image
	k          float64         // image pixels per working pixel
	crop       image.Rectangle // in image pixels
	sx, sy     float64         // output pixels per image pixel
	outW, outH int
}

// pt maps a working-pixel position to output pixels.
func (f framed) pt(p perception.Point) (float64, float64) {
	return (p.X*f.k - float64(f.crop.Min.X)) * f.sx, (p.Y*f.k - float64(f.crop.Min.Y)) * f.sy
}

// faceCheck measures the framed output against the face found before
// framing (face_similarity: the face is re-detected on the output where the
// framing put it); a model photo without a face fails it with 0. Every
// model-create output carries it, and a failure fails the job.
func (pl *Pipeline) faceCheck(ctx context.Context, f framed, face *perception.Face) (pipelines.Check, error) {
	if face == nil {
		c := pipelines.MinCheck(selfcheck.NameFaceFound, 0, selfcheck.MinFaceIoU)
		return c, pipelines.CheckError(spec.ModelModelCreate, []pipelines.Check{c})
	}
	mapped := *face
	mapped.Box[0], mapped.Box[1] = f.pt(perception.Point{X: face.Box[0], Y: face.Box[1]})
	mapped.Box[2], mapped.Box[3] = f.pt(perception.Point{X: face.Box[2], Y: face.Box[3]})
	c, err := selfcheck.FaceFound(ctx, pl.p, f.img, mapped)
	if err != nil {
		return c, err
	}
	return c, pipelines.CheckError(spec.ModelModelCreate, []pipelines.Check{c})
}

// toTier crops img to the ratio around focus (the face, in working pixels;
// img has k image pixels per working pixel), then reaches the tier size
// with the perception models' upscaler.
func (pl *Pipeline) toTier(ctx context.Context, img image.Image, k float64, focus perception.Point, quality, ratio string) (framed, error) {
	a, b, err := perception.ParseRatio(ratio)
	if err != nil {
		return framed{}, err
	}
	focus = perception.Point{X: focus.X * k, Y: focus.Y * k}
	r := img.Bounds()
	w, h := r.Dx(), r.Dy()
	cw, ch := w, h
	if w*b > h*a {
		cw = max(1, min(w, (h*a+b/2)/b))
	} else {
		ch = max(1, min(h, (w*b+a/2)/a))
	}
	x0 := int(math.Round(focus.X)) - cw/2
	y0 := int(math.Round(focus.Y)) - ch/3 // the face in the upper third
	x0 = max(0, min(x0, w-cw))
	y0 = max(0, min(y0, h-ch))
	crop := image.Rect(x0, y0, x0+cw, y0+ch)
	sub := raster.RGBA(img).SubImage(crop.Add(r.Min))
	out, err := pl.p.ToTier(ctx, sub, quality, ratio)
	if err != nil {
		return framed{}, err
	}
	ob := out.Bounds()
	return framed{img: out, k: k, crop: crop, sx: float64(ob.Dx()) / float64(cw), sy: float64(ob.Dy()) / float64(ch), outW: ob.Dx(), outH: ob.Dy()}, nil
}

// record fills a saved model's face and pose fields in output pixels.
func record(f framed, face *perception.Face, pose *perception.Pose) pipelines.SavedModel {
	m := pipelines.SavedModel{Width: f.outW, Height: f.outH}
	if face != nil {
		x0, y0 := f.pt(perception.Point{X: face.Box[0], Y: face.Box[1]})
		x1, y1 := f.pt(perception.Point{X: face.Box[2], Y: face.Box[3]})
		m.FaceBox = []float64{x0, y0, x1, y1}
		for _, l := range face.Landmarks {
			x, y := f.pt(l)
			m.Landmarks = append(m.Landmarks, x, y)
		}
	}
	if pose != nil {
		for _, k := range pose.Keypoints {
			x, y := f.pt(perception.Point{X: k.X, Y: k.Y})
			m.Keypoints = append(m.Keypoints, x, y, k.Visibility)
		}
	}
	return m
}

// personPose returns the pose when the pose model finds a body pose usable
// as a pose reference (the same test as a pose-control template: shoulders
// and at least five of the twelve body joints seen inside the w x h image),
// else nil. A head-and-shoulders photo has none.
func personPose(pose *perception.Pose, w, h int) *perception.Pose {
	if pose == nil || pose.Presence < 0.5 {
		return nil
	}
	s := repose.SkeletonFromPose(pose, w, h)
	n := 0
	for _, j := range repose.BodyJoints {
		if s.Known[j] {
			n++
		}
	}
	if !s.Known[perception.KpLeftShoulder] || !s.Known[perception.KpRightShoulder] || n < 5 {
		return nil
	}
	return pose
}

func faceCentre(f perception.Face) perception.Point {
	return perception.Point{X: (f.Box[0] + f.Box[2]) / 2, Y: (f.Box[1] + f.Box[3]) / 2}
}

func (pl *Pipeline) upload(ctx context.Context, req *pipelines.Request, in Inputs) (*pipelines.Result, error) {
	// The API accepts only a data URI here (api's imageDataOnly), which the
	// job service may hand over as a stored-input reference: the loader
	// reads either.
	req.Progress("load", 0.05, "")
	src, err := req.Images.Load(ctx, "inputs.imageBase64", in.ImageBase64)
	if err != nil {
		return nil, jobErr(ctx, err)
	}
	img := repose.FitPixels(src, workPixels)
	req.Progress("detect", 0.2, "")
	face, pose, focus, err := pl.uploadedPerson(ctx, img)
	if err != nil {
		return nil, err
	}
	notes := []string{"the uploaded photo is stored as is (cropped to the aspect ratio around the head and brought to the quality tier)"}
	if pose == nil {
		notes = append(notes, "no person pose found (a face photo): the saved model has no keypoints and can serve as faceModelId but not as poseModelId")
	}
	req.Progress("tier", 0.5, "")
	// Frame from the uploaded pixels, not the working copy.
	k := float64(src.Bounds().Dx()) / float64(img.Rect.Dx())
	f, err := pl.toTier(ctx, src, k, focus, in.Quality, in.AspectRatio)
	if err != nil {
		return nil, jobErr(ctx, err)
	}
	var checks []pipelines.Check
	if face != nil {
		fc, err := pl.faceCheck(ctx, f, face)
		if err != nil {
			return nil, jobErr(ctx, err)
		}
		checks = append(checks, fc)
	} else {
		notes = append(notes, "no face in the photo (a person seen from behind or in profile): face_similarity is not measured, and the saved model can serve as poseModelId but not as faceModelId")
	}
	rec := record(f, face, pose)
	rec.Name = in.Name
	if rec.Name == "" {
		rec.Name = "uploaded model"
	}
	rec.Source = "upload"
	req.Progress("save", 0.9, "")
	if _, err := req.Studio.Save(ctx, req.Owner, rec, f.img); err != nil {
		return nil, jobErr(ctx, fmt.Errorf("saving the model: %w", err))
	}
	return &pipelines.Result{Outputs: []pipelines.Output{{Image: f.img, Path: "reference", Method: uploadMethod(face), Notes: notes, Checks: checks}}}, nil
}

// uploadMethod is an upload's Output.Method: what validated the person.
func uploadMethod(face *perception.Face) string {
	if face == nil {
		return "upload:pose-validated"
	}
	return "upload:face+pose-validated"
}

// uploadedPerson finds the person of an uploaded photo: the face when one
// is seen, else the person seen from behind or in profile (the pose
// model's body joints on the person mask, body.PosedPerson), with the
// point to frame on (the face's centre, else the pose model's head); the
// body pose when it is usable as a pose reference (personPose). A photo
// with neither a face nor such a body holds no person.
func (pl *Pipeline) uploadedPerson(ctx context.Context, img *image.RGBA) (*perception.Face, *perception.Pose, perception.Point, error) {
	faces, err := pl.p.Faces(ctx, img)
	if err != nil {
		return nil, nil, perception.Point{}, jobErr(ctx, err)
	}
	pose, err := pl.p.Pose(ctx, img)
	if err != nil {
		return nil, nil, perception.Point{}, jobErr(ctx, err)
	}
	w, h := img.Rect.Dx(), img.Rect.Dy()
	if len(faces) > 0 {
		return &faces[0], personPose(pose, w, h), faceCentre(faces[0]), nil
	}
	pm, err := pl.p.PersonMask(ctx, img)
	if err != nil {
		return nil, nil, perception.Point{}, jobErr(ctx, err)
	}
	if !body.PosedPerson(pose, pm) {
		return nil, nil, perception.Point{}, pipelines.Failf("model-create: no person found in inputs.imageBase64 (no face, and fewer than %d body joints of the pose model on the person mask)", body.MinJointsOnMask)
	}
	nose := pose.Keypoints[perception.KpNose]
	return nil, personPose(pose, w, h), perception.Point{X: nose.X, Y: nose.Y}, nil
}

// Body type words and the horizontal scale of the person they give:
// (shoulders, waist/hips).
var bodyTypes = []struct {
	words     []string
	top, hips float64
}{
	{[]string{"plus size", "plus-size", "plus", "curvy plus", "heavy", "large", "full figured", "full-figured", "fuller"}, 1.1, 1.14},
	{[]string{"curvy", "hourglass", "voluptuous"}, 1.02, 1.1},
	{[]string{"athletic", "muscular", "sporty", "fit", "toned", "broad"}, 1.06, 1.0},
	{[]string{"slim", "slender", "skinny", "thin", "petite", "lean", "willowy"}, 0.93, 0.92},
}

// BodyScale reads a body type text into the horizontal scales of the
// shoulders and the hips; ok is false when no known word is present.
func BodyScale(text string) (top, hips float64, name string, ok bool) {
	t := " " + strings.Join(strings.Fields(strings.ToLower(strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '-' {
			return r
		}
		return ' '
	}, text))), " ") + " "
	for _, b := range bodyTypes {
		for _, w := range b.words {
			if strings.Contains(t, " "+w+" ") {
				return b.top, b.hips, w, true
			}
		}
	}
	return 1, 1, "", false
}

// reshape scales the person horizontally about the body's centre line:
// top at the shoulders, hips at and below the hips, blended between. The
// person is cut out with its mask and drawn over the background plate.
func reshape(sc *scene.Scene, top, hips float64) *scene.Scene {
	img := sc.Image
	w, h := img.Rect.Dx(), img.Rect.Dy()
	k := sc.Pose.Keypoints
	sy := (k[11].Y + k[12].Y) / 2
	hy := (k[23].Y + k[24].Y) / 2
	sx := (k[11].X + k[12].X) / 2
	hx := (k[23].X + k[24].X) / 2
	if hy <= sy+1 {
		hy = sy + 1
	}
	scaleAt := func(y float64) (float64, float64) {
		t := math.Max(0, math.Min(1, (y-sy)/(hy-sy)))
		cx := sx + (hx-sx)*t
		return top + (hips-top)*t, cx
	}
	fg := image.NewRGBA(img.Rect)
	alpha := image.NewGray(img.Rect)
	pm := sc.PersonMask
	raster.ParallelRows(h, func(y0, y1 int) {
		for y := y0; y < y1; y++ {
			s, cx := scaleAt(float64(y))
			for x := 0; x < w; x++ {
				fx := cx + (float64(x)-cx)/s
				if fx < 0 || fx > float64(w-1) {
					continue
				}
				r, g, b, _ := raster.SampleBilinear(img.Pix, w, h, float32(fx), float32(y))
				x0 := int(fx)
				x1 := min(x0+1, w-1)
				ax := fx - float64(x0)
				a := float64(pm.Pix[y*pm.Stride+x0])*(1-ax) + float64(pm.Pix[y*pm.Stride+x1])*ax
				o := y*fg.Stride + x*4
				fg.Pix[o], fg.Pix[o+1], fg.Pix[o+2], fg.Pix[o+3] = uint8(r+0.5), uint8(g+0.5), uint8(b+0.5), 255
				alpha.Pix[y*alpha.Stride+x] = uint8(a + 0.5)
			}
		}
	})
	out := image.NewRGBA(img.Rect)
	copy(out.Pix, sc.Background.Pix)
	scene.Composite(out, fg, alpha, image.Point{})
	ns := *sc
	ns.Image = out
	ns.PersonMask = alpha
	pose := *sc.Pose
	for i := range pose.Keypoints {
		s, cx := scaleAt(pose.Keypoints[i].Y)
		pose.Keypoints[i].X = cx + (pose.Keypoints[i].X-cx)*s
	}
	ns.Pose = &pose
	return &ns
}

// skeletonFromRecord reads a saved model's keypoints (33 x (x, y, v)).
func skeletonFromRecord(rec pipelines.SavedModel) (repose.Skeleton, bool) {
	if len(rec.Keypoints) != 33*3 {
		return repose.Skeleton{}, false
	}
	var p perception.Pose
	for i := range p.Keypoints {
		p.Keypoints[i] = perception.Keypoint{X: rec.Keypoints[i*3], Y: rec.Keypoints[i*3+1], Visibility: rec.Keypoints[i*3+2]}
	}
	p.Presence = 1
	s := repose.SkeletonFromPose(&p, rec.Width, rec.Height)
	return s, s.Known[perception.KpLeftShoulder] && s.Known[perception.KpRightShoulder]
}

// styleInText returns the first style id named as a word in text.
func styleInText(text string) string {
	words := strings.Fields(strings.ToLower(strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return ' '
	}, text)))
	for _, w := range words {
		if style.Valid(w) {
			return w
		}
	}
	return ""
}

// poseTarget is how a sample is to be re-posed.
type poseTarget struct {
	skel       *repose.Skeleton // a template skeleton (poseModelId, poseImageBase64)
	parsed     *repose.ParsedPose
	desc       string
	fromPrompt bool // read from the prompt, not asked for explicitly
}

// forPreset drops the poses read from the prompt that the preset already
// shows (its pose words name them): re-posing for those would only add
// artefacts. It returns the remaining target and the dropped names.
func (pt poseTarget) forPreset(pr presets.Preset) (poseTarget, []string) {
	if !pt.fromPrompt || pt.parsed == nil {
		return pt, nil
	}
	var keep, drop []string
	for _, m := range pt.parsed.Matched {
		name, side, _ := strings.Cut(m, " (")
		shown := false
		for _, w := range pr.Pose {
			if strings.EqualFold(w, name) {
				shown = true
			}
		}
		switch {
		case shown:
			drop = append(drop, m)
		case side != "":
			keep = append(keep, strings.TrimSuffix(side, ")")+" "+name)
		default:
			keep = append(keep, name)
		}
	}
	if len(drop) == 0 {
		return pt, nil
	}
	if len(keep) == 0 {
		return poseTarget{}, drop
	}
	pp, err := repose.ParsePoseText(strings.Join(keep, ", "))
	if err != nil {
		return poseTarget{}, drop
	}
	return poseTarget{parsed: &pp, desc: "pose from the prompt: " + strings.Join(pp.Matched, ", "), fromPrompt: true}, drop
}

func (pl *Pipeline) generate(ctx context.Context, req *pipelines.Request, in Inputs) (*pipelines.Result, error) {
	if pl.t2i == nil && (pl.lib == nil || len(pl.lib.All()) == 0) {
		return nil, pipelines.Failf("model-create: generate needs the preset model library, and none is installed (run scripts/setup-presets.sh)")
	}
	// Read every reference before the image work, failing early.
	base, err := pl.sampleRequest(ctx, req, in)
	if err != nil {
		return nil, err
	}
	var fallback string
	if pl.t2i != nil {
		photos, err := pl.generatePhotos(ctx, in, in.SampleCount, pipelines.Seed(req.JobID))
		if err == nil {
			return pl.generatedSamples(ctx, req, in, base, photos)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if pl.lib == nil || len(pl.lib.All()) == 0 {
			return nil, pipelines.Failf("model-create: %v, and no preset model library is installed to fall back to", err)
		}
		fallback = err.Error() + "; a preset model photo was used instead"
	}
	return pl.presetSamples(ctx, req, in, base, fallback)
}

// sampleRequest reads what every sample of a generate request shares: the
// pose target, the face model, the clothing, the body type and the style.
func (pl *Pipeline) sampleRequest(ctx context.Context, req *pipelines.Request, in Inputs) (sampleSpec, error) {
	pt, err := pl.poseTarget(ctx, req, in)
	if err != nil {
		return sampleSpec{}, err
	}
	s := sampleSpec{pose: pt}
	if in.FaceModelID != "" {
		s.faceRec, s.faceImg, err = req.Studio.Get(ctx, req.Owner, in.FaceModelID)
		if errors.Is(err, pipelines.ErrNotFound) {
			return sampleSpec{}, pipelines.Failf("model-create: saved model %q (faceModelId) not found", in.FaceModelID)
		} else if err != nil {
			return sampleSpec{}, jobErr(ctx, err)
		}
	}
	if s.spec, err = clothingSpec(in); err != nil {
		return sampleSpec{}, err
	}
	s.top, s.hips, s.bodyWord, s.reshape = BodyScale(in.BodyType)
	if !s.reshape && in.BodyType == "" {
		s.top, s.hips, s.bodyWord, s.reshape = BodyScale(in.Prompt)
	}
	s.styleID = styleInText(in.Prompt)
	return s, nil
}

// poseTarget reads how the samples are to be re-posed: poseModelId,
// poseImageBase64 or the pose text, else a pose the prompt clearly
// describes (the zero target: none).
func (pl *Pipeline) poseTarget(ctx context.Context, req *pipelines.Request, in Inputs) (poseTarget, error) {
	switch {
	case in.PoseModelID != "":
		rec, _, err := req.Studio.Get(ctx, req.Owner, in.PoseModelID)
		if errors.Is(err, pipelines.ErrNotFound) {
			return poseTarget{}, pipelines.Failf("model-create: saved model %q (poseModelId) not found", in.PoseModelID)
		} else if err != nil {
			return poseTarget{}, jobErr(ctx, err)
		}
		s, ok := skeletonFromRecord(rec)
		if !ok {
			return poseTarget{}, pipelines.Failf("model-create: saved model %q (poseModelId) has no person pose found", in.PoseModelID)
		}
		return poseTarget{skel: &s, desc: "pose of saved model " + in.PoseModelID}, nil
	case in.PoseImageBase64 != "":
		pimg, err := req.Images.Load(ctx, "inputs.poseImageBase64", in.PoseImageBase64)
		if err != nil {
			return poseTarget{}, jobErr(ctx, err)
		}
		s, err := repose.TargetFromImage(ctx, pl.p, pimg)
		if err != nil {
			if ctx.Err() != nil {
				return poseTarget{}, ctx.Err()
			}
			return poseTarget{}, pipelines.Failf("model-create: no person pose found in inputs.poseImageBase64")
		}
		return poseTarget{skel: &s, desc: "pose of inputs.poseImageBase64"}, nil
	case in.Pose != "":
		pp, err := repose.ParsePoseText(in.Pose)
		if err != nil {
			return poseTarget{}, pipelines.Failf("model-create: inputs.pose: %v", err)
		}
		return poseTarget{parsed: &pp, desc: "pose " + strings.Join(pp.Matched, ", ")}, nil
	}
	// The prompt may describe the pose; use it when it clearly does.
	if pp, err := repose.ParsePoseText(in.Prompt); err == nil {
		return poseTarget{parsed: &pp, desc: "pose from the prompt: " + strings.Join(pp.Matched, ", "), fromPrompt: true}, nil
	}
	return poseTarget{}, nil
}

// clothingSpec reads the clothing to put on the model: inputs.clothing
// (an error when it names none), else the prompt when it names some.
func clothingSpec(in Inputs) (*recolour.Spec, error) {
	if in.Clothing != "" {
		s, err := recolour.Parse(in.Clothing)
		if err != nil {
			return nil, pipelines.Failf("model-create: inputs.clothing: %v", err)
		}
		return &s, nil
	}
	if s, err := recolour.Parse(in.Prompt); err == nil {
		return &s, nil
	}
	return nil, nil
}

// presetSamples runs the samples on the presets that fit the request (a
// preset repeats, mirrored every other time, when fewer fit than samples
// are asked for); fallback, when set, is a note on why no generated photo
// was used.
func (pl *Pipeline) presetSamples(ctx context.Context, req *pipelines.Request, in Inputs, base sampleSpec, fallback string) (*pipelines.Result, error) {
	text := strings.Join([]string{in.Gender, in.Prompt, in.Pose, in.Clothing}, " ")
	filter := presets.Filter{Framing: []string{presets.FullBody, presets.UpperBody}}
	picks := pl.lib.Choose(text, in.SampleCount, 0, filter)
	if len(picks) == 0 {
		return nil, pipelines.Failf("model-create: no preset model fits %q: %s; a generated model needs a full-body or upper-body photo", strings.TrimSpace(text), pl.lib.Missing(text, filter))
	}
	res := &pipelines.Result{}
	seen := map[string]int{}
	for i, pr := range picks {
		req.Progress("sample", float64(i)/float64(len(picks)), fmt.Sprintf("sample %d/%d (%s)", i+1, len(picks), pr.ID))
		repeat := seen[pr.ID]
		seen[pr.ID]++
		ss := base
		ss.preset, ss.repeat, ss.seed = pr, repeat, int64(i)
		out, err := pl.sample(ctx, req, in, ss)
		if err != nil {
			return nil, err
		}
		if fallback != "" {
			out.Notes = append(out.Notes, fallback)
		}
		res.Outputs = append(res.Outputs, *out)
	}
	req.Progress("done", 1, "")
	return res, nil
}

// sampleSpec is one sample to make: its starting photo (a preset or a
// generated photo) and the request's edits.
type sampleSpec struct {
	preset    presets.Preset
	gen       *genPhoto // a generated model photo instead of the preset
	repeat    int
	seed      int64
	pose      poseTarget
	faceRec   pipelines.SavedModel
	faceImg   image.Image
	spec      *recolour.Spec
	reshape   bool
	top, hips float64
	bodyWord  string
	styleID   string
}

// sampleState is a sample being made: the image so far, the method's
// steps, the notes and checks, whether an edit changed the photo and
// whether an img2img pass was used.
type sampleState struct {
	img        *image.RGBA
	name       string // the starting photo's name in the method
	steps      []string
	notes      []string
	checks     []pipelines.Check
	changed    bool
	refinedAny bool
}

// sample makes one model photo: the starting photo, re-posed and
// reshaped, recoloured, with the face transferred and the style applied,
// then framed to the tier and saved to the studio.
func (pl *Pipeline) sample(ctx context.Context, req *pipelines.Request, in Inputs, s sampleSpec) (*pipelines.Output, error) {
	st, err := pl.startSample(&s)
	if err != nil {
		return nil, jobErr(ctx, err)
	}
	if err := pl.reposeSample(ctx, req, in, s, st); err != nil {
		return nil, err
	}
	if err := pl.recolourSample(ctx, s, st); err != nil {
		return nil, err
	}
	if err := pl.faceSample(ctx, req, s, st); err != nil {
		return nil, err
	}
	if err := pl.styleSample(ctx, s, st); err != nil {
		return nil, err
	}
	return pl.saveSample(ctx, req, in, s, st)
}

// startSample loads the starting photo at the working size, mirrored for
// a repeated preset, and drops from s the poses the preset already shows.
func (pl *Pipeline) startSample(s *sampleSpec) (*sampleState, error) {
	base, name, err := pl.sampleBase(*s)
	if err != nil {
		return nil, err
	}
	st := &sampleState{img: repose.FitPixels(base, workPixels), name: name, steps: []string{name}}
	if s.repeat%2 == 1 {
		st.img = flipH(st.img)
		st.steps = append(st.steps, "mirrored")
		st.notes = append(st.notes, "the preset library has fewer matching models than samples: this sample is a mirrored variation")
	}
	if pt, dropped := s.pose.forPreset(s.preset); s.gen == nil && len(dropped) > 0 {
		st.notes = append(st.notes, fmt.Sprintf("the preset already shows %s as the prompt describes: not re-posed for it", strings.Join(dropped, ", ")))
		s.pose = pt
	}
	return st, nil
}

// reposeSample reshapes the body to the body type and re-poses the person
// to the pose target (refining a re-pose to a reference pose with the
// installed img2img model), on the photo's scene layers. The classical
// re-pose is measured as pose-control measures its outputs
// (repose.IntegrityChecks) and by duplicated_head; a damaged one fails the
// job unless an img2img pass redraws it and its own checks pass.
func (pl *Pipeline) reposeSample(ctx context.Context, req *pipelines.Request, in Inputs, s sampleSpec, st *sampleState) error {
	posed := s.pose.skel != nil || s.pose.parsed != nil
	if !s.reshape && !posed {
		return nil
	}
	sc, err := scene.Layers(ctx, pl.p, st.img, scene.Options{})
	if err != nil {
		return jobErr(ctx, err)
	}
	if err := repose.SourceUsable(sc); err != nil {
		return pipelines.Failf("model-create: preset %s: %v", s.preset.ID, err)
	}
	if posed {
		if err := pl.bodyShown(ctx, sc, st.name); err != nil {
			return err
		}
	}
	if s.reshape {
		sc = reshape(sc, s.top, s.hips)
		st.img = sc.Image
		st.steps = append(st.steps, fmt.Sprintf("body-%s(x%.2f shoulders, x%.2f hips)", s.bodyWord, s.top, s.hips))
		st.changed = true
	}
	if !posed {
		return nil
	}
	target, err := s.pose.skeleton(sc)
	if err != nil {
		return pipelines.Failf("model-create: %s: %v", st.name, err)
	}
	if s.gen == nil && s.preset.Framing == presets.UpperBody && movesBody(sourceSkeleton(sc), target) {
		if s.pose.fromPrompt {
			st.notes = append(st.notes, fmt.Sprintf("the %s was not applied: %s is an upper-body photo, on which only head poses are applied (%s); the photo keeps its own pose", s.pose.desc, st.name, upperBodyWhy))
			return nil
		}
		return pipelines.Failf("model-create: %s: the pose moves the body, and this preset is an upper-body photo: only head poses (looking left, right, up or down, head tilted) are applied to it (%s); ask for a head pose, or for a full-body preset (a setting or pose word of one, e.g. office or seated)", st.name, upperBodyWhy)
	}
	if err := repose.MovedArmsVisible(sc.Pose, sourceSkeleton(sc), target); err != nil {
		return pipelines.Failf("model-create: %s: %v", st.name, err)
	}
	refine := s.pose.skel != nil && pl.ref != nil
	if s.gen == nil && !refine && movesBody(sourceSkeleton(sc), target) {
		if s.pose.fromPrompt {
			st.notes = append(st.notes, fmt.Sprintf("the %s was not applied: without an installed img2img model only head poses are applied to a preset (%s); the photo keeps its own pose", s.pose.desc, classicalBodyWhy))
			return nil
		}
		return pipelines.Failf("model-create: %s: the pose moves the body, and without an installed img2img model only head poses (looking left, right, up or down, head tilted) are applied to a preset (%s); ask for a head pose, or install an img2img model (docs/GENERATIVE.md)", st.name, classicalBodyWhy)
	}
	r, err := repose.ReposeDetail(ctx, pl.p, sc, target)
	if err != nil {
		return jobErr(ctx, err)
	}
	if !movesBody(sourceSkeleton(sc), target) {
		r = headOnly(sc, r, sourceSkeleton(sc))
	}
	checks, err := pl.reposeChecks(ctx, sc, r, r.Image)
	if err != nil {
		return err
	}
	damaged := pipelines.CheckError("model-create: "+st.name+": re-pose", checks)
	if bad, ok := pipelines.FirstFailed(checks); ok && !refine {
		if s.pose.fromPrompt {
			// The prompt's pose words are a wish, the preset is the
			// project's own: keep the preset's pose and say why.
			st.notes = append(st.notes, fmt.Sprintf("the %s was not applied: the classical re-pose of this photo was damaged (%s); the photo keeps its own pose (an installed generative model re-poses without this limit)", s.pose.desc, bad.Failure()))
			return nil
		}
		return damaged
	}
	st.img = r.Image
	st.steps = append(st.steps, repose.Method+"("+s.pose.desc+")")
	st.notes = append(st.notes, repose.Notes...)
	st.changed = true
	if refine {
		rf, err := pl.refinePose(ctx, in, sc, r, pipelines.Seed(req.JobID)+uint64(s.seed))
		if err != nil {
			return err
		}
		var used bool
		st.img, used = rf.use(st.img, &st.steps, &st.notes, &st.checks)
		st.refinedAny = st.refinedAny || used
		if !used && damaged != nil {
			// The refined image was refused; the classical re-pose it
			// would have replaced is damaged.
			if rf.note != "" {
				return &pipelines.Error{Msg: damaged.Error() + "; " + strings.TrimSuffix(rf.note, ": the classical result is kept"), Err: damaged}
			}
			return damaged
		}
		if used {
			return nil
		}
	}
	st.checks = append(st.checks, checks...)
	return nil
}

// upperBodyWhy says why an upper-body preset takes head poses only. On
// the studio man (fashn_garment) the pose model puts the hips at 60% of
// the photo's height, on the shirt, and the knees at its hem; every body
// pose re-posed from that skeleton passed every self-check and was
// damaged (looked at): "hand on chin" a forearm as wide as the head with
// the shirt torn open beside it, every leg pose the trousers smeared into
// grey with no leg moved in sight.
const upperBodyWhy = "its hips and legs are not in the photo, so the pose model's skeleton of them is a guess, and re-posing the body from it tears the person"

// classicalBodyWhy says why, without an img2img model to redraw it, a
// preset takes head poses only. Surveyed (issue 21: the five presets x the
// 31 text poses, every output looked at), no classical body re-pose of a
// preset came out whole: most were refused by a self-check, and those
// that passed were damaged all the same (the woman on the grass, "hand on
// chin": a grey-green smear over the dog's chest where her arm had been,
// green streaks on the hoodie).
const classicalBodyWhy = "the classical re-pose of a body pose left every preset torn or smeared, some past every self-check"

// bodyMoveTol is how far, as a fraction of the torso, a joint from the
// shoulders down of the re-posed skeleton may lie from the photo's for the
// pose to move the head only.
const bodyMoveTol = 0.02

// movesBody reports whether target, retargeted onto source (as the re-pose
// does), moves any joint from the shoulders down: a pose of more than the
// head.
func movesBody(source, target repose.Skeleton) bool {
	o := repose.Retarget(target, source)
	tol := bodyMoveTol * source.TorsoSize()
	for j := perception.KpLeftShoulder; j < len(o.Joints); j++ {
		if math.Hypot(o.Joints[j].X-source.Joints[j].X, o.Joints[j].Y-source.Joints[j].Y) > tol {
			return true
		}
	}
	return false
}

// headRegionFrac is the radius, in shoulder widths, of the disc round the
// head (centred between the ears) that a head-only re-pose may change;
// headFeatherFrac the softness of its edge, in shoulder widths.
const (
	headRegionFrac  = 0.8
	headFeatherFrac = 0.08
)

// headOnly keeps a head-only re-pose r (looking left, head tilted...) to
// the head: r's pixels and coverage inside a feathered disc round the head
// of source, the photo's (sc) elsewhere. The renderer re-renders the whole
// person even when only the head turns, and on the seated man it smeared
// the fingers of the hand on his hip (and changed 1.2% of the picture
// below the head) for "looking at camera", a pose that moves nothing.
func headOnly(sc *scene.Scene, r *repose.Rendered, source repose.Skeleton) *repose.Rendered {
	l, rt := source.Joints[perception.KpLeftEar], source.Joints[perception.KpRightEar]
	c := perception.Point{X: (l.X + rt.X) / 2, Y: (l.Y + rt.Y) / 2}
	sw := math.Hypot(source.Joints[perception.KpLeftShoulder].X-source.Joints[perception.KpRightShoulder].X,
		source.Joints[perception.KpLeftShoulder].Y-source.Joints[perception.KpRightShoulder].Y)
	b := r.Image.Rect
	disc := image.NewGray(b)
	rad := headRegionFrac * sw
	for y := max(0, int(c.Y-rad)); y < min(b.Dy(), int(c.Y+rad)+1); y++ {
		for x := max(0, int(c.X-rad)); x < min(b.Dx(), int(c.X+rad)+1); x++ {
			if math.Hypot(float64(x)-c.X, float64(y)-c.Y) <= rad {
				disc.Pix[y*disc.Stride+x] = 255
			}
		}
	}
	soft := mask.Feather(mask.Erode(disc, headFeatherFrac*sw), headFeatherFrac*sw/2)
	out := *r
	out.Image = raster.CopyRGBA(sc.Image)
	scene.Composite(out.Image, r.Image, soft, image.Point{})
	out.Alpha = image.NewGray(b)
	for i, a := range soft.Pix {
		out.Alpha.Pix[i] = uint8((int(r.Alpha.Pix[i])*int(a) + int(sc.PersonMask.Pix[i])*(255-int(a)) + 127) / 255)
	}
	return &out
}

// reposeChecks measure out, the re-pose r of the scene's person or an
// img2img pass over it, as pose-control measures its outputs
// (repose.IntegrityChecks against the photo, sc) and by duplicated_head.
func (pl *Pipeline) reposeChecks(ctx context.Context, sc *scene.Scene, r *repose.Rendered, out *image.RGBA) ([]pipelines.Check, error) {
	head, err := selfcheck.DuplicatedHead(ctx, pl.p, sc.Image, out, sc.PersonMask, sc.PersonMask, r.Alpha)
	if err != nil {
		return nil, jobErr(ctx, err)
	}
	return append(repose.IntegrityChecks(sc.Image, out, sc.PersonMask, sourceSkeleton(sc), r), head), nil
}

// skeleton is the target skeleton on the scene's person: the template's,
// or the parsed pose applied to the person's own skeleton.
func (pt poseTarget) skeleton(sc *scene.Scene) (repose.Skeleton, error) {
	if pt.skel != nil {
		return *pt.skel, nil
	}
	return pt.parsed.Apply(sourceSkeleton(sc))
}

// sourceSkeleton is the scene's person's skeleton, every joint known.
func sourceSkeleton(sc *scene.Scene) repose.Skeleton {
	return repose.AllKnown(repose.SkeletonFromPose(sc.Pose, 0, 0))
}

// bodyShown is the job error of a photo (named name) whose person cannot
// be re-posed although it is found, as pose-control says it
// (repose.BodyBelowFace): the pose model's skeleton lies on the face of a
// head-and-shoulders photo. nil when the body is shown, or when no face is
// detected (no verdict).
func (pl *Pipeline) bodyShown(ctx context.Context, sc *scene.Scene, name string) error {
	faces, err := pl.p.Faces(ctx, sc.Image)
	if err != nil {
		return jobErr(ctx, err)
	}
	if err := repose.BodyBelowFace(sc.Pose, faces); err != nil {
		return pipelines.Failf("model-create: %s: %v", name, err)
	}
	return nil
}

// recolourSample puts the clothing on the model; a photo without the
// garment's region keeps its clothes and says so.
func (pl *Pipeline) recolourSample(ctx context.Context, s sampleSpec, st *sampleState) error {
	if s.spec == nil {
		return nil
	}
	d, err := recolour.Dress(ctx, pl.p, st.img, *s.spec, s.seed)
	var re *recolour.RegionError
	switch {
	case errors.As(err, &re):
		st.notes = append(st.notes, "clothing not applied: "+err.Error())
	case err != nil:
		return jobErr(ctx, err)
	default:
		st.img = d
		st.steps = append(st.steps, "recolour("+s.spec.String()+")")
		st.changed = true
	}
	return nil
}

// faceSample transfers the saved face model's face, checks it against the
// face model's (faceIntegrity), then redraws its border with the installed
// img2img model.
func (pl *Pipeline) faceSample(ctx context.Context, req *pipelines.Request, s sampleSpec, st *sampleState) error {
	if s.faceImg == nil {
		return nil
	}
	base, err := pl.p.Faces(ctx, st.img)
	if err != nil {
		return jobErr(ctx, err)
	}
	fimg, seam, err := pl.transferFace(ctx, st.img, s.faceRec, s.faceImg)
	if err != nil {
		return err
	}
	st.img = fimg
	st.steps = append(st.steps, "face-transfer(5-landmark similarity, seamless clone)")
	st.notes = append(st.notes, "face transfer keeps the face model's features on the base model's head shape; hair and ears stay the base model's")
	st.changed = true
	if err := pl.faceIntegrity(ctx, s, st, base[0]); err != nil {
		return err
	}
	if pl.ref == nil {
		return nil
	}
	rf, err := pl.refineFaceBorder(ctx, st.img, seam, pipelines.Seed(req.JobID)^faceSeedSalt+uint64(s.seed))
	if err != nil {
		return err
	}
	var used bool
	st.img, used = rf.use(st.img, &st.steps, &st.notes, &st.checks)
	st.refinedAny = st.refinedAny || used
	return nil
}

// styleSample applies the style named in the prompt, or the studio look
// when nothing else changed the photo; a style failing its checks fails
// the job.
func (pl *Pipeline) styleSample(ctx context.Context, s sampleSpec, st *sampleState) error {
	id := s.styleID
	if id == "" && !st.changed {
		id = "studio"
		st.notes = append(st.notes, "nothing in the request changes the model photo: a neutral studio look was applied")
	}
	if id == "" {
		return nil
	}
	scn, err := style.AnalyzeScene(ctx, pl.p, st.img)
	if err != nil {
		return jobErr(ctx, err)
	}
	sty, err := style.ApplyScene(ctx, pl.p, st.img, id, s.seed, scn)
	if err != nil {
		return jobErr(ctx, err)
	}
	if err := pipelines.CheckError(spec.ModelModelCreate, sty.Checks); err != nil {
		return err
	}
	st.img, st.checks = sty.Image, append(st.checks, sty.Checks...)
	st.notes = append(st.notes, sty.Notes...)
	st.steps = append(st.steps, "style:"+id)
	return nil
}

// saveSample frames the sample on its face at the tier, records its face
// and pose, saves it to the studio and returns the output.
func (pl *Pipeline) saveSample(ctx context.Context, req *pipelines.Request, in Inputs, s sampleSpec, st *sampleState) (*pipelines.Output, error) {
	faces, err := pl.p.Faces(ctx, st.img)
	if err != nil {
		return nil, jobErr(ctx, err)
	}
	pose, err := pl.p.Pose(ctx, st.img)
	if err != nil {
		return nil, jobErr(ctx, err)
	}
	b := st.img.Bounds()
	focus := perception.Point{X: float64(b.Dx()) / 2, Y: float64(b.Dy()) / 3}
	var face *perception.Face
	if len(faces) > 0 {
		face = &faces[0]
		focus = faceCentre(faces[0])
	}
	f, err := pl.toTier(ctx, st.img, 1, focus, in.Quality, in.AspectRatio)
	if err != nil {
		return nil, jobErr(ctx, err)
	}
	fc, err := pl.faceCheck(ctx, f, face)
	if err != nil {
		return nil, jobErr(ctx, err)
	}
	st.checks = append(st.checks, fc)
	rec := record(f, face, personPose(pose, b.Dx(), b.Dy()))
	rec.Source = "generate"
	rec.Name = in.Name
	if rec.Name == "" {
		rec.Name = "generated model " + time.Now().UTC().Format("2006-01-02 15:04")
	}
	if _, err := req.Studio.Save(ctx, req.Owner, rec, f.img); err != nil {
		return nil, jobErr(ctx, fmt.Errorf("saving the model: %w", err))
	}
	out := &pipelines.Output{Image: f.img, Path: "reference", Method: strings.Join(st.steps, "+"), Notes: st.notes, Checks: st.checks}
	if s.gen != nil {
		out.Path = "generative"
		out.Notes = append(out.Notes, s.gen.info.Note("the model photo was"))
	}
	if st.refinedAny {
		out.Path = "generative"
	}
	return out, nil
}

// sampleBase is a sample's starting photo and its name in the method.
func (pl *Pipeline) sampleBase(s sampleSpec) (image.Image, string, error) {
	if s.gen != nil {
		return s.gen.img, "text-to-image:" + s.gen.info.Model, nil
	}
	img, err := pl.lib.Image(s.preset)
	return img, "preset:" + s.preset.ID, err
}

// generatedSamples runs the samples on generated model photos.
func (pl *Pipeline) generatedSamples(ctx context.Context, req *pipelines.Request, in Inputs, base sampleSpec, photos []genPhoto) (*pipelines.Result, error) {
	res := &pipelines.Result{}
	for i := range photos {
		req.Progress("sample", float64(i)/float64(len(photos)), fmt.Sprintf("sample %d/%d (generated)", i+1, len(photos)))
		ss := base
		ss.gen, ss.seed = &photos[i], int64(i)
		out, err := pl.sample(ctx, req, in, ss)
		if err != nil {
			return nil, err
		}
		res.Outputs = append(res.Outputs, *out)
	}
	req.Progress("done", 1, "")
	return res, nil
}

func flipH(img *image.RGBA) *image.RGBA {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	out := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			copy(out.Pix[y*out.Stride+x*4:y*out.Stride+x*4+4], img.Pix[y*img.Stride+(w-1-x)*4:])
		}
	}
	return out
}
