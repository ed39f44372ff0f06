package garment

import (
	"image"
	"image/color"
	"math"
	"testing"

	"fashiond/internal/pipelinetest"
)

// TestDeltaE2000Sharma checks pairs from Sharma, Wu and Dalal's CIEDE2000
// test data.
func TestDeltaE2000Sharma(t *testing.T) {
	for _, tc := range []struct {
		a, b Lab
		want float64
	}{
		{Lab{50, 2.6772, -79.7751}, Lab{50, 0, -82.7485}, 2.0425},
		{Lab{50, 3.1571, -77.2803}, Lab{50, 0, -82.7485}, 2.8615},
		{Lab{50, 2.8361, -74.0200}, Lab{50, 0, -82.7485}, 3.4412},
		{Lab{50, -1.3802, -84.2814}, Lab{50, 0, -82.7485}, 1.0000},
		{Lab{50, 2.5, 0}, Lab{50, 0, -2.5}, 4.3065},
		{Lab{60.2574, -34.0099, 36.2677}, Lab{60.4626, -34.1751, 39.4387}, 1.2644},
		{Lab{22.7233, 20.0904, -46.6940}, Lab{23.0331, 14.9730, -42.5619}, 2.0373},
		{Lab{50, 2.5, 0}, Lab{73, 25, -18}, 27.1492},
	} {
		if got := DeltaE2000Lab(tc.a, tc.b); math.Abs(got-tc.want) > 1e-4 {
			t.Errorf("%v vs %v: %.4f, want %.4f", tc.a, tc.b, got, tc.want)
		}
	}
	if d := DeltaE2000(color.RGBA{200, 30, 40, 255}, color.RGBA{200, 30, 40, 255}); d != 0 {
		t.Errorf("same colour: %v", d)
	}
	white := ToLab(255, 255, 255)
	if math.Abs(white.L-100) > 0.01 || math.Abs(white.A) > 0.01 || math.Abs(white.B) > 0.01 {
		t.Errorf("white is %v", white)
	}
}

func TestSSIM(t *testing.T) {
	img := pipelinetest.Image(t, "images/fashn_model.webp")
	r := image.Rect(380, 120, 560, 300)
	if s := SSIM(img, img, r); math.Abs(s-1) > 1e-9 {
		t.Errorf("identical: %v", s)
	}
	b := img.Bounds()
	shifted := image.NewRGBA(b)
	noisy := image.NewRGBA(b)
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			shifted.Set(x, y, img.At(x+3, y))
			c := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)
			n := uint8((x*7 + y*13) % 9)
			noisy.Set(x, y, color.RGBA{c.R/2 + n*8, c.G/2 + n*8, c.B/2 + n*8, 255})
		}
	}
	s1, s2 := SSIM(img, shifted, r), SSIM(img, noisy, r)
	if s1 > 0.95 || s2 > 0.8 || s1 < 0 {
		t.Errorf("shifted %.3f (want < 0.95), noisy %.3f (want < 0.8)", s1, s2)
	}
	m := image.NewGray(b)
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			m.SetGray(x, y, color.Gray{255})
		}
	}
	if s := SSIMMasked(img, shifted, m); math.Abs(s-s1) > 0.05 {
		t.Errorf("masked %.3f vs rect %.3f", s, s1)
	}
}
