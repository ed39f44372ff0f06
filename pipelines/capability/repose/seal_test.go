package repose

import (
	"image"
	"image/color"
	"testing"
)

// TestSealCracks: two red blocks of a re-posed person meeting across a
// 2-pixel crack of partial coverage (the white plate showing through) are
// joined in red; a 30-pixel gap and the soft outer edge stay as they are.
func TestSealCracks(t *testing.T) {
	const w, h = 200, 100
	out := image.NewRGBA(image.Rect(0, 0, w, h))
	alpha := image.NewGray(out.Rect)
	red, white := color.RGBA{200, 20, 20, 255}, color.RGBA{255, 255, 255, 255}
	for y := range h {
		for x := range w {
			out.SetRGBA(x, y, white)
		}
	}
	paint := func(x0, x1 int, a uint8) {
		for y := 20; y < 80; y++ {
			for x := x0; x < x1; x++ {
				out.SetRGBA(x, y, red)
				alpha.SetGray(x, y, color.Gray{Y: a})
			}
		}
	}
	paint(10, 60, 255)
	paint(62, 100, 255)  // a crack at x 60, 61
	paint(130, 180, 255) // a 30-pixel gap at 100..129
	for y := 20; y < 80; y++ {
		for x := 60; x < 62; x++ {
			out.SetRGBA(x, y, color.RGBA{240, 200, 200, 255}) // mostly plate
			alpha.SetGray(x, y, color.Gray{Y: 60})
		}
		alpha.SetGray(9, y, color.Gray{Y: 120}) // the soft outer edge
	}
	sealCracks(out, alpha)
	for _, c := range []struct {
		name  string
		x, y  int
		alpha uint8
		rgb   color.RGBA
	}{
		{"crack", 60, 50, 255, red},
		{"crack", 61, 30, 255, red},
		{"wide gap", 115, 50, 0, white},
		{"outer edge", 9, 50, 120, white},
	} {
		if a, p := alpha.GrayAt(c.x, c.y).Y, out.RGBAAt(c.x, c.y); a != c.alpha || p != c.rgb {
			t.Errorf("%s (%d,%d): alpha %d colour %v, want %d %v", c.name, c.x, c.y, a, p, c.alpha, c.rgb)
		}
	}
}
