package selfcheck

import (
	"context"
	"fmt"
	"image"
	"math"

	"fashiond/perception"
	"fashiond/pipelines"
	"fashiond/pipelines/capability/mask"
)

// Video check names.
const (
	NameVideoPersonCount = "video_person_count_change"
	NameVideoAreaJump    = "video_subject_area_jump"
)

// Limits and tuning of the video checks.
const (
	// MaxVideoPersonCountChange is the largest difference between the
	// number of people on a sampled frame and on the first sampled frame:
	// none may appear or vanish (a second head or torso is a second
	// person).
	MaxVideoPersonCountChange = 0
	// MaxVideoAreaJump is the largest relative change of the people's area
	// (person mask pixels) between two neighbouring sampled frames. A
	// camera move changes it smoothly (a 6 s push-in by about 10% between
	// samples); a duplicated or torn subject changes it by a third or more.
	MaxVideoAreaJump = 0.25
	// videoPersonLevel: a person-mask value from which a pixel is a
	// person's.
	videoPersonLevel = 128
	// videoMinPersonFrac and videoMinPieceShare: a connected piece of
	// person mask counts as a person from this share of the frame and of
	// the largest piece (smaller pieces are hands, specks, a chair's edge
	// that the segmentation takes and drops from frame to frame: on a
	// seated man's push-in a piece of 3.4% of the frame, 9% of the man's,
	// came and went).
	videoMinPersonFrac = 0.01
	videoMinPieceShare = 0.2
	// videoAreaFloor: the area jump is relative to the larger of the two
	// frames' areas, and at least this share of the frame (small people
	// far off have noisy masks: two cyclists at 4% of the frame change
	// by a quarter of their area from frame to frame).
	videoAreaFloor = 0.1
	// headMinFaceFrac and headMinFaceScore: a detected face counts as a
	// head from this share of the frame and this score (the video person
	// count, and a head on duplicated_head's output).
	headMinFaceFrac  = 0.001
	headMinFaceScore = 0.7
)

// VideoFrame is what the video checks see on one sampled frame.
type VideoFrame struct {
	// People is the number of people: the larger of the person mask's
	// pieces of at least videoMinPersonFrac of the frame and
	// videoMinPieceShare of the largest piece, and the faces
	// detected (a duplicated head beside the body joins the body's mask
	// piece but is a second face; a person seen from behind has no face
	// but a mask piece).
	People int
	// Area is the share of the frame the person mask covers.
	Area float64
}

// MeasureVideoFrame runs the person mask and the face detector on one frame.
func MeasureVideoFrame(ctx context.Context, p perception.Perception, frame image.Image) (VideoFrame, error) {
	m, err := p.PersonMask(ctx, frame)
	if err != nil {
		return VideoFrame{}, fmt.Errorf("selfcheck: person mask: %w", err)
	}
	faces, err := p.Faces(ctx, frame)
	if err != nil {
		return VideoFrame{}, fmt.Errorf("selfcheck: faces: %w", err)
	}
	b := frame.Bounds()
	px := float64(b.Dx() * b.Dy())
	_, sizes := mask.Components(mask.Binary(m, videoPersonLevel))
	var vf VideoFrame
	pieces, covered, largest := 0, 0, 0
	for _, s := range sizes[1:] {
		covered += s
		largest = max(largest, s)
	}
	for _, s := range sizes[1:] {
		if float64(s) >= videoMinPersonFrac*px && float64(s) >= videoMinPieceShare*float64(largest) {
			pieces++
		}
	}
	nf := 0
	for _, f := range faces {
		if isHead(f, px) {
			nf++
		}
	}
	vf.People = max(pieces, nf)

	vf.Area = float64(covered) / px
	return vf, nil
}

// VideoChecks measures sampled frames in order: the person count change
// against the first frame (NameVideoPersonCount) and the largest relative
// change of the people's area between neighbouring frames
// (NameVideoAreaJump, relative to the larger of the two and at least
// videoAreaFloor).
func VideoChecks(frames []VideoFrame) []pipelines.Check {
	change, jump := 0, 0.0
	for i, f := range frames {
		change = max(change, abs(f.People-frames[0].People))
		if i == 0 {
			continue
		}
		hi := math.Max(videoAreaFloor, math.Max(f.Area, frames[i-1].Area))
		jump = math.Max(jump, math.Abs(f.Area-frames[i-1].Area)/hi)
	}
	return []pipelines.Check{
		pipelines.MaxCheck(NameVideoPersonCount, float64(change), MaxVideoPersonCountChange),
		pipelines.MaxCheck(NameVideoAreaJump, round4(jump), MaxVideoAreaJump),
	}
}

func abs(v int) int { return max(v, -v) }

// isHead reports whether a detected face counts as a person's head on an
// image of px pixels: a score of at least headMinFaceScore and a box of at
// least headMinFaceFrac of the image.
func isHead(f perception.Face, px float64) bool {
	return f.Score >= headMinFaceScore && (f.Box[2]-f.Box[0])*(f.Box[3]-f.Box[1]) >= headMinFaceFrac*px
}
