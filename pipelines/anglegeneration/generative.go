package anglegeneration

import (
	"context"
	"fmt"
	"image"
	"image/color"
	"math"
	"sort"
	"strings"

	"fashiond/perception"
	"fashiond/pipelines"
	"fashiond/pipelines/capability/generative"
	"fashiond/pipelines/capability/mask"
	"fashiond/pipelines/capability/raster"
	"fashiond/pipelines/capability/selfcheck"
)

// The generative stage. After the classical view synthesis:
//  1. with an installed inpainting model, the region where the background
//     plate's fill shows (View.Uncovered: where the person stood in the
//     photo and the re-rendered person does not) is inpainted with a
//     prompt describing the person and the view;
//  2. with an installed refiner (img2img), the back and side views are
//     redrawn over the classical layout, inside the re-rendered person and
//     the uncovered region grown by refineMarginFrac of the diagonal, at
//     backStrength / sideStrength: the layout, colours and pose hold, the
//     mirrored face-turned-hair and foreshortened texture are re-rendered.
//
// The self-checks run on the generative output; when one fails, the
// classical view is returned and a note names the check. On a photo of
// several people both masks are limited to where the confinement alpha is
// 255, so the other people and the frame outside the subject's region and
// band stay pixel-identical.
const (
	// backStrength and sideStrength are the refine pass's img2img
	// strengths: the back view's texture is the mirrored front (a face
	// turned into hair), so it is redrawn more than a profile's.
	backStrength = 0.5
	sideStrength = 0.4
	// refineMarginFrac grows the refined region around the person, as a
	// fraction of the image diagonal, so its edge is redrawn too.
	refineMarginFrac = 0.006
	// minGarmentShare is the share of the person's pixels a garment part
	// (above or below the hips) needs to be named in the prompt.
	minGarmentShare = 0.05
	// legsFrac is how far below the hips, as a fraction of the torso's
	// length, clothes must reach to be named trousers.
	legsFrac = 0.5
	// faceTorsoMax: a face taller than this share of the torso's length
	// marks a portrait (the pose's hips and knees are not trusted).
	faceTorsoMax  = 0.7
	angleNegative = "several people, extra person, duplicate, ghost, extra limbs, extra fingers, deformed, blurry, text, watermark, cartoon"
)

// WithGenerative makes the pipeline use installed generative models: inp
// inpaints the uncovered plate, ref redraws the back and side views (nil
// keeps the classical step).
func (p *Pipeline) WithGenerative(inp generative.Inpainter, ref generative.Refiner) *Pipeline {
	p.inp, p.ref = inp, ref
	return p
}

// GenerativeModels implements pipelines.GenerativeUser.
func (p *Pipeline) GenerativeModels() []string {
	var out []string
	if p.inp != nil {
		out = append(out, p.inp.Model())
	}
	if p.ref != nil && (p.inp == nil || p.ref.Model() != p.inp.Model()) {
		out = append(out, p.ref.Model())
	}
	return out
}

// markerPlate is an image whose red channel is the plate's filled region
// (HoleMask): carried through a view's plate geometry it says where the
// fill shows.
func markerPlate(hole *image.Gray) *image.RGBA {
	m := image.NewRGBA(hole.Rect)
	for i, v := range hole.Pix {
		m.Pix[4*i], m.Pix[4*i+3] = v, 255
	}
	return m
}

// personMarker is a person layer of alpha's size that is pure green: over
// a marker plate it sets the green channel to the person's coverage and
// clears the red one.
func personMarker(alpha *image.Gray) *image.RGBA {
	m := image.NewRGBA(alpha.Rect)
	for i := 0; i < len(m.Pix); i += 4 {
		m.Pix[i+1], m.Pix[i+3] = 255, 255
	}
	return m
}

// setMasks reads Person and Uncovered from a composed marker image,
// limited to where confine is 255 when confine is not nil.
func (v *View) setMasks(marks *image.RGBA, confine *image.Gray) {
	b := marks.Rect
	v.Person, v.Uncovered = image.NewGray(b), image.NewGray(b)
	for i := range v.Person.Pix {
		if confine != nil && confine.Pix[i] < 255 {
			continue
		}
		v.Person.Pix[i] = marks.Pix[4*i+1]
		if marks.Pix[4*i] >= 128 {
			v.Uncovered.Pix[i] = 255
		}
	}
}

