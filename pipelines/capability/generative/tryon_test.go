package generative_test

import (
	"context"
	"image"
	"image/color"
	"math"
	"testing"

	"fashiond/diffusion"
	"fashiond/internal/pipelinetest"
	"fashiond/pipelines/capability/generative"
)

func TestTryOnSize(t *testing.T) {
	cases := []struct{ w, h, mw, mh, ww, wh int }{
		{600, 800, 768, 1024, 768, 1024},
		{300, 800, 768, 1024, 384, 1024},
		{1000, 500, 768, 1024, 768, 384},
		{150, 90, 192, 256, 192, 112},
		{20, 2000, 192, 256, 64, 256},
	}
	for _, c := range cases {
		if w, h := generative.TryOnSize(c.w, c.h, c.mw, c.mh); w != c.ww || h != c.wh {
			t.Errorf("%dx%d in %dx%d: %dx%d, want %dx%d", c.w, c.h, c.mw, c.mh, w, h, c.ww, c.wh)
		}
	}
}

// TestPadGarment: a wide red garment is scaled to the width and centred
// vertically on white.
func TestPadGarment(t *testing.T) {
	g := image.NewNRGBA(image.Rect(0, 0, 40, 20))
	for i := 0; i < len(g.Pix); i += 4 {
		copy(g.Pix[i:], []uint8{200, 0, 0, 255})
	}
	out := generative.PadGarment(g, 80, 80)
	for _, c := range []struct {
		x, y int
		want color.NRGBA
	}{{40, 5, color.NRGBA{255, 255, 255, 255}}, {40, 40, color.NRGBA{200, 0, 0, 255}}, {2, 30, color.NRGBA{200, 0, 0, 255}}, {40, 75, color.NRGBA{255, 255, 255, 255}}} {
		if got := out.NRGBAAt(c.x, c.y); got != c.want {
			t.Errorf("(%d,%d) = %v, want %v", c.x, c.y, got, c.want)
		}
	}
}

// TestCatVTONOracle runs the oracle try-on model at a working size other
// than the image's: outside the mask the person's own pixels come back;
// inside (beyond the feather) the oracle's colour, the mean of the garment
// photo as fed (padded on white): each pixel within 16 levels, the region's
// mean within 2.
func TestCatVTONOracle(t *testing.T) {
	c := pipelinetest.ContractTryOner(t)
	person := gradient(150, 90)
	garment := image.NewNRGBA(image.Rect(0, 0, 30, 40))
	for i := 0; i < len(garment.Pix); i += 4 {
		copy(garment.Pix[i:], []uint8{40, 90, 160, 255})
	}
	mask := image.NewGray(person.Rect)
	hole := image.Rect(40, 20, 110, 70)
	for y := hole.Min.Y; y < hole.Max.Y; y++ {
		for x := hole.Min.X; x < hole.Max.X; x++ {
			mask.SetGray(x, y, color.Gray{255})
		}
	}
	out, info, err := c.TryOn(context.Background(), person, garment, mask, generative.TryOnOptions{Seed: 3, Steps: 6})
	if err != nil {
		t.Fatal(err)
	}
	if out.Rect != person.Rect || info.Model != "oracle-catvton" || info.Steps != 6 || info.Guidance != 1 || info.Task != diffusion.TryOn {
		t.Fatalf("rect %v, info %+v", out.Rect, info)
	}
	ww, wh := generative.TryOnSize(150, 90, 192, 256)
	fed := generative.PadGarment(garment, ww, wh)
	var want [3]float64
	for i := 0; i < len(fed.Pix); i += 4 {
		for ch := range 3 {
			want[ch] += float64(fed.Pix[i+ch]) / float64(ww*wh)
		}
	}
	// The folder's DDIM scheduler keeps sqrt(1 − ᾱ₀) ≈ 0.03 of the noise:
	// about 4 levels per standard deviation on a pixel, far less on the
	// region's mean.
	const pixelTol, meanTol = 16, 2
	var sum [3]float64
	n := 0
	for y := range 90 {
		for x := range 150 {
			p := image.Pt(x, y)
			got := out.NRGBAAt(x, y)
			switch {
			case !p.In(hole):
				if got != person.NRGBAAt(x, y) {
					t.Fatalf("pixel %v outside the mask changed", p)
				}
			case p.In(hole.Inset(8)):
				n++
				for ch, v := range []uint8{got.R, got.G, got.B} {
					sum[ch] += float64(v)
					if math.Abs(float64(v)-want[ch]) > pixelTol {
						t.Fatalf("pixel %v = %v, want the fed garment's mean %.1f", p, got, want)
					}
				}
			}
		}
	}
	for ch := range 3 {
		if d := math.Abs(sum[ch]/float64(n) - want[ch]); d > meanTol {
			t.Fatalf("channel %d: the region's mean is %.1f levels from the garment's", ch, d)
		}
	}
}
