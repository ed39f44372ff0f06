package repose

import (
	"strings"
	"testing"

	"fashiond/perception"
)

// poseOf is the pose model result of skeleton s with every joint's
// visibility vis, except those set in low.
func poseOf(s Skeleton, vis float64, low map[int]float64) *perception.Pose {
	p := &perception.Pose{Presence: 1}
	for i, j := range s.Joints {
		p.Keypoints[i] = perception.Keypoint{X: j.X, Y: j.Y, Visibility: vis}
		if v, ok := low[i]; ok {
			p.Keypoints[i].Visibility = v
		}
	}
	return p
}

// TestBodyBelowFace: the synthetic body (shoulders at y=300, hips at 600,
// nose at 400,200) under a face box of the usual size passes; a face box
// that holds a shoulder, or one so tall that the torso is shorter than
// 0.9 face heights, is a portrait; no face is no verdict.
func TestBodyBelowFace(t *testing.T) {
	pose := poseOf(synthetic(), 1, nil)
	for _, c := range []struct {
		name  string
		faces []perception.Face
		err   string
	}{
		{"usual face", []perception.Face{{Box: [4]float64{360, 150, 440, 250}}}, ""},
		{"no face", nil, ""},
		{"face holding a shoulder", []perception.Face{{Box: [4]float64{300, 100, 500, 310}}}, "puts the shoulders on the face"},
		{"torso 300 px under a 340 px face", []perception.Face{{Box: [4]float64{340, 0, 460, 340}}}, "the torso the pose model finds (300 px) is shorter than 0.9 face heights (the face is 340 px tall)"},
		{"torso 300 px under a 330 px face passes", []perception.Face{{Box: [4]float64{340, 0, 460, 330}}}, ""},
		{"a neighbour's face on a shoulder is not the subject's", []perception.Face{{Box: [4]float64{460, 260, 560, 400}}, {Box: [4]float64{360, 150, 440, 250}}}, ""},
		{"else the nearest face", []perception.Face{{Box: [4]float64{900, 0, 1000, 500}}, {Box: [4]float64{300, 230, 500, 310}}}, "puts the shoulders on the face"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := BodyBelowFace(pose, c.faces)
			if (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
				t.Fatalf("got %v, want %q", err, c.err)
			}
		})
	}
}

// TestMovedArmsVisible: "arms raised" moves both arms, "arm raised" only
// the right one; an arm the text moves whose elbow or wrist is below
// visibility 0.3 fails naming the arm and the joint, an unmoved hidden
// arm does not matter.
func TestMovedArmsVisible(t *testing.T) {
	src := synthetic()
	for _, c := range []struct {
		text string
		low  map[int]float64
		err  string
	}{
		{"arms raised", nil, ""},
		{"arms raised", map[int]float64{perception.KpLeftElbow: 0.06, perception.KpLeftWrist: 0.18}, "moves the person's left arm, which the photo does not show (the pose model sees its elbow with visibility 0.06, below 0.3"},
		{"arms raised", map[int]float64{perception.KpRightWrist: 0.29}, "moves the person's right arm, which the photo does not show (the pose model sees its wrist with visibility 0.29"},
		{"arms raised", map[int]float64{perception.KpRightWrist: 0.3}, ""},
		{"right arm raised", map[int]float64{perception.KpLeftElbow: 0.06}, ""},
		{"right arm raised", map[int]float64{perception.KpRightElbow: 0.1}, "right arm"},
		{"arms down", map[int]float64{perception.KpLeftElbow: 0.06, perception.KpRightElbow: 0.06}, ""},
	} {
		t.Run(c.text, func(t *testing.T) {
			pp, err := ParsePoseText(c.text)
			if err != nil {
				t.Fatal(err)
			}
			target, err := pp.Apply(src)
			if err != nil {
				t.Fatal(err)
			}
			err = MovedArmsVisible(poseOf(src, 0.9, c.low), src, target)
			if (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
				t.Fatalf("got %v, want %q", err, c.err)
			}
		})
	}
}
