package selfcheck

import (
	"image"
	"image/color"
	"testing"

	"fashiond/perception"
)

// TestArmPaintedShare: an upper arm along x from (20,50) to (80,50) (its
// band 0.12 of 60 = 7.2 pixels either side); the output repaints parts of
// it, and only the repainted pixels outside the garment layer count.
func TestArmPaintedShare(t *testing.T) {
	const w, h = 100, 100
	var pose perception.Pose
	pose.Keypoints[perception.KpLeftShoulder] = perception.Keypoint{X: 20, Y: 50, Visibility: 0.9}
	pose.Keypoints[perception.KpLeftElbow] = perception.Keypoint{X: 80, Y: 50, Visibility: 0.9}
	src := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range src.Pix {
		src.Pix[i] = 120
	}
	paint := func(x0, x1 int, c uint8) *image.RGBA {
		out := image.NewRGBA(src.Rect)
		copy(out.Pix, src.Pix)
		for y := range h {
			for x := x0; x < x1; x++ {
				out.SetRGBA(x, y, color.RGBA{c, c, c, 255})
			}
		}
		return out
	}
	layerLeft := image.NewGray(image.Rect(0, 0, 50, h)) // covers x < 50
	for i := range layerLeft.Pix {
		layerLeft.Pix[i] = 255
	}
	shifted := &image.Gray{Pix: layerLeft.Pix, Stride: layerLeft.Stride, Rect: layerLeft.Rect.Add(image.Pt(50, 0))} // covers x >= 50
	for _, c := range []struct {
		name  string
		out   *image.RGBA
		layer *image.Gray
		hide  bool // the elbow unseen
		want  float64
	}{
		{"unchanged", paint(0, 0, 0), nil, false, 0},
		{"within tolerance", paint(0, w, 140), nil, false, 0},
		{"all painted, no garment", paint(0, w, 200), nil, false, 1},
		{"all painted, left half under the garment", paint(0, w, 200), layerLeft, false, 0.5071},
		{"layer placed by its Rect", paint(0, w, 200), shifted, false, 0.4929},
		{"painted beyond the band", paint(90, w, 200), nil, false, 0},
		{"elbow unseen", paint(0, w, 200), nil, true, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := pose
			if c.hide {
				p.Keypoints[perception.KpLeftElbow].Visibility = 0.2
			}
			if got := armPainted(src, c.out, &p, c.layer, nil); got != c.want {
				t.Errorf("armPainted = %v, want %v", got, c.want)
			}
		})
	}
}
