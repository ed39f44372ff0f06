package scene

import (
	"image"

	"fashiond/pipelines/capability/raster"
)

// RGBA returns img as an *image.RGBA with origin (0,0) and packed rows,
// copying when needed (raster.RGBA).
func RGBA(img image.Image) *image.RGBA { return raster.RGBA(img) }

// Resize scales img to exactly w x h (Catmull-Rom; opaque output:
// raster.Resize).
func Resize(img image.Image, w, h int) *image.RGBA { return raster.Resize(img, w, h) }

// ResizeFast scales img to exactly w x h with bilinear filtering
// (raster.ResizeFast).
func ResizeFast(img image.Image, w, h int) *image.RGBA { return raster.ResizeFast(img, w, h) }

// ResizeGray scales a mask to exactly w x h (bilinear: raster.ResizeGray).
func ResizeGray(g *image.Gray, w, h int) *image.Gray { return raster.ResizeGray(g, w, h) }

// ParallelRows runs fn over [0,h) in contiguous row bands, one goroutine per
// CPU. Frame renderers use it to parallelise per-pixel work.
func ParallelRows(h int, fn func(y0, y1 int)) { raster.ParallelRows(h, fn) }

// SampleBilinear returns the bilinearly interpolated RGBA at (fx, fy) of a
// packed RGBA buffer (raster.SampleBilinear).
func SampleBilinear(pix []uint8, w, h int, fx, fy float32) (r, g, b, a float32) {
	return raster.SampleBilinear(pix, w, h, fx, fy)
}

// SampleFloat returns the bilinearly interpolated value at (fx, fy) of a
// w x h float plane, clamped at the edges (raster.SampleFloat).
func SampleFloat(p []float32, w, h int, fx, fy float32) float32 {
	return raster.SampleFloat(p, w, h, fx, fy)
}
