package perception

import (
	"image"
	"math"
	"slices"
	"testing"
)

func TestDWPoseSmallPieces(t *testing.T) {
	if got := linspaceU8(20, 240, 18); !slices.Equal(got, []uint8{20, 32, 45, 58, 71, 84, 97, 110, 123, 136, 149, 162, 175, 188, 201, 214, 227, 240}) {
		t.Errorf("linspace body greys %v", got)
	}
	for _, c := range [][3]int{{7, 2, 3}, {-7, 2, -4}, {-8, 2, -4}, {0, 2, 0}, {-1, 2, -1}} {
		if got := floorDiv(c[0], c[1]); got != c[2] {
			t.Errorf("%d // %d = %d, want %d", c[0], c[1], got, c[2])
		}
	}
	if cvSinTable[30] != 0.5 || cvSinTable[1] != float32(0.0174524) || cvSinTable[450] != 1 || cvSinTable[270] != -1 {
		t.Errorf("sine table %v %v %v %v", cvSinTable[30], cvSinTable[1], cvSinTable[450], cvSinTable[270])
	}
}

func TestFashnFitAndNearestExact(t *testing.T) {
	cases := []struct {
		w, h int
		want FashnFit
	}{
		{576, 864, FashnFit{W: 576, H: 864, TW: 576, TH: 864}},
		// 3:4 at 648×864: width-bound, 576×768, 48 black rows above and below.
		{648, 864, FashnFit{W: 576, H: 768, TW: 576, TH: 864, Top: 48, Bottom: 48}},
		// Narrow: height-bound, an odd margin puts the extra column right.
		{401, 864, FashnFit{W: 401, H: 864, TW: 576, TH: 864, Left: 87, Right: 88}},
		// Small: enlarged to fit.
		{100, 100, FashnFit{W: 576, H: 576, TW: 576, TH: 864, Top: 144, Bottom: 144}},
	}
	for _, c := range cases {
		if got := fashnFit(c.w, c.h, 576, 864); got != c.want {
			t.Errorf("%dx%d: %+v, want %+v", c.w, c.h, got, c.want)
		}
	}
	src := image.NewGray(image.Rect(0, 0, 4, 1))
	copy(src.Pix, []uint8{10, 20, 30, 40})
	// Halving with centres aligned takes source pixels 1 and 3.
	if got := resizeNearestExact(src, 2, 1).Pix; !slices.Equal(got, []uint8{20, 40}) {
		t.Errorf("nearest-exact 4→2: %v", got)
	}
	// Doubling repeats each pixel twice.
	if got := resizeNearestExact(src, 8, 1).Pix; !slices.Equal(got, []uint8{10, 10, 20, 20, 30, 30, 40, 40}) {
		t.Errorf("nearest-exact 4→8: %v", got)
	}
}

func TestDrawPoseGrayShapes(t *testing.T) {
	g, err := DrawPoseGray(DummyPose(), 60, 90)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range g.Pix {
		if v != 0 {
			t.Fatal("the flat-lay dummy pose drew something")
		}
	}
	// One limb (neck 2 → right shoulder 3, limb 0, grey 20): an ellipse at
	// 60% (12) along x from 20 to 60 on row 50, both points as discs of
	// radius 4 at min(255, int(20·1.3)) = 26 (each point takes the grey of
	// its first limb, here 2→3 for both).
	p := PoseDict{Candidate: make([][2]float64, 18), Subset: [][]float64{make([]float64, 18)}}
	for i := range p.Subset[0] {
		p.Subset[0][i] = -1
	}
	p.Candidate[1], p.Candidate[2] = [2]float64{0.2, 0.5}, [2]float64{0.6, 0.5}
	p.Subset[0][1], p.Subset[0][2] = 1, 2
	g, err = DrawPoseGray(p, 100, 100)
	if err != nil {
		t.Fatal(err)
	}
	at := func(x, y int) uint8 { return g.Pix[y*100+x] }
	if at(40, 50) != 12 || at(40, 53) != 12 || at(40, 56) != 0 {
		t.Errorf("limb pixels %d %d %d, want 12 12 0", at(40, 50), at(40, 53), at(40, 56))
	}
	if at(20, 50) != 26 || at(20, 54) != 26 || at(60, 50) != 26 || at(64, 50) != 26 || at(65, 50) != 0 {
		t.Errorf("point discs %d %d %d %d %d", at(20, 50), at(20, 54), at(60, 50), at(64, 50), at(65, 50))
	}
	bad := p
	bad.Subset = [][]float64{slices.Repeat([]float64{40}, 18)}
	if _, err := DrawPoseGray(bad, 10, 10); err == nil {
		t.Error("a subset index past the candidates drew")
	}
	if _, err := DrawPoseGray(p, 0, 10); err == nil {
		t.Error("a zero-width map drew")
	}
}

