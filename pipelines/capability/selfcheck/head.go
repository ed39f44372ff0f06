package selfcheck

import (
	"context"
	"fmt"
	"image"

	"fashiond/perception"
	"fashiond/pipelines"
)

// NameDuplicatedHead is the duplicated-head check's name.
const NameDuplicatedHead = "duplicated_head"

// MaxDuplicatedHead is the most heads the subject may show on an output
// beyond its heads on the source: none. Measured on the classical outputs
// of the pose-control, angle-generation and model-create tests on the
// shared photos (17 re-poses of codait_man_standing, fashn_model,
// fashn_garment and both two-person photos; 24 angle views of every
// shared photo, back views included; 7 model-create re-poses of the
// seated-man preset), all looked at, none showing a second head: 0 on
// every one (one face on the source, one or none on the output). Built
// damage (TestDuplicatedHeadOnPhotos): the subject's head pasted beside,
// above or on the shoulder, and the subject re-rendered beside a plate
// that kept it, on codait_man_standing, fashn_model, the bikes and the
// phones photos: 1.
const MaxDuplicatedHead = 0

// DuplicatedHead counts the subject's heads on out against src: the faces
// the face detector finds whose box centre lies on the subject's region
// (from 128; a region includes its blend band and excludes every other
// person's pixels, as OwnAlpha and body.Analysis.ConfineMoved give it).
// On src, srcRegion is the subject's and every face the detector returns
// counts; on out, a face counts on any of outRegions (where the subject
// is and where it stood: a plate that kept the old head shows it there),
// and only as a head (isHead: the video person count's rule), so a
// doubtful face on the source raises the allowance rather than the count.
// The value is the heads on out beyond the larger of one and the
// source's: a person seen from behind or in profile, whose face the
// detector does not find, still has one head, and the output may show
// one face for it. A second head that shows no face (the back of a head
// beside the back of a head) is not seen: the pose model finds one
// person's head keypoints, never two, so it cannot count them.
func DuplicatedHead(ctx context.Context, p perception.Perception, src, out image.Image, srcRegion *image.Gray, outRegions ...*image.Gray) (pipelines.Check, error) {
	sf, err := p.Faces(ctx, src)
	if err != nil {
		return pipelines.Check{}, fmt.Errorf("selfcheck: faces: %w", err)
	}
	of, err := p.Faces(ctx, out)
	if err != nil {
		return pipelines.Check{}, fmt.Errorf("selfcheck: faces: %w", err)
	}
	had := 0
	for _, f := range sf {
		if centreOn(f, srcRegion) {
			had++
		}
	}
	b := out.Bounds()
	px := float64(b.Dx() * b.Dy())
	has := 0
	for _, f := range of {
		if !isHead(f, px) {
			continue
		}
		for _, r := range outRegions {
			if centreOn(f, r) {
				has++
				break
			}
		}
	}
	return pipelines.MaxCheck(NameDuplicatedHead, float64(max(0, has-max(1, had))), MaxDuplicatedHead), nil
}

// centreOn reports whether face f's box centre (image pixels from the
// origin) lies on m (from 128; m's origin at (0,0)).
func centreOn(f perception.Face, m *image.Gray) bool {
	x, y := int((f.Box[0]+f.Box[2])/2), int((f.Box[1]+f.Box[3])/2)
	if m == nil || x < 0 || y < 0 || x >= m.Rect.Dx() || y >= m.Rect.Dy() {
		return false
	}
	return m.Pix[y*m.Stride+x] >= 128
}
