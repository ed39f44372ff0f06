package pipelinetest

import (
	"image"
	"math"
)

// MeanAbsDiff is the mean absolute difference of two same-sized images
// over the R, G and B channels, in 0..255 (8-bit values of each image's
// colour model).
func MeanAbsDiff(a, b image.Image) float64 {
	ba, bb := a.Bounds(), b.Bounds()
	var s float64
	for y := 0; y < ba.Dy(); y++ {
		for x := 0; x < ba.Dx(); x++ {
			r1, g1, b1, _ := a.At(ba.Min.X+x, ba.Min.Y+y).RGBA()
			r2, g2, b2, _ := b.At(bb.Min.X+x, bb.Min.Y+y).RGBA()
			s += math.Abs(float64(r1>>8)-float64(r2>>8)) + math.Abs(float64(g1>>8)-float64(g2>>8)) + math.Abs(float64(b1>>8)-float64(b2>>8))
		}
	}
	return s / float64(3*ba.Dx()*ba.Dy())
}
