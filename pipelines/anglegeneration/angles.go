// Package anglegeneration is the angle-generation reference pipeline: the photo is
// split into person and background layers with depth (pipelines/capability/scene) and
// each requested angle is re-rendered classically. front is the source view
// cleaned and re-framed; left45/right45 and leftSide/rightSide foreshorten
// the person with a smooth monotone horizontal map per row about the body
// axis (the head about the nose; near half widened or kept, far half
// narrowed; a clamped parallax from the depth model's layout at 45 degrees)
// over a background plate shifted by smoothed depth; back mirrors the
// front texture with the face replaced by a shaded hair mass and front
// prints removed. Each output records its method and, plainly, what
// the approximation cannot know. With installed generative models the
// classical view is then inpainted where the plate's fill shows and the
// back and side views are redrawn over their layout (generative.go).
package anglegeneration

import (
	"context"
	"errors"
	"fmt"
	"image"
	"math"
	"slices"

	"fashiond/perception"
	"fashiond/pipelines"
	bodypkg "fashiond/pipelines/capability/body"
	"fashiond/pipelines/capability/generative"
	"fashiond/pipelines/capability/raster"
	"fashiond/pipelines/capability/repose"
	"fashiond/pipelines/capability/scene"
	"fashiond/spec"
)

// Pipeline implements pipelines.Pipeline for "angle-generation".
type Pipeline struct {
	p perception.Perception
	// inp and ref are the installed generative models (nil: classical
	// only); see generative.go.
	inp generative.Inpainter
	ref generative.Refiner
}

// New returns the angle-generation pipeline over the perception models.
func New(p perception.Perception) *Pipeline { return &Pipeline{p: p} }

// Name implements pipelines.Pipeline.
func (*Pipeline) Name() string { return spec.ModelAngleGeneration }

// Inputs are the normalised inputs of angle-generation.
type Inputs = spec.AngleGenerationInputs

// Angle ids of the spec.
const (
	Front     = "front"
	Back      = "back"
	LeftSide  = "leftSide"
	RightSide = "rightSide"
	Left45    = "left45"
	Right45   = "right45"
)

// maxWorkPixels bounds the working resolution; the tier step upscales.
const maxWorkPixels = 1_000_000

// View is one rendered angle before the tier step.
type View struct {
	Image  *image.RGBA
	Method string
	Notes  []string
	// Confine is the blend alpha of a subject re-rendered in place on a
	// photo of several people (nil otherwise): zero where the photo is
	// kept pixel-identical.
	Confine *image.Gray
	// Person is the re-rendered person's coverage (soft alpha) and
	// Uncovered the region where the background plate's fill (where the
	// person stood in the photo) shows, both at Image's geometry; on a
	// photo of several people both are limited to where Confine is 255.
	Person, Uncovered *image.Gray
}

// Run implements pipelines.Pipeline.
func (p *Pipeline) Run(ctx context.Context, req *pipelines.Request) (*pipelines.Result, error) {
	typed, err := pipelines.InputsOf[Inputs](req)
	if err != nil {
		return nil, err
	}
	in := *typed
	progress := req.Progress
	progress("load", 0.02, "")
	img, err := req.Images.Load(ctx, "inputs.imageUrl", in.ImageURL)
	if err != nil {
		return nil, err
	}
	b := img.Bounds()
	ratio := in.Ratio
	if ratio == "" {
		ratio = perception.RatioOf(b.Dx(), b.Dy())
	}
	quality := in.Quality
	if quality == "" {
		quality = "1k"
	}
	progress("layers", 0.05, "person, background and depth")
	r, err := p.Prepare(ctx, img)
	if err != nil {
		return nil, err
	}
	n := len(in.AngleIDs)
	res := &pipelines.Result{}
	for i, id := range in.AngleIDs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		base := 0.2 + 0.8*float64(i)/float64(n)
		progress("angle", base, fmt.Sprintf("%s (%d/%d)", id, i+1, n))
		v, err := r.Render(id, ratio)
		if err != nil {
			return nil, err
		}
		step := func(done, total int) {
			progress("generative", base, fmt.Sprintf("%s (%d/%d), step %d/%d", id, i+1, n, done, total))
		}
		o, err := p.finish(ctx, r, v, id, pipelines.Seed(in.ImageURL, id), step)
		if err != nil {
			return nil, err
		}
		progress("upscale", base+0.5*0.8/float64(n), fmt.Sprintf("%s (%d/%d) to %s", id, i+1, n, quality))
		out, err := p.p.ToTier(ctx, o.Image, quality, ratio)
		if err != nil {
			return nil, fmt.Errorf("angle %s: %w", id, err)
		}
		o.Image, o.DataURI = out, in.ReturnBase64
		res.Outputs = append(res.Outputs, o)
	}
	progress("done", 1, "")
	return res, nil
}