func TestSimCCDecodeAndOpenPoseOrder(t *testing.T) {
	// Two keypoints, SimCC widths 6 and 8 on a 3×4 input (split 2): the
	// first at bins (4, 2) → (2, 1); the second with a negative maximum.
	sx := []float32{0, 0.1, 0, 0, 0.9, 0, -1, -0.5, -0.2, -0.3, -0.9, -0.4}
	sy := []float32{0, 0, 0.7, 0, 0, 0, 0, 0, -1, -1, -1, -1, -1, -1, -0.1, -1}
	center, scale := [2]float64{50, 60}, [2]float64{30, 40}
	kp, sc, err := simccDecode(sx, sy, 2, 6, 8, 3, 4, center, scale)
	if err != nil {
		t.Fatal(err)
	}
	// x = 2/3·30 + 50 − 15 = 55, y = 1/4·40 + 60 − 20 = 50; score min(0.9, 0.7).
	if math.Abs(kp[0][0]-55) > 1e-9 || math.Abs(kp[0][1]-50) > 1e-9 || math.Abs(sc[0]-0.7) > 1e-6 {
		t.Errorf("keypoint 0 %v score %v", kp[0], sc[0])
	}
	// Not detected: location −1/2 → −0.5/3·30 + 35 = 30.
	if math.Abs(kp[1][0]-30) > 1e-9 || sc[1] >= 0 {
		t.Errorf("keypoint 1 %v score %v", kp[1], sc[1])
	}
	if _, _, err := simccDecode(sx[:5], sy, 2, 6, 8, 3, 4, center, scale); err == nil {
		t.Error("short SimCC output accepted")
	}
	kps := make([][2]float64, 133)
	scs := make([]float64, 133)
	for i := range kps {
		kps[i] = [2]float64{float64(i), 0}
		scs[i] = 0.5
	}
	scs[6] = 0.2
	k2, s2 := mmposeToOpenPose(kps, scs)
	// OpenPose 1 is the neck (5+6)/2 with score 0 (right shoulder weak);
	// 2 is mmpose 6, 5 is mmpose 5, 14 is mmpose 2 (right eye); the
	// wholebody points shift by one.
	if len(k2) != 134 || k2[1][0] != 5.5 || s2[1] != 0 || k2[2][0] != 6 || k2[5][0] != 5 || k2[14][0] != 2 || k2[18][0] != 17 {
		t.Errorf("openpose order: %v %v %v %v %v %v", k2[1], s2[1], k2[2], k2[5], k2[14], k2[18])
	}
}

func TestNMSKeepsTheBestOfOverlaps(t *testing.T) {
	boxes := [][4]float32{{0, 0, 10, 10}, {1, 0, 11, 10}, {50, 50, 60, 60}, {0, 0, 10, 10}}
	scores := []float32{0.6, 0.9, 0.5, 0.2}
	if got := nmsKeep(boxes, scores, 0.45); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("kept %v, want [1 2]", got)
	}
}
