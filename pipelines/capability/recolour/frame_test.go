package recolour

import (
	"testing"

	"fashiond/perception"
)

// TestFaceOverShoulders: the pose's shoulders inside a face box (above its
// lowest quarter) mark the skeleton as wrong; shoulders at or below the
// chin band, or beside the face, do not. Values are the pose model's and
// the face detector's on the test photos.
func TestFaceOverShoulders(t *testing.T) {
	pose := func(lx, ly, rx, ry float64) *perception.Pose {
		p := &perception.Pose{}
		p.Keypoints[perception.KpLeftShoulder] = perception.Keypoint{X: lx, Y: ly, Visibility: 1}
		p.Keypoints[perception.KpRightShoulder] = perception.Keypoint{X: rx, Y: ry, Visibility: 1}
		return p
	}
	cases := []struct {
		name  string
		pose  *perception.Pose
		faces []perception.Face
		want  bool
	}{
		{"portrait: shoulders at the eyes", pose(241, 297, 354, 314), []perception.Face{{Box: [4]float64{161, 137, 503, 578}}}, true},
		{"side view: shoulders in the hair", pose(190, 141, 286, 155), []perception.Face{{Box: [4]float64{140, 90, 277, 285}}}, true},
		{"full body: shoulders below the chin", pose(196, 248, 183, 254), []perception.Face{{Box: [4]float64{169, 160, 229, 234}}}, false},
		{"shoulders at the chin", pose(1026, 529, 621, 506), []perception.Face{{Box: [4]float64{652, 102, 973, 517}}}, false},
		{"in the lowest quarter", pose(100, 180, 120, 180), []perception.Face{{Box: [4]float64{50, 0, 150, 200}}}, false},
		{"beside the face", pose(300, 100, 340, 100), []perception.Face{{Box: [4]float64{50, 0, 150, 200}}}, false},
		{"second face", pose(300, 100, 340, 100), []perception.Face{{Box: [4]float64{50, 0, 150, 200}}, {Box: [4]float64{250, 20, 400, 220}}}, true},
		{"no face", pose(241, 297, 354, 314), nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := faceOverShoulders(c.pose, c.faces) != nil; got != c.want {
				t.Errorf("faceOverShoulders = %v, want %v", got, c.want)
			}
		})
	}
}

// TestFaceGeometry: the face-anchored frame on the portrait's face puts
// the waist below the 790-pixel frame (all garments are the top) and on a
// small face high in a tall frame inside it.
func TestFaceGeometry(t *testing.T) {
	for _, c := range []struct {
		box         [4]float64
		h           int
		waistY      float64
		hipsInFrame bool
	}{
		{[4]float64{161, 137, 503, 578}, 790, 578 + 2.3*441, false},
		{[4]float64{100, 50, 160, 130}, 1000, 130 + 2.3*80, true},
	} {
		r := &Regions{w: 700, h: c.h}
		r.faceGeometry(&perception.Face{Box: c.box})
		if r.waistY != c.waistY || r.hipsInFrame != c.hipsInFrame || !r.FramedByFace() || r.upY != -1 {
			t.Errorf("box %v: waist %.1f in frame %v framed %v up %v, want %.1f %v", c.box, r.waistY, r.hipsInFrame, r.FramedByFace(), r.upY, c.waistY, c.hipsInFrame)
		}
	}
}
