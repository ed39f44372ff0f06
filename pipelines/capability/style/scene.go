package style

import (
	"context"
	"errors"
	"fmt"
	"image"
	"math"

	"fashiond/perception"
	"fashiond/pipelines"
	"fashiond/pipelines/capability/body"
	"fashiond/pipelines/capability/mask"
	"fashiond/pipelines/capability/raster"
	"fashiond/pipelines/capability/selfcheck"
)

// Backdrop rule. A studio backdrop (styleId "studio", "minimalist")
// replaces the background behind the person; it is painted only where a
// picture editor would accept it as the same photo shot in a studio:
//
//   - exactly one person in the photo: with several people a backdrop
//     would have to cut out every one of them and everything they touch
//     (bicycles, chairs, a neighbour's arm); the classical masks cannot
//     promise that, and a half-erased or floating neighbour is worse than
//     no backdrop. On multi-person photos the others stay part of the
//     scene: the look's colour, tone and finish are applied to the whole
//     photo, the background is kept, and a note says so;
//   - the person is not seated: a seat is not part of the person mask, so
//     a backdrop would leave a seated person floating in the air. A
//     person counts as seated when a visible thigh (hip to knee) lies more
//     than SeatedThighDeg from the vertical.
//
// The flash falloff and shadow use the mask on any photo (they change the
// light, not what is in the frame).
const (
	// SeatedThighDeg is the thigh angle from the vertical, in degrees,
	// beyond which a person counts as seated.
	SeatedThighDeg = 50
	// minJointVis is the keypoint visibility from which a hip or knee is
	// used for the seated test.
	minJointVis = 0.5
	// minPosePresence is the pose presence from which the pose is trusted.
	minPosePresence = 0.5
)

// Check names and limits of styled outputs.
const (
	// NamePaintedOver is the share of the people's own pixels (their
	// regions less an inner margin of one blend band) that the backdrop
	// painted over.
	NamePaintedOver = "person_painted_over"
	// MaxPaintedOver is its limit. Measured (studio and minimalist, the
	// masks of subjectMask): 0.0001 to 0.0117 on product-to-model's
	// outputs on the shared standing photos and presets (fashn_garment,
	// codait_man_standing and its cut-out, man-standing-office); the
	// half-painted blotches on fashn_garment's black trousers under the
	// old two-model mask were 0.024 (the red tee dressed on it) and 0.062
	// (the photo itself), the dog of pexels_woman_dog_standing 0.069.
	MaxPaintedOver = 0.02
	// paintedLevel: a pixel whose backdrop weight (1 - matte) is above
	// this counts as painted over: a quarter of the light-grey paper
	// mixed into black trousers lifts them by about a fifth of the scale,
	// a blotch anyone sees (the trousers' blotches were half-painted,
	// weight about 0.5, and a level of 0.5 counted 739 of their 5,251
	// pixels).
	paintedLevel = 0.25
)

// Scene is a photo's people as the style sees them: the body analysis,
// the mask the flash and backdrop use, and whether a backdrop may be
// painted (see the backdrop rule).
type Scene struct {
	a    *body.Analysis
	mask *image.Gray
	// refusal says why a backdrop may not be painted ("" when it may).
	refusal string
}

// AnalyzeScene analyses the people in img for styling. A photo without a
// person is a scene without people: the look is applied without a
// backdrop (nothing to cut out).
func AnalyzeScene(ctx context.Context, p perception.Perception, img image.Image) (*Scene, error) {
	a, err := body.Analyze(ctx, p, img)
	if errors.Is(err, body.ErrNoPerson) {
		return &Scene{refusal: "no person was found to place in front of it"}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("style: %w", err)
	}
	m, pose, err := subjectMask(ctx, p, img)
	if err != nil {
		return nil, fmt.Errorf("style: %w", err)
	}
	b := img.Bounds()
	s := &Scene{a: a, mask: m}
	s.refusal = refusal(a, pose, b.Dx(), b.Dy())
	return s, nil
}

// refusal applies the backdrop rule to an analysis and the pose on a w x h
// photo.
func refusal(a *body.Analysis, pose *perception.Pose, w, h int) string {
	if n := len(a.People); n > 1 {
		return fmt.Sprintf("the photo shows %d people; a backdrop would erase or float the others, so they stay part of the scene", n)
	}
	if deg, ok := thighAngle(pose, w, h); ok && deg > SeatedThighDeg {
		return fmt.Sprintf("the person is seated (thigh %.0f° from vertical); a backdrop would remove the seat and leave them floating", deg)
	}
	return ""
}

