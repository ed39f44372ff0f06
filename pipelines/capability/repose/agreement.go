package repose

import (
	"context"
	"fmt"
	"image"
	"math"

	"fashiond/perception"
	"fashiond/pipelines"
	"fashiond/pipelines/capability/body"
	"fashiond/pipelines/capability/scene"
)

// Pose agreement: the output's pose is re-estimated with the pose model
// (everything outside the re-posed person and its blend band greyed out,
// so a neighbour's pose is not measured) and compared with the target
// skeleton the person was moved to.
const (
	// NamePoseAgreement is the check's name.
	NamePoseAgreement = "pose_agreement"
	// MinPoseAgreement is the smallest share of the moved limb bones
	// (agreement) whose re-estimated direction must lie within PoseTolDeg
	// of the target's.
	MinPoseAgreement = 0.5
	// PoseTolDeg is the largest angle, in degrees, between a bone's
	// re-estimated and target directions that agrees.
	PoseTolDeg = 35
	// MovedDeg: a bone the request turned by more than this many degrees
	// is a moved bone (the others are not measured: they agree trivially).
	MovedDeg = 20
)

// PoseAgreement re-estimates the pose of out (greyed outside person and
// its band, when person is not nil) and measures its agreement with
// target, the skeleton the source was moved to (agreement).
func PoseAgreement(ctx context.Context, p perception.Perception, out *image.RGBA, person *image.Gray, band float64, source, target Skeleton) (pipelines.Check, error) {
	c, _, err := PoseAgreementMissed(ctx, p, out, person, band, source, target)
	return c, err
}

// PoseAgreementMissed is PoseAgreement that also names the moved bones the
// output does not show in the target's direction ("right forearm"), for a
// failure's message.
func PoseAgreementMissed(ctx context.Context, p perception.Perception, out *image.RGBA, person *image.Gray, band float64, source, target Skeleton) (pipelines.Check, []string, error) {
	img := out
	if person != nil {
		img = scene.OnlySubject(out, body.BandAlpha(person, band))
	}
	pose, err := p.Pose(ctx, img)
	if err != nil {
		return pipelines.Check{}, nil, fmt.Errorf("pose agreement: %w", err)
	}
	w, h := out.Rect.Dx(), out.Rect.Dy()
	v, _, missed := agreementMissed(SkeletonFromPose(pose, w, h), source, target, w, h)
	return pipelines.MinCheck(NamePoseAgreement, math.Round(v*1e4)/1e4, MinPoseAgreement), missed, nil
}

// limbBones are the bones the agreement measures: upper arms, forearms,
// thighs and shins, named in boneNames.
var limbBones = [][2]int{{11, 13}, {13, 15}, {12, 14}, {14, 16}, {23, 25}, {25, 27}, {24, 26}, {26, 28}}

// boneNames name limbBones (the person's left and right).
var boneNames = []string{"left upper arm", "left forearm", "right upper arm", "right forearm", "left thigh", "left shin", "right thigh", "right shin"}

// agreement is the share of the moved limb bones (limbBones whose target
// direction differs from the source's by more than MovedDeg, both target
// joints inside the w x h frame) whose direction on got is within
// PoseTolDeg of the target's, and their number. A moved bone got does not
// find (a joint hidden) counts as missed; with no moved bone the agreement
// is 1. Bones shorter than a pixel are not measured.
func agreement(got, source, target Skeleton, w, h int) (float64, int) {
	v, n, _ := agreementMissed(got, source, target, w, h)
	return v, n
}

// agreementMissed is agreement with the names of the missed bones.
func agreementMissed(got, source, target Skeleton, w, h int) (float64, int, []string) {
	hit, n := 0, 0
	var missed []string
	for i, b := range limbBones {
		td, sd := sub(target.Joints[b[1]], target.Joints[b[0]]), sub(source.Joints[b[1]], source.Joints[b[0]])
		if norm(td) < 1 || norm(sd) < 1 || degBetween(td, sd) <= MovedDeg ||
			!inFrame(target.Joints[b[0]], w, h) || !inFrame(target.Joints[b[1]], w, h) {
			continue
		}
		n++
		if got.Known[b[0]] && got.Known[b[1]] && degBetween(td, sub(got.Joints[b[1]], got.Joints[b[0]])) <= PoseTolDeg {
			hit++
		} else {
			missed = append(missed, boneNames[i])
		}
	}
	if n == 0 {
		return 1, 0, nil
	}
	return float64(hit) / float64(n), n, missed
}

// degBetween is the angle between two directions in degrees (180 when
// either is zero).
func degBetween(a, b perception.Point) float64 {
	if norm(a) < 1e-9 || norm(b) < 1e-9 {
		return 180
	}
	return math.Abs(wrapAngle(angle(a)-angle(b))) * 180 / math.Pi
}

func inFrame(p perception.Point, w, h int) bool {
	return p.X >= 0 && p.Y >= 0 && p.X < float64(w) && p.Y < float64(h)
}