// checks measures an output image of view v: changed_outside_subject
// (photos of several people), largest_hole (new black regions) and
// largest_background_hole (the classical view's plate showing through the
// re-rendered person).
func (r *Renderer) checks(v *View, img *image.RGBA) []pipelines.Check {
	var c []pipelines.Check
	if v.Confine != nil {
		c = append(c, selfcheck.ChangedOutside(r.s.Image, img, v.Confine))
	}
	return append(c, selfcheck.Hole(r.s.Image, img), selfcheck.BgHole(img, v.Image, v.Uncovered, v.Person))
}

// classicalChecks are the checks of the classical view only (with
// duplicatedHead, which needs the perception models): ghost_smear
// (the plate's smooth fill left uncovered where the person stood, flatter
// than the background around it: a smear on a textured background) and
// person_pieces (the re-rendered person in one piece). A generative
// output redraws the uncovered region and the person, so the plate's
// fill is not what it shows there.
func classicalChecks(v *View) []pipelines.Check {
	return []pipelines.Check{selfcheck.GhostSmear(v.Image, plateOrPerson(v), v.Person), selfcheck.PersonPieces(v.Person)}
}

// duplicatedHead is the classical view's duplicated_head: the subject's
// faces on the view where it is or where it stood (plateOrPerson: a plate
// that kept the person shows the old head there) against the photo's on
// the subject's own region (the person mask for one person).
func (p *Pipeline) duplicatedHead(ctx context.Context, r *Renderer, v *View) (pipelines.Check, error) {
	own := r.s.PersonMask
	if r.several != nil {
		own = selfcheck.OwnAlpha(r.several)
	}
	return selfcheck.DuplicatedHead(ctx, p.p, r.s.Image, v.Image, own, plateOrPerson(v))
}

// plateOrPerson is where the view shows the plate's fill or the person:
// ghost_smear's "where the person stood" (its vacated part is the fill
// left uncovered).
func plateOrPerson(v *View) *image.Gray {
	g := image.NewGray(v.Person.Rect)
	for i := range g.Pix {
		g.Pix[i] = max(v.Person.Pix[i], v.Uncovered.Pix[i])
	}
	return g
}

// finish runs the generative stage on a rendered view when models are
// installed, measures the result and builds the output (before the tier
// step). A generative output that fails a check gives way to the
// classical view, saying which check; a classical view that fails one
// fails the job.
func (p *Pipeline) finish(ctx context.Context, r *Renderer, v *View, id string, seed uint64, step func(done, total int)) (pipelines.Output, error) {
	o := pipelines.Output{Image: v.Image, Path: "reference", Method: v.Method, Notes: v.Notes, Checks: append(r.checks(v, v.Image), classicalChecks(v)...)}
	head, err := p.duplicatedHead(ctx, r, v)
	if err != nil {
		if ctx.Err() != nil {
			return o, ctx.Err()
		}
		return o, pipelines.Transientf("angle-generation: angle %s: perception failed: %v", id, err)
	}
	o.Checks = append(o.Checks, head)
	if p.inp != nil || p.ref != nil {
		img, method, notes, err := p.generate(ctx, r, v, id, seed, step)
		if err != nil {
			if ctx.Err() != nil {
				return o, ctx.Err()
			}
			return o, pipelines.Transientf("angle-generation: angle %s: generative stage: %v", id, err)
		}
		if img != nil {
			gc := r.checks(v, img)
			if failed, bad := pipelines.FirstFailed(gc); !bad {
				return pipelines.Output{Image: img, Path: "generative", Method: v.Method + method, Notes: append(classicalNotes(v.Notes, method), notes...), Checks: gc}, nil
			} else {
				o.Notes = append(append([]string(nil), o.Notes...), fmt.Sprintf("the generative output failed the self-check %s (%g, limit %g %s): the classical view is returned", failed.Name, failed.Value, failed.Limit, failed.Bound))
			}
		}
	}
	if err := pipelines.CheckError("angle-generation: angle "+id, o.Checks); err != nil {
		return o, err
	}
	return o, nil
}

