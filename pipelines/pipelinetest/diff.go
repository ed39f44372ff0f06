package pipelinetest

import (
	"image"
	"image/draw"
	"math"
)

// MeanAbsDiff is the mean absolute difference of two same-sized images
// over the R, G and B channels, in 0..255.
func MeanAbsDiff(a, b image.Image) float64 {
	ra, rb := toRGBA(a), toRGBA(b)
	var s float64
	for i := range ra.Pix {
		if i%4 == 3 {
			continue
		}
		s += math.Abs(float64(ra.Pix[i]) - float64(rb.Pix[i]))
	}
	return s / float64(len(ra.Pix)*3/4)
}

// toRGBA returns img as an *image.RGBA at the origin (itself when it is
// one already).
func toRGBA(img image.Image) *image.RGBA {
	if r, ok := img.(*image.RGBA); ok && r.Rect.Min == (image.Point{}) {
		return r
	}
	b := img.Bounds()
	r := image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.Draw(r, r.Rect, img, b.Min, draw.Src)
	return r
}
