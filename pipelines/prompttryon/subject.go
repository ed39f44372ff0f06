package prompttryon

import (
	"context"
	"errors"
	"fmt"
	"image"
	"math"

	"fashiond/perception"
	"fashiond/pipelines"
	"fashiond/pipelines/capability/body"
	"fashiond/pipelines/capability/recolour"
	"fashiond/pipelines/capability/selfcheck"
)

// subject is the working image with its chosen subject: the garments are
// found and dressed on the subject's crop, and the result is confined to
// the subject's region and blend band.
type subject struct {
	p       perception.Perception
	img     *image.RGBA
	a       *body.Analysis
	crop    image.Rectangle
	cropImg *image.RGBA
	alpha   *image.Gray
}

// findSubject analyses the people in img and chooses the subject (body
// package rule). No face and no person-sized mask is a NoPersonError.
func findSubject(ctx context.Context, p perception.Perception, img *image.RGBA) (*subject, error) {
	a, err := body.Analyze(ctx, p, img)
	if errors.Is(err, body.ErrNoPerson) {
		e := fmt.Errorf("prompt-tryon: %w in the image to dress; use a photo of a person wearing the garment to change", err)
		return nil, &pipelines.Error{Msg: e.Error(), Err: err}
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, pipelines.Transientf("prompt-tryon: perception failed: %v", err)
	}
	crop := a.CropRect()
	return &subject{p: p, img: img, a: a, crop: crop, cropImg: a.HideOthers(body.Crop(img, crop), crop), alpha: a.EditAlpha()}, nil
}

// regionsErr words a findRegions failure on the subject's crop: the pose
// model's "no person" becomes a reason about the chosen subject when a
// face was detected.
func (s *subject) regionsErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var np *recolour.NoPersonError
	if !errors.As(err, &np) {
		return pipelines.Transientf("prompt-tryon: perception failed: %v", err)
	}
	if len(s.a.Faces) > 0 {
		return pipelines.Failf("prompt-tryon: the subject (%s) was found but its body has no visible shoulders to dress (pose presence %.2f)", s.a.Rule, np.Presence)
	}
	return &pipelines.Error{Msg: err.Error(), Err: err}
}

// confine places the dressed crop back, keeps everything outside the
// subject's region and band pixel-identical, and measures the result.
func (s *subject) confine(ctx context.Context, dressed *image.RGBA) (*image.RGBA, []pipelines.Check, error) {
	out := body.ConfineCrop(s.img, dressed, s.crop, s.alpha)
	checks := []pipelines.Check{selfcheck.ChangedOutsideSubject(s.img, out, s.a)}
	if f := s.a.SubjectPerson().Face; f != nil {
		found, err := selfcheck.FaceFound(ctx, s.p, out, *f)
		if err != nil {
			return nil, nil, pipelines.Transientf("prompt-tryon: %v", err)
		}
		checks = append(checks, selfcheck.FaceChange(s.img, out, *f), found)
	}
	return out, checks, nil
}

// notes says which person was dressed when there are several.
func (s *subject) notes() []string {
	if len(s.a.People) < 2 {
		return nil
	}
	return []string{fmt.Sprintf("subject: %s; the other people and the rest of the photo are unchanged (a styleId still restyles the whole frame)", s.a.Rule)}
}

// faceInCrop is the subject's face box in crop coordinates, or nil.
func (s *subject) faceInCrop() *image.Rectangle {
	f := s.a.SubjectPerson().Face
	if f == nil {
		return nil
	}
	r := image.Rect(int(f.Box[0]), int(f.Box[1]), int(math.Ceil(f.Box[2])), int(math.Ceil(f.Box[3]))).Sub(s.crop.Min)
	return &r
}