// generate runs the inpainting and refine passes on v (a nil image when
// neither applies) and returns the method suffix and the notes.
func (p *Pipeline) generate(ctx context.Context, r *Renderer, v *View, id string, seed uint64, step func(done, total int)) (*image.RGBA, string, []string, error) {
	who, full := r.describe()
	prompt := generative.Prompt{Text: anglePrompt(id, who, full), Negative: angleNegative, Seed: seed, Progress: step}
	if id == Back {
		prompt.Negative += ", face, eyes, front of the body"
	}
	img, method := v.Image, ""
	var notes []string
	if p.inp != nil && mask.Count(v.Uncovered) > 0 {
		out, info, err := p.inp.Inpaint(ctx, img, v.Uncovered, prompt)
		if err != nil {
			return nil, "", nil, err
		}
		img = raster.RGBA(out)
		method += "+generative-fill(" + info.Model + ")"
		notes = append(notes, info.Note("where the person stood in the photo and the new view leaves the background plate's fill, the region was"))
	}
	if s := refineStrength(id); p.ref != nil && s > 0 {
		region := r.refineRegion(v)
		prompt.Strength = s
		out, info, err := p.ref.Refine(ctx, img, region, prompt)
		if err != nil {
			return nil, "", nil, err
		}
		img = raster.RGBA(out)
		method += fmt.Sprintf("+generative-refine(%s, strength %g)", info.Model, s)
		notes = append(notes, info.Note("the person and the uncovered region, redrawn over the classical view's layout (img2img), were"))
	}
	if method == "" {
		return nil, "", nil, nil
	}
	return img, method, notes, nil
}

// refineStrength is the refine pass's strength for an angle (0: none).
func refineStrength(id string) float64 {
	switch id {
	case Back:
		return backStrength
	case LeftSide, RightSide:
		return sideStrength
	}
	return 0
}

// refineRegion is the re-rendered person grown by refineMarginFrac of the
// diagonal, plus the uncovered region, limited to where the view may
// change (the confinement alpha at 255 on a photo of several people).
func (r *Renderer) refineRegion(v *View) *image.Gray {
	b := v.Image.Rect
	g := mask.Dilate(mask.Binary(v.Person, 128), refineMarginFrac*math.Hypot(float64(b.Dx()), float64(b.Dy())))
	for i := range g.Pix {
		if v.Uncovered.Pix[i] >= 128 {
			g.Pix[i] = 255
		}
		if v.Confine != nil && v.Confine.Pix[i] < 255 {
			g.Pix[i] = 0
		}
	}
	return g
}

// anglePrompt describes the view and the person (full: the legs are in
// the picture).
func anglePrompt(id, person string, full bool) string {
	view := map[string]string{
		Front:     "front view",
		Back:      "back view, seen from behind, the back of the head and hair",
		LeftSide:  "side view in profile",
		RightSide: "side view in profile",
		Left45:    "three-quarter view",
		Right45:   "three-quarter view",
	}[id]
	frame := "upper body"
	if full {
		frame = "full body"
	}
	return fmt.Sprintf("%s of %s, %s, photographic, natural light, sharp focus", view, person, frame)
}