// Renderer renders angles of one prepared photo.
type Renderer struct {
	s     *scene.Scene
	body  *body
	parse *perception.Parsing
	faces []perception.Face
	// several is the people analysis of a photo of several people (nil
	// otherwise): the subject is re-rendered in place (inPlace).
	several *bodypkg.Analysis
	// onWhite says the photo had transparency and was laid over white
	// (raster.OnWhite): every view's notes say so.
	onWhite bool
}

// Prepare splits the photo into layers once for all angles.
func (p *Pipeline) Prepare(ctx context.Context, img image.Image) (*Renderer, error) {
	b := img.Bounds()
	if b.Dx() < 32 || b.Dy() < 32 {
		return nil, pipelines.Failf("inputs.imageUrl: image %dx%d is too small (need at least 32x32)", b.Dx(), b.Dy())
	}
	// A cut-out's transparent background is black once premultiplied: the
	// checks read it as a hole torn in the picture (largest_hole).
	img, flattened := raster.OnWhite(img)
	work := raster.RGBA(img)
	if px := b.Dx() * b.Dy(); px > maxWorkPixels {
		k := math.Sqrt(float64(maxWorkPixels) / float64(px))
		work = raster.Resize(img, max(1, int(float64(b.Dx())*k)), max(1, int(float64(b.Dy())*k)))
	}
	a, err := p.people(ctx, work)
	if err != nil {
		return nil, err
	}
	opt := scene.Options{WithDepth: true}
	if a != nil {
		opt.Subject = a.EditAlpha()
	}
	s, err := scene.Layers(ctx, p.p, work, opt)
	if err != nil {
		return nil, err
	}
	if !s.HasPerson {
		return nil, pipelines.Failf("inputs.imageUrl: no person found; angle generation re-renders a person and needs one in the photo")
	}
	faces, err := p.p.Faces(ctx, s.Image)
	if err != nil {
		return nil, err
	}
	if a != nil {
		// The back view replaces the subject's face, not a neighbour's.
		faces = nil
		if f := a.SubjectPerson().Face; f != nil {
			faces = []perception.Face{*f}
		}
	}
	return &Renderer{s: s, body: newBody(s), parse: s.Parsing, faces: faces, several: a, onWhite: flattened}, nil
}

// people analyses the people of the working image: the analysis when the
// photo shows several people (the subject alone is re-rendered), nil for
// one person or none (the scene's own test then decides).
func (p *Pipeline) people(ctx context.Context, work *image.RGBA) (*bodypkg.Analysis, error) {
	a, err := bodypkg.Analyze(ctx, p.p, work)
	switch {
	case errors.Is(err, bodypkg.ErrNoPerson):
		return nil, nil
	case err != nil && ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		return nil, pipelines.Transientf("angle-generation: perception failed: %v", err)
	case !a.Several():
		return nil, nil
	}
	return a, nil
}

