package perception

import (
	"context"
	"errors"
	"image"
)

// BodyPoser is the project's body-pose model (BlazePose through the
// perception suite).
type BodyPoser interface {
	Pose(ctx context.Context, img image.Image) (*Pose, error)
}

// BlazePoseSource is the PoseSource used when DWPose is not installed: the
// OpenPose-18 body built from BlazePose's 33 landmarks (the neck is the
// shoulders' midpoint), without hands or face. FASHN VTON was trained on
// DWPose maps; a map without hands and face is a weaker condition, and the
// output notes say which source drew it.
type BlazePoseSource struct {
	P BodyPoser
}

// blazeVisible is the visibility × presence a BlazePose landmark needs to be
// drawn.
const blazeVisible = 0.5

// openPoseFromBlaze lists, per OpenPose point, its BlazePose landmark (-1:
// the neck, computed).
var openPoseFromBlaze = [dwBodyPoints]int{KpNose, -1, KpRightShoulder, KpRightElbow, KpRightWrist,
	KpLeftShoulder, KpLeftElbow, KpLeftWrist, KpRightHip, KpRightKnee, KpRightAnkle,
	KpLeftHip, KpLeftKnee, KpLeftAnkle, KpRightEye, KpLeftEye, KpRightEar, KpLeftEar}

// Detect implements PoseSource.
func (s BlazePoseSource) Detect(ctx context.Context, img image.Image) (PoseDict, error) {
	if s.P == nil {
		return PoseDict{}, errors.New("pose: no body-pose model")
	}
	p, err := s.P.Pose(ctx, img)
	if err != nil {
		return PoseDict{}, err
	}
	b := img.Bounds()
	return poseDictFromBlaze(p, b.Dx(), b.Dy()), nil
}

func poseDictFromBlaze(p *Pose, w, h int) PoseDict {
	d := PoseDict{Candidate: make([][2]float64, dwBodyPoints), Subset: [][]float64{make([]float64, dwBodyPoints)}}
	seen := func(k Keypoint) bool { return k.Visibility*k.Presence > blazeVisible }
	for i, bi := range openPoseFromBlaze {
		var k Keypoint
		ok := false
		if bi >= 0 {
			k, ok = p.Keypoints[bi], seen(p.Keypoints[bi])
		} else {
			l, r := p.Keypoints[KpLeftShoulder], p.Keypoints[KpRightShoulder]
			k = Keypoint{X: (l.X + r.X) / 2, Y: (l.Y + r.Y) / 2}
			ok = seen(l) && seen(r)
		}
		d.Candidate[i] = [2]float64{k.X / float64(w), k.Y / float64(h)}
		d.Subset[0][i] = -1
		if ok && p.Presence > blazeVisible {
			d.Subset[0][i] = float64(i)
		}
	}
	return d
}
