// Package repose is the re-posing capability: it reads a target pose from
// a template image (pose model) or from a text through a pose vocabulary
// (pipelines/posecontrol/POSES.md), retargets it to the source's bone
// lengths, anchored at the hips, and deforms the person of a scene by
// linear blend skinning of a triangle grid (arms as separate layers, the
// body under them inpainted), drawn over the background plate with the
// person removed. It also measures how well an output agrees with the
// target pose (PoseAgreement).
//
// The pose-control and model-create pipelines call it; it imports no model
// pipeline.
package repose

import (
	"context"
	"errors"
	"image"
	"math"

	"fashiond/perception"
	"fashiond/pipelines/capability/raster"
	"fashiond/pipelines/capability/scene"
)

// Method is Output.Method of every re-posed result.
const Method = "lbs-mesh-warp"

// Notes are what the reference re-posing cannot do, said on every result.
var Notes = []string{
	"occluded body parts are not hallucinated: what the source photo does not show stays hidden or is filled from nearby texture",
	"large rotations out of the image plane (turning, bending towards the camera) are approximated by in-plane bone rotations",
}

// MaxWorkPixels is the working resolution cap of re-posing; the pipeline's
// tier step reaches the requested size.
const MaxWorkPixels = 1_100_000

// SourceUsable says why a scene cannot be re-posed (nil when it can): a
// person must be present with shoulders and hips the pose model sees.
func SourceUsable(sc *scene.Scene) error {
	if sc == nil || !sc.HasPerson || sc.Pose == nil || sc.Pose.Presence < 0.5 {
		return errors.New("no person found")
	}
	k := sc.Pose.Keypoints
	for _, j := range []int{11, 12} {
		if k[j].Visibility < 0.3 {
			return errors.New("the person's shoulders are not visible")
		}
	}
	return nil
}

// TargetFromImage estimates the target skeleton from a template image with
// the pose model. It fails when no person is found or too few body joints
// are visible to define a pose.
func TargetFromImage(ctx context.Context, p perception.Perception, img image.Image) (Skeleton, error) {
	if p == nil {
		return Skeleton{}, errors.New("no pose model")
	}
	b := img.Bounds()
	pose, err := p.Pose(ctx, FitPixels(img, MaxWorkPixels))
	if err != nil {
		return Skeleton{}, err
	}
	fb := FitPixels(img, MaxWorkPixels).Bounds()
	s := SkeletonFromPose(pose, fb.Dx(), fb.Dy())
	// Back to the template's pixels (only directions matter, but keep the
	// skeleton in the image it came from).
	if fb.Dx() != b.Dx() {
		k := float64(b.Dx()) / float64(fb.Dx())
		for i := range s.Joints {
			s.Joints[i] = scale(s.Joints[i], k)
			s.Z[i] *= k
		}
	}
	// Legs the model only guesses (out of the frame) are unknown: the
	// source keeps its own leg angles there.
	rel := legReliability(pose, s)
	for i, l := range []limbIdx{legOf(sideLeft), legOf(sideRight)} {
		if !rel.thigh[i] {
			s.Known[l.mid] = false
		}
		if !rel.shin[i] {
			s.Known[l.end] = false
		}
		if !rel.foot[i] {
			for _, j := range extremities(l.end) {
				s.Known[j] = false
			}
		}
	}
	n := 0
	for _, j := range BodyJoints {
		if s.Known[j] {
			n++
		}
	}
	if pose.Presence < 0.5 || !s.Known[11] || !s.Known[12] || n < 5 {
		return Skeleton{}, errors.New("no person found in the template image")
	}
	return s, nil
}

// FitPixels downsizes img (Lanczos-quality) so it has at most maxPx pixels;
// smaller images are returned as *image.RGBA unchanged.
func FitPixels(img image.Image, maxPx int) *image.RGBA {
	b := img.Bounds()
	px := b.Dx() * b.Dy()
	if px <= maxPx {
		return raster.RGBA(img)
	}
	k := math.Sqrt(float64(maxPx) / float64(px))
	return raster.Resize(img, max(1, int(float64(b.Dx())*k)), max(1, int(float64(b.Dy())*k)))
}
