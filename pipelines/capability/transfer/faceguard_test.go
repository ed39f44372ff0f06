package transfer

import (
	"errors"
	"strings"
	"testing"

	"fashiond/perception"
	"fashiond/pipelines"
)

// TestGuardShoulders: shoulders below the chin and wide enough stay; high
// ones drop to minNeckDrop face heights below the chin (and report the
// drop); coincident ones (a side view) spread level to minShoulderFaces
// face widths about their midpoint; no face leaves them.
func TestGuardShoulders(t *testing.T) {
	face := &perception.Face{Box: [4]float64{100, 100, 200, 220}} // 100 wide, 120 high, chin at 220
	pt := func(x, y float64) perception.Point { return perception.Point{X: x, Y: y} }
	for _, tc := range []struct {
		name         string
		f            *perception.Face
		l, r         perception.Point
		wantL, wantR perception.Point
		wantDrop     float64
		wantMoved    bool
	}{
		{"frontal photo kept", face, pt(40, 300), pt(260, 300), pt(40, 300), pt(260, 300), 0, false},
		{"high shoulders dropped, tilt kept", face, pt(40, 230), pt(260, 240), pt(40, 251), pt(260, 261), 21, true},
		{"side view spread", face, pt(145, 300), pt(155, 300), pt(90, 300), pt(210, 300), 0, true},
		{"crossed joints spread level", face, pt(155, 300), pt(145, 300), pt(90, 300), pt(210, 300), 0, true},
		{"no face", nil, pt(145, 100), pt(155, 100), pt(145, 100), pt(155, 100), 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, r, drop, moved := guardShoulders(tc.f, tc.l, tc.r)
			if !near(l.X, tc.wantL.X, 1e-9) || !near(l.Y, tc.wantL.Y, 1e-9) || !near(r.X, tc.wantR.X, 1e-9) || !near(r.Y, tc.wantR.Y, 1e-9) {
				t.Errorf("shoulders %v %v, want %v %v", l, r, tc.wantL, tc.wantR)
			}
			if !near(drop, tc.wantDrop, 1e-9) || moved != tc.wantMoved {
				t.Errorf("drop %v moved %v, want %v %v", drop, moved, tc.wantDrop, tc.wantMoved)
			}
		})
	}
}

// TestGuardPoseFails: shoulders on the face and shoulders too close to the
// bottom edge are job errors saying why; the arms drop with moved
// shoulders.
func TestGuardPoseFails(t *testing.T) {
	face := &perception.Face{Box: [4]float64{100, 100, 200, 220}}
	for _, tc := range []struct {
		name    string
		h       int
		l, r    perception.Point
		wantErr string
		wantElY float64
	}{
		{"shoulders on the face", 800, perception.Point{X: 120, Y: 150}, perception.Point{X: 180, Y: 160}, "put the subject's shoulders on the face", 0},
		{"just under the chin counts as on the face", 800, perception.Point{X: 40, Y: 225}, perception.Point{X: 260, Y: 225}, "on the face", 0},
		{"portrait cut at the shoulders", 300, perception.Point{X: 40, Y: 260}, perception.Point{X: 260, Y: 260}, "too little of the body", 0},
		{"high shoulders dropped with the arms", 800, perception.Point{X: 40, Y: 240}, perception.Point{X: 260, Y: 240}, "", 416},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &body{w: 300, h: tc.h, face: face, shL: tc.l, shR: tc.r, elL: perception.Point{X: 30, Y: 400}}
			err := b.guardPose()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if !near(b.elL.Y, tc.wantElY, 1e-9) || !b.shouldersGuessed {
					t.Errorf("elbow y %v guessed %v, want %v true", b.elL.Y, b.shouldersGuessed, tc.wantElY)
				}
				return
			}
			var pe *pipelines.Error
			if !errors.As(err, &pe) || !strings.Contains(pe.Msg, tc.wantErr) {
				t.Fatalf("err %v, want a job error containing %q", err, tc.wantErr)
			}
		})
	}
}