// describe names what the person wears from the parsing: the dominant
// colour of the clothes above and below the hips ("a person wearing a
// white top and blue trousers"), or "a person", and whether the legs are
// in the picture (a full-body view). Clothes below the hips
// count as trousers only when a knee is seen below the hips inside the
// frame and they reach legsFrac of the torso's length below the hips (on
// a half-body photo the pose model places the hips too high and the top
// reaches past them: it stays the top).
func (r *Renderer) describe() (string, bool) {
	s := r.s
	if s.Parsing == nil || s.Parsing.Clothes == nil {
		return "a person", false
	}
	w, h := s.Image.Rect.Dx(), s.Image.Rect.Dy()
	hipY, torso := hipRow(s.Pose, h)
	cl := raster.ResizeGray(s.Parsing.Clothes, w, h)
	var parts [2][]color.RGBA
	person, lowest := 0, 0
	for y := range h {
		for x := range w {
			if s.PersonMask.Pix[y*s.PersonMask.Stride+x] <= 200 {
				continue
			}
			person++
			if cl.Pix[y*cl.Stride+x] > 128 {
				i := y*s.Image.Stride + 4*x
				k := 0
				if y >= hipY {
					k, lowest = 1, y
				}
				parts[k] = append(parts[k], color.RGBA{s.Image.Pix[i], s.Image.Pix[i+1], s.Image.Pix[i+2], 255})
			}
		}
	}
	legs := float64(lowest-hipY) >= legsFrac*torso && kneesShown(s.Pose, hipY, h) && !faceDwarfsTorso(r.faces, torso)
	if !legs {
		parts[0], parts[1] = append(parts[0], parts[1]...), nil
	}
	var worn []string
	for k, noun := range []string{"a %s top", "%s trousers"} {
		if float64(len(parts[k])) >= minGarmentShare*float64(person) {
			worn = append(worn, fmt.Sprintf(noun, generative.ColourWord(medianColour(parts[k]))))
		}
	}
	if len(worn) == 0 {
		return "a person", legs
	}
	return "a person wearing " + strings.Join(worn, " and "), legs
}

// faceDwarfsTorso reports whether the face is taller than faceTorsoMax of
// the pose's torso: a portrait, where the pose model's hips and knees are
// guesses.
func faceDwarfsTorso(faces []perception.Face, torso float64) bool {
	return len(faces) > 0 && faces[0].Box[3]-faces[0].Box[1] > faceTorsoMax*torso
}

// hipRow is the row of the hips from the pose and the torso's length
// (shoulders to hips); h and 0 when unknown (everything is the top).
func hipRow(p *perception.Pose, h int) (int, float64) {
	if p == nil {
		return h, 0
	}
	k := p.Keypoints
	l, r := k[perception.KpLeftHip], k[perception.KpRightHip]
	if l.Visibility <= 0.5 || r.Visibility <= 0.5 {
		return h, 0
	}
	hip := (l.Y + r.Y) / 2
	torso := 0.25 * float64(h)
	if ls, rs := k[perception.KpLeftShoulder], k[perception.KpRightShoulder]; ls.Visibility > 0.5 && rs.Visibility > 0.5 {
		torso = hip - (ls.Y+rs.Y)/2
	}
	return int(hip), torso
}

// kneesShown reports whether the pose sees a knee below the hips and
// inside the frame.
func kneesShown(p *perception.Pose, hipY, h int) bool {
	if p == nil {
		return false
	}
	for _, j := range []int{perception.KpLeftKnee, perception.KpRightKnee} {
		if k := p.Keypoints[j]; k.Visibility > 0.5 && k.Y > float64(hipY) && k.Y < float64(h) {
			return true
		}
	}
	return false
}

// medianColour is the per-channel median of px (not empty).
func medianColour(px []color.RGBA) color.RGBA {
	ch := func(get func(color.RGBA) uint8) uint8 {
		v := make([]int, len(px))
		for i, c := range px {
			v[i] = int(get(c))
		}
		sort.Ints(v)
		return uint8(v[len(v)/2])
	}
	return color.RGBA{ch(func(c color.RGBA) uint8 { return c.R }), ch(func(c color.RGBA) uint8 { return c.G }), ch(func(c color.RGBA) uint8 { return c.B }), 255}
}

// smoothFill is how the classical notes describe where the person stood;
// once the generative fill has redrawn that region the phrase is untrue.
const smoothFill = "where the person used to stand it is a smooth fill"

// classicalNotes copies the classical view's notes for a generative output
// made by method, saying where the person stood was generated when the
// generative fill ran.
func classicalNotes(notes []string, method string) []string {
	out := make([]string, len(notes))
	for i, n := range notes {
		if strings.Contains(method, "generative-fill") {
			n = strings.ReplaceAll(n, smoothFill, "where the person used to stand it is generated (see below)")
		}
		out[i] = n
	}
	return out
}