// inPlace composes the re-rendered subject over the background plate at
// the photo's own geometry (no re-framing, no mirrored or shifted plate:
// those would move the other people) and confines it to the subject's old
// and new regions (body.Analysis.ConfineMoved), on a photo of several
// people.
func (r *Renderer) inPlace(v *View, person *image.RGBA, alpha *image.Gray) {
	// A view mirrored across the frame (back) is moved back to where the
	// subject stands: the layer's box centred on the subject's box.
	at := image.Point{}
	if box := scene.MaskBounds(alpha, 128); !box.Empty() {
		sb := r.several.SubjectPerson().Box
		at.X = (sb.Min.X + sb.Max.X - box.Min.X - box.Max.X) / 2
	}
	canvas := image.NewRGBA(r.s.Background.Rect)
	copy(canvas.Pix, r.s.Background.Pix)
	scene.Composite(canvas, person, alpha, at)
	v.Image, v.Confine = r.several.ConfineMoved(r.s.Image, canvas, shiftGray(alpha, at.X))
	marks := markerPlate(r.s.HoleMask)
	scene.Composite(marks, personMarker(alpha), alpha, at)
	v.setMasks(marks, v.Confine)
	v.Notes = append(v.Notes, fmt.Sprintf("subject: %s; only the subject is re-rendered, in place: the other people, the background and the framing are unchanged", r.several.Rule))
}

// The classical views' methods and notes.
const (
	frontMethod = "front: source view re-framed on the person, auto-levels and light sharpening"
	turnMethod  = "turn-foreshortening: every row mapped by one smooth monotone function about the body axis (the head about the nose): near half widened, far half narrowed as a body turned 45 degrees would be, plus a clamped parallax from the depth model's layout; background plate shifted by its smoothed, clamped depth"
	sideMethod  = "profile-foreshortening: one monotone horizontal map for all rows (near half foreshortened to the body's depth-to-width ratio, far half folded in front of the body axis), keeping the whole body and its vertical structure; background plate shifted by its smoothed, clamped depth"
	backMethod  = "back-synthesis: mirrored front texture"
)

var (
	frontNotes = []string{"the camera does not move for the front view; only framing and tone are cleaned"}
	turnNotes  = []string{
		"a classical approximation of a 45-degree turn: the front texture is foreshortened, not re-rendered; surfaces hidden in the source (the side of the head, the far flank) do not appear, and limbs keep their pose",
		"the background behind the person is an inpainted plate, shifted by smoothed estimated depth (parallax clamped); where the person used to stand it is a smooth fill",
	}
	sideNotes = []string{
		"the side view is synthesised from the front texture: the real profile (nose and chin silhouette, garment side seams, the back half of the body) is unknown; the front view is foreshortened so the near cheek and ear dominate and the face reads as strongly turned, not as a true profile",
		"limbs keep their place in the frame: a leg stretched toward the camera is not re-posed to point sideways",
		"the background is the inpainted plate shifted by smoothed depth; what lies to the side of the original camera is unknown, and where the person used to stand it is a smooth fill",
	}
	backNotes = []string{
		"the back view is synthesised from the front texture; the real back of the garment, hair and body is unknown",
		"the background is the mirrored plate; what is behind the original camera is unknown",
	}
)

// The camera's turn for the turned views (degrees; positive: the camera
// moved to the viewer's left).
const (
	turnDegrees = 45
	sideDegrees = 90
)

// viewLayers is one angle's person layer and alpha, its background plate,
// and the plate's geometry in this view (move, applied to the marker plate
// that tracks where the plate was filled).
type viewLayers struct {
	person *image.RGBA
	alpha  *image.Gray
	bg     *image.RGBA
	move   func(*image.RGBA) *image.RGBA
}

// Render renders one angle framed to ratio (before the tier step).
func (r *Renderer) Render(id, ratio string) (*View, error) {
	s := r.s
	v := &View{}
	var l viewLayers
	switch id {
	case Front:
		l = viewLayers{person: cleanFront(s.Image), alpha: s.PersonMask, bg: cleanFront(s.Background),
			move: func(m *image.RGBA) *image.RGBA { return m }}
		v.Method, v.Notes = frontMethod, slices.Clone(frontNotes)
	case Left45, Right45:
		l = r.turned(turnDegrees, id == Right45)
		v.Method, v.Notes = turnMethod, slices.Clone(turnNotes)
	case LeftSide, RightSide:
		l = r.turned(sideDegrees, id == RightSide)
		v.Method, v.Notes = sideMethod, slices.Clone(sideNotes)
	case Back:
		var err error
		if l, err = r.back(v); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("angles: unknown angle %q", id)
	}
	if r.onWhite {
		v.Notes = append(v.Notes, raster.OnWhiteNote)
	}
	if r.several != nil {
		r.inPlace(v, l.person, l.alpha)
		return v, nil
	}
	v.Image = reframe(l.bg, l.person, l.alpha, ratio)
	v.setMasks(reframe(l.move(markerPlate(s.HoleMask)), personMarker(l.alpha), l.alpha, ratio), nil)
	return v, nil
}

