package transfer

import (
	"image"
	"image/draw"
	"testing"

	"fashiond/perception"
)

func TestTryOnSteps(t *testing.T) {
	cases := map[string]int{"": 20, AccuracyStandard: 20, AccuracyHigh: 30, AccuracyHyper: 50, "ultra": 0}
	for acc, want := range cases {
		if got := TryOnSteps(acc); got != want {
			t.Errorf("TryOnSteps(%q) = %d, want %d", acc, got, want)
		}
	}
}

// TestTryOnRegion: the layer and the replaced region are joined, grown by
// TryOnGrowPx, and the face box (widened by TryOnFaceMargin, in the
// photo's coordinates, shifted by the crop's origin) is cut out.
func TestTryOnRegion(t *testing.T) {
	box := func(r image.Rectangle) *image.Gray {
		m := image.NewGray(image.Rect(0, 0, 100, 100))
		draw.Draw(m, r, image.White, image.Point{}, draw.Src)
		return m
	}
	info := &TransferInfo{Layer: box(image.Rect(20, 40, 60, 80)), Replaced: box(image.Rect(50, 30, 70, 50))}
	// A 20×20 face at (30,40)-(50,60) in the photo, whose crop starts at
	// (0,10): in the crop (30,30)-(50,50), widened by 3 px: (27,27)-(53,53).
	face := &perception.Face{Box: [4]float64{30, 40, 50, 60}}
	cases := []struct {
		name   string
		face   *perception.Face
		origin image.Point
		in     []image.Point
		out    []image.Point
	}{
		{"no face", nil, image.Point{}, []image.Point{{20, 40}, {59, 79}, {69, 30}, {18, 40}, {71, 35}}, []image.Point{{17, 40}, {75, 60}, {10, 10}}},
		{"face in a crop", face, image.Pt(0, 10), []image.Point{{40, 58}, {40, 79}}, []image.Point{{40, 45}, {52, 52}}},
		{"face over the region", &perception.Face{Box: [4]float64{50, 20, 70, 40}}, image.Point{}, []image.Point{{40, 60}, {65, 45}}, []image.Point{{55, 35}, {69, 30}, {60, 40}}},
	}
	for _, c := range cases {
		m := info.TryOnRegion(c.face, c.origin)
		for _, p := range c.in {
			if m.GrayAt(p.X, p.Y).Y < 128 {
				t.Errorf("%s: %v is outside the region", c.name, p)
			}
		}
		for _, p := range c.out {
			if m.GrayAt(p.X, p.Y).Y >= 128 {
				t.Errorf("%s: %v is inside the region", c.name, p)
			}
		}
	}
}
