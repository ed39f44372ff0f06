package body

import (
	"image"
	"testing"

	"fashiond/perception"
)

// skeleton is a pose whose body joints from first to last (inclusive) are
// seen at (x, 10+5*j) with visibility vis; presence is the pose model's.
func skeleton(first, last int, x, vis, presence float64) *perception.Pose {
	p := &perception.Pose{Presence: presence}
	for j := first; j <= last; j++ {
		p.Keypoints[j] = perception.Keypoint{X: x, Y: 10 + 5*float64(j), Visibility: vis}
	}
	return p
}

func TestPosedPerson(t *testing.T) {
	const w, h = 100, 200
	person := rects(w, h, image.Rect(40, 0, 60, h))
	tests := []struct {
		name string
		pose *perception.Pose
		pm   *image.Gray
		want bool
	}{
		// A back view: no face, a low presence, the joints on the mask.
		{"body joints on the person mask, low presence", skeleton(11, 28, 50, 0.9, 0.45), person, true},
		// A striped flat-lay tee: the pose model sees a whole skeleton
		// (presence 0.70, measured) but the segmentation holds no person.
		{"skeleton on an empty person mask", skeleton(11, 28, 50, 1, 0.7), rects(w, h), false},
		{"skeleton beside the person", skeleton(11, 28, 10, 1, 0.7), person, false},
		{"too few joints seen", skeleton(11, 13, 50, 1, 0.7), person, false},
		{"joints seen, no shoulder among them", skeleton(13, 28, 50, 1, 0.7), person, false},
		{"joints below the visibility floor", skeleton(11, 28, 50, MinJointVisibility/2, 0.7), person, false},
		{"no pose", nil, person, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := PosedPerson(tc.pose, tc.pm); got != tc.want {
				n, sh := JointsOnMask(tc.pose, tc.pm)
				t.Fatalf("PosedPerson = %v, want %v (%d joints on the mask, shoulder %v)", got, tc.want, n, sh)
			}
		})
	}
}