// turned is the person turned by deg degrees (the other way when right)
// over the plate shifted by its depth.
func (r *Renderer) turned(deg float64, right bool) viewLayers {
	if right {
		deg = -deg
	}
	var l viewLayers
	l.person, l.alpha = r.body.view(deg * math.Pi / 180)
	l.move = r.shifted(deg)
	l.bg = l.move(r.s.Background)
	return l
}

// back is the synthesised back over the mirrored plate; it sets v's
// method (naming what was done) and notes.
func (r *Renderer) back(v *View) (viewLayers, error) {
	if err := repose.BodyBelowFace(r.s.Pose, r.faces); err != nil {
		return viewLayers{}, pipelines.Failf("inputs.imageUrl: angle back: %s; the classical back view paints hair over the head and mirrors the body below it, so it needs the shoulders and torso visible below the face", backNoBody(err))
	}
	person, alpha, did, err := backView(r.s, r.parse, r.faces)
	if err != nil {
		return viewLayers{}, err
	}
	l := viewLayers{person: person, alpha: alpha, move: mirror, bg: mirror(r.s.Background)}
	v.Method = backMethod
	for _, d := range did {
		v.Method += "; " + d
	}
	v.Notes = slices.Clone(backNotes)
	return l, nil
}

// backNoBody is BodyBelowFace's reason without its closing words about
// re-posing.
func backNoBody(err error) string {
	if nb, ok := errors.AsType[*repose.NoBodyError](err); ok {
		return nb.Reason
	}
	return err.Error()
}

// shifted is the 45-degree and side views' plate geometry: the plate
// shifted by its smoothed depth for a turn of deg degrees.
func (r *Renderer) shifted(deg float64) func(*image.RGBA) *image.RGBA {
	return func(m *image.RGBA) *image.RGBA {
		return shiftBackground(m, r.s.BackgroundDepth, r.body.pivot, deg*math.Pi/180)
	}
}

// reframe composes the person over the background on a canvas of the
// ratio with the source height, centring the person horizontally; the
// background is extended by reflection where the canvas needs more.
func reframe(bg, person *image.RGBA, alpha *image.Gray, ratio string) *image.RGBA {
	w, h := bg.Rect.Dx(), bg.Rect.Dy()
	a, b, err := perception.ParseRatio(ratio)
	if err != nil {
		a, b = w, h
	}
	cw := max(2, int(math.Round(float64(h)*float64(a)/float64(b))))
	box := scene.MaskBounds(alpha, 128)
	ox := (cw - w) / 2
	if !box.Empty() {
		pc := float64(box.Min.X+box.Max.X) / 2
		ox = int(math.Round(float64(cw)/2 - pc))
		lo, hi := min(0, cw-w), max(0, cw-w)
		ox = min(max(ox, lo), hi)
	}
	canvas := scene.ExtendAt(bg, cw, h, image.Pt(ox, 0))
	scene.Composite(canvas, person, alpha, image.Pt(ox, 0))
	return canvas
}

// shiftGray returns g moved dx pixels to the right (0 where nothing moved
// in).
func shiftGray(g *image.Gray, dx int) *image.Gray {
	if dx == 0 {
		return g
	}
	w, h := g.Rect.Dx(), g.Rect.Dy()
	out := image.NewGray(g.Rect)
	for y := 0; y < h; y++ {
		for x := max(0, dx); x < min(w, w+dx); x++ {
			out.Pix[y*out.Stride+x] = g.Pix[y*g.Stride+x-dx]
		}
	}
	return out
}
