package repose

import (
	"fmt"
	"math"

	"fashiond/perception"
)

// What a source photo must show for re-posing, beyond SourceUsable: the
// body below the face (BodyBelowFace) and every arm a target moves
// (MovedArmsVisible). Without them the pose model's skeleton is a guess,
// the re-pose moves whatever pixels lie under the guess (the face, a dog's
// paws) and the output is torn; the job then fails with a misleading
// pose_agreement of 0 instead of saying what the photo lacks.
const (
	// MinTorsoFaces is the shortest torso (mid-shoulder to mid-hip) the
	// pose model may report, in heights of the subject's face box. On the
	// project's photos that show the body it is 1.00-2.91 (astronaut 1.00,
	// fashn_garment 1.15, pexels_two_women_phones 1.12, codait_man 2.53); on
	// head-and-shoulders portraits, where the model puts the skeleton on
	// the face, 0.36-0.72.
	MinTorsoFaces = 0.9
	// MinArmVisibility is the smallest pose-model visibility of an elbow
	// or wrist whose arm a target may move. On the project's photos the
	// arms that are seen are at 0.51 or more; the arm of
	// pexels_woman_dog_standing hidden behind the dog is at 0.06 (elbow)
	// and 0.18 (wrist).
	MinArmVisibility = 0.3
)

// NoBodyError is BodyBelowFace's verdict: Reason says what the pose model
// found instead of a body; the message adds what re-posing needs. Other
// users of the verdict (angle-generation's back view) read Reason with
// errors.As.
type NoBodyError struct {
	Reason string
}

func (e *NoBodyError) Error() string {
	return e.Reason + "; re-posing needs the shoulders, arms and torso visible below the face"
}

// BodyBelowFace says why the pose model's skeleton does not describe the
// body (nil when it does): a shoulder lies inside the subject's face box
// (the face box that holds the pose's nose, else the nearest one) or the
// torso is shorter than MinTorsoFaces face heights. Both mean the photo
// shows a face, not a body: a head-and-shoulders portrait. No face, no
// verdict (nil).
func BodyBelowFace(pose *perception.Pose, faces []perception.Face) error {
	if pose == nil {
		return nil
	}
	f, ok := subjectFace(pose.Keypoints[perception.KpNose], faces)
	if !ok {
		return nil
	}
	k := pose.Keypoints
	for _, j := range []int{perception.KpLeftShoulder, perception.KpRightShoulder} {
		if inBox(k[j].X, k[j].Y, f.Box) {
			return &NoBodyError{Reason: "the body is not in the photo: the pose model puts the shoulders on the face (a head-and-shoulders portrait?)"}
		}
	}
	sh := perception.Point{X: (k[11].X + k[12].X) / 2, Y: (k[11].Y + k[12].Y) / 2}
	hip := perception.Point{X: (k[23].X + k[24].X) / 2, Y: (k[23].Y + k[24].Y) / 2}
	torso, fh := norm(sub(sh, hip)), f.Box[3]-f.Box[1]
	if fh > 0 && torso < MinTorsoFaces*fh {
		return &NoBodyError{Reason: fmt.Sprintf("the body is not in the photo: the torso the pose model finds (%.0f px) is shorter than %.1f face heights (the face is %.0f px tall), so its skeleton lies on the head (a head-and-shoulders portrait?)", torso, MinTorsoFaces, fh)}
	}
	return nil
}

// subjectFace is the face whose box holds p, else the face whose box
// centre is nearest to p; false when there is no face.
func subjectFace(p perception.Keypoint, faces []perception.Face) (perception.Face, bool) {
	best, bd := -1, math.Inf(1)
	for i, f := range faces {
		if inBox(p.X, p.Y, f.Box) {
			return f, true
		}
		if d := math.Hypot((f.Box[0]+f.Box[2])/2-p.X, (f.Box[1]+f.Box[3])/2-p.Y); d < bd {
			best, bd = i, d
		}
	}
	if best < 0 {
		return perception.Face{}, false
	}
	return faces[best], true
}

func inBox(x, y float64, b [4]float64) bool { return x >= b[0] && x <= b[2] && y >= b[1] && y <= b[3] }

// armJoints are each arm's shoulder, elbow and wrist, with the arm's name.
var armJoints = []struct {
	name               string
	shoulder, elb, wri int
}{
	{"left", perception.KpLeftShoulder, perception.KpLeftElbow, perception.KpLeftWrist},
	{"right", perception.KpRightShoulder, perception.KpRightElbow, perception.KpRightWrist},
}

// MovedArmsVisible says why target cannot be reached from the photo (nil
// when it can): it moves an arm (an upper arm or forearm of
// Retarget(target, source) turned by more than MovedDeg from source) whose
// elbow or wrist the pose model sees with a visibility below
// MinArmVisibility on pose, the source photo's pose: the arm is hidden
// (behind an animal, an object, the body) or outside the frame, and
// re-posing would move whatever pixels lie where the model guesses it.
func MovedArmsVisible(pose *perception.Pose, source, target Skeleton) error {
	if pose == nil {
		return nil
	}
	o := Retarget(target, source)
	for _, a := range armJoints {
		if !boneMoved(source, o, a.shoulder, a.elb) && !boneMoved(source, o, a.elb, a.wri) {
			continue
		}
		for _, j := range []struct {
			name string
			i    int
		}{{"elbow", a.elb}, {"wrist", a.wri}} {
			if v := pose.Keypoints[j.i].Visibility; v < MinArmVisibility {
				return fmt.Errorf("the pose moves the person's %s arm, which the photo does not show (the pose model sees its %s with visibility %.2f, below %.1f: hidden behind something or outside the frame); only limbs the photo shows can be moved", a.name, j.name, v, MinArmVisibility)
			}
		}
	}
	return nil
}

// boneMoved reports whether bone a-b of o points more than MovedDeg away
// from the same bone of s (bones shorter than a pixel do not move).
func boneMoved(s, o Skeleton, a, b int) bool {
	sd, od := sub(s.Joints[b], s.Joints[a]), sub(o.Joints[b], o.Joints[a])
	return norm(sd) >= 1 && norm(od) >= 1 && degBetween(sd, od) > MovedDeg
}
