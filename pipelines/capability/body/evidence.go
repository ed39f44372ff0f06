package body

import (
	"image"

	"fashiond/perception"
)

// Person evidence without a face: the pose model's skeleton confirmed by
// the person segmentation. A person seen from behind or in profile shows
// no face, yet the pose model still finds the body's joints and the
// segmentation covers them; a garment photo makes the pose model guess a
// skeleton too (a striped flat-lay tee: presence 0.70, 18 joints seen), but
// the person segmentation does not cover it, so none of those joints lie
// on a person.
const (
	// MinJointVisibility is the pose model's visibility from which a body
	// joint counts as seen.
	MinJointVisibility = 0.5
	// MinJointsOnMask is how many seen body joints (shoulders to ankles)
	// must lie on the person mask, a shoulder among them. Measured on the
	// shared photos (pose model, selfie segmentation): people 4 (a face
	// close-up) to 18 (full body, also with the face painted over);
	// flat-lay and ghost-mannequin garments 0.
	MinJointsOnMask = 4
)

// bodyJoints are BlazePose's body joints from the shoulders to the feet.
var bodyJoints = func() []int {
	var js []int
	for j := perception.KpLeftShoulder; j <= 32; j++ {
		js = append(js, j)
	}
	return js
}()

// JointsOnMask counts the body joints the pose model sees (visibility at
// least MinJointVisibility, inside the image) that lie on the person mask
// (pm, image-sized, on from MaskThreshold), and reports whether a shoulder
// is one of them.
func JointsOnMask(pose *perception.Pose, pm *image.Gray) (n int, shoulder bool) {
	if pose == nil || pm == nil {
		return 0, false
	}
	w, h := pm.Rect.Dx(), pm.Rect.Dy()
	for _, j := range bodyJoints {
		k := pose.Keypoints[j]
		x, y := int(k.X), int(k.Y)
		if k.Visibility < MinJointVisibility || k.X < 0 || k.Y < 0 || x >= w || y >= h {
			continue
		}
		if pm.Pix[y*pm.Stride+x] >= MaskThreshold {
			n++
			shoulder = shoulder || j == perception.KpLeftShoulder || j == perception.KpRightShoulder
		}
	}
	return n, shoulder
}

// PosedPerson reports whether the pose and the person mask together show a
// person, with or without a face: at least MinJointsOnMask seen body
// joints on the mask, a shoulder among them.
func PosedPerson(pose *perception.Pose, pm *image.Gray) bool {
	n, shoulder := JointsOnMask(pose, pm)
	return n >= MinJointsOnMask && shoulder
}
