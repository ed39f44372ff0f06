package perception_test

import (
	"context"
	"image"
	"testing"

	"github.com/disintegration/imaging"

	"fashiond/internal/pipelinetest"
	"fashiond/internal/testenv"
	"fashiond/perception"
)

// TestRatioCropRect: where the largest a:b crop goes, for a framing.
func TestRatioCropRect(t *testing.T) {
	r := image.Rect(0, 0, 800, 1200) // 2:3; 4:5 -> 800x1000, 16:9 -> 800x450, 9:16 -> 675x1200
	tests := []struct {
		name  string
		r     image.Rectangle
		ratio [2]int
		f     perception.Framing
		want  image.Rectangle
	}{
		{"no subject: centred", r, [2]int{4, 5}, perception.Framing{}, image.Rect(0, 100, 800, 1100)},
		{"same ratio: whole", r, [2]int{2, 3}, perception.Framing{Subject: image.Rect(0, 0, 10, 10)}, r},
		{"subject in the centred crop: unmoved", r, [2]int{4, 5}, perception.Framing{Subject: image.Rect(200, 300, 600, 900)}, image.Rect(0, 100, 800, 1100)},
		// 1000 tall with 30 px above and below (3% of 1000): 1060 > 1000,
		// so the bare subject, moved up from 100 to its top.
		{"tall subject near the top: moved up to its top", r, [2]int{4, 5}, perception.Framing{Subject: image.Rect(100, 40, 700, 1040)}, image.Rect(0, 40, 800, 1040)},
		// 800 tall: the margin (24) fits; the crop moves down just enough.
		{"subject near the bottom: moved down with its margin", r, [2]int{4, 5}, perception.Framing{Subject: image.Rect(100, 380, 700, 1180)}, image.Rect(0, 200, 800, 1200)},
		{"subject near the top: with its margin", r, [2]int{4, 5}, perception.Framing{Subject: image.Rect(100, 50, 700, 850)}, image.Rect(0, 26, 800, 1026)},
		// Taller than the crop, no face: the head with its margin (3% of 1150 = 34).
		{"taller than the crop, no face: head first", r, [2]int{4, 5}, perception.Framing{Subject: image.Rect(100, 50, 700, 1200)}, image.Rect(0, 16, 800, 1016)},
		// 16:9: the head (top 50 to the face's bottom 300, +34) fits.
		{"taller, with a face: the head", r, [2]int{16, 9}, perception.Framing{Subject: image.Rect(100, 50, 700, 1200), Face: image.Rect(300, 120, 500, 300)}, image.Rect(0, 16, 800, 466)},
		// The head (200..1000) cannot fit in 450: centred on the face.
		{"close-up: centred on the face", r, [2]int{16, 9}, perception.Framing{Subject: image.Rect(0, 200, 800, 1200), Face: image.Rect(150, 400, 650, 900)}, image.Rect(0, 425, 800, 875)},
		// 9:16: 675 wide; subject 700 wide: centred on the face.
		{"wider than the crop: centred on the face", r, [2]int{9, 16}, perception.Framing{Subject: image.Rect(50, 100, 750, 1100), Face: image.Rect(500, 150, 700, 350)}, image.Rect(125, 0, 800, 1200)},
		{"wider than the crop, no face: centred on the subject", r, [2]int{9, 16}, perception.Framing{Subject: image.Rect(0, 100, 760, 1100)}, image.Rect(42, 0, 717, 1200)},
		{"offset bounds", r.Add(image.Pt(10, 20)), [2]int{4, 5}, perception.Framing{Subject: image.Rect(110, 60, 710, 1060)}, image.Rect(10, 60, 810, 1060)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := perception.RatioCropRect(tc.r, tc.ratio[0], tc.ratio[1], tc.f); got != tc.want {
				t.Errorf("RatioCropRect = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRatioCropKeepsSubject: on real photos the ratio crop of ToTier
// keeps the subject whole when it fits, else the head or the face. The
// 4:5 crop of fashn_model.webp (832x1248, hat top at row ~51) starts at
// row 16: the centred crop (row 104) cut off the top of the hat (issue
// 22). Expected rectangles were checked by eye (FASHIOND_TEST_OUT keeps
// the crops); the tolerance allows for the models' numerical noise.
func TestRatioCropKeepsSubject(t *testing.T) {
	s, ok := pipelinetest.Perception(t).(*perception.Suite)
	if !ok {
		t.Fatal("pipelinetest.Perception is not a *models.Suite")
	}
	const tol = 12 // pixels
	tests := []struct {
		image, ratio string
		want         image.Rectangle
		keep         image.Rectangle // must lie inside the crop
	}{
		// The hat (top ~51) and the face kept; the boots lose their soles.
		{"fashn_model.webp", "4:5", image.Rect(0, 16, 832, 1056), image.Rect(300, 51, 600, 400)},
		{"fashn_model.webp", "16:9", image.Rect(0, 16, 832, 484), image.Rect(300, 51, 600, 400)},
		// Woman and dog (57..827) whole in 800 rows.
		{"pexels_woman_dog_standing.jpg", "4:5", image.Rect(0, 57, 640, 857), image.Rect(78, 57, 555, 827)},
		// A close-up at 16:9: the face, eyes to lips (rows ~300..720).
		{"pexels_woman_facepaint_portrait.png", "16:9", image.Rect(0, 268, 860, 752), image.Rect(250, 330, 610, 720)},
		// Standing man at 1:1: from the top of his head.
		{"codait_man_standing.jpg", "1:1", image.Rect(0, 0, 413, 413), image.Rect(150, 0, 260, 120)},
		// Two cyclists at 4:5: both whole.
		{"pixabay_two_women_bikes.jpg", "4:5", image.Rect(299, 0, 981, 853), image.Rect(399, 281, 901, 853)},
	}
	for _, tc := range tests {
		t.Run(tc.image+" "+tc.ratio, func(t *testing.T) {
			img := pipelinetest.Image(t, "images/"+tc.image)
			a, b, _ := perception.ParseRatio(tc.ratio)
			got, err := s.RatioCrop(context.Background(), img, a, b)
			if err != nil {
				t.Fatal(err)
			}
			testenv.WritePNG(t, "ratiocrop-"+tc.image+"-"+tc.ratio[:1]+"x"+tc.ratio[len(tc.ratio)-1:]+".png", imaging.Crop(img, got))
			if got.Size() != tc.want.Size() || abs(got.Min.X-tc.want.Min.X) > tol || abs(got.Min.Y-tc.want.Min.Y) > tol {
				t.Errorf("crop %v, want %v (±%d px)", got, tc.want, tol)
			}
			if !tc.keep.In(got) {
				t.Errorf("crop %v does not keep %v", got, tc.keep)
			}
		})
	}
}

func abs(v int) int { return max(v, -v) }