// thighAngle is the largest angle from the vertical, in degrees, of the
// visible thighs of a trusted pose (hip and knee visible and inside the w x
// h frame: a half-body photo's guessed legs do not count); ok is false when
// no thigh is visible.
func thighAngle(pose *perception.Pose, w, h int) (deg float64, ok bool) {
	if pose == nil || pose.Presence < minPosePresence {
		return 0, false
	}
	for _, leg := range [][2]int{{perception.KpLeftHip, perception.KpLeftKnee}, {perception.KpRightHip, perception.KpRightKnee}} {
		hp, k := pose.Keypoints[leg[0]], pose.Keypoints[leg[1]]
		if !shown(hp, w, h) || !shown(k, w, h) {
			continue
		}
		dx, dy := k.X-hp.X, k.Y-hp.Y
		if dx == 0 && dy == 0 {
			continue
		}
		deg = math.Max(deg, math.Atan2(math.Abs(dx), dy)*180/math.Pi)
		ok = true
	}
	return deg, ok
}

// shown reports whether a keypoint is visible and inside the w x h frame.
func shown(k perception.Keypoint, w, h int) bool {
	return k.Visibility >= minJointVis && k.X >= 0 && k.Y >= 0 && k.X < float64(w) && k.Y < float64(h)
}

// Backdrop reports whether a backdrop may be painted, and why not.
func (s *Scene) Backdrop() (bool, string) { return s.refusal == "", s.refusal }

// Styled is a styled photo with its notes and self-checks.
type Styled struct {
	Image  *image.RGBA
	Notes  []string
	Checks []pipelines.Check
}

// ApplyScene applies style id to img (the photo the scene was analysed
// on, or one of the same size with the same people in place) under the
// backdrop rule, and measures the result: the share of the people painted
// over by a backdrop, and the subject's face still found where it was.
func ApplyScene(ctx context.Context, p perception.Perception, img image.Image, id string, seed int64, s *Scene) (*Styled, error) {
	l, err := lookFor(id, img)
	if err != nil {
		return nil, err
	}
	src := raster.CopyRGBA(img)
	why := s.refusal
	out, matte := l.apply(src, Options{Seed: seed, PersonMask: s.mask, NoBackdrop: why != ""})
	painted := 0.0
	if s.a != nil {
		painted = paintedOver(s.a, matte, transparent(src))
	}
	if painted > MaxPaintedOver {
		why = fmt.Sprintf("its cut-out would have painted over %.1f%% of the people (limit %.0f%%)", 100*painted, 100*MaxPaintedOver)
		out, _ = l.apply(src, Options{Seed: seed, PersonMask: s.mask, NoBackdrop: true})
		painted = 0
	}
	res := &Styled{Image: out}
	if l.backdrop != nil && why != "" {
		res.Notes = append(res.Notes, fmt.Sprintf("styleId %s: backdrop not painted: %s; the look's colour and finish are applied to the whole photo", id, why))
	}
	if s.a == nil {
		return res, nil
	}
	res.Checks = append(res.Checks, pipelines.MaxCheck(NamePaintedOver, round4(painted), MaxPaintedOver))
	if f := s.a.SubjectPerson().Face; f != nil {
		found, err := selfcheck.FaceFound(ctx, p, out, *f)
		if err != nil {
			return nil, fmt.Errorf("style: %w", err)
		}
		res.Checks = append(res.Checks, found)
	}
	return res, nil
}

// paintedOver is the share of every person's region, less an inner margin
// of one blend band (where the analysis mask and the backdrop matte may
// honestly disagree) and less the pixels clear reports transparent (nil:
// none; never the person, though the region may take a cut-out's dark
// gap between the legs), whose backdrop weight is above paintedLevel. 0
// without a backdrop.
func paintedOver(a *body.Analysis, matte []float32, clear func(i int) bool) float64 {
	if matte == nil {
		return 0
	}
	all := image.NewGray(image.Rect(0, 0, a.W, a.H))
	for i := range a.People {
		for k, v := range a.People[i].Region.Pix {
			all.Pix[k] = max(all.Pix[k], v)
		}
	}
	inner := mask.Erode(all, a.Band())
	n, painted := 0, 0
	for k, v := range inner.Pix {
		if v < body.MaskThreshold || (clear != nil && clear(k)) {
			continue
		}
		n++
		if 1-matte[k] > paintedLevel {
			painted++
		}
	}
	if n == 0 {
		return 0
	}
	return float64(painted) / float64(n)
}

func round4(v float64) float64 { return math.Round(v*1e4) / 1e4 }
