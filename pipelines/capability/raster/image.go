package raster

import (
	"image"
	"image/draw"
)

// RGBA returns img as an *image.RGBA with origin (0,0) and packed rows
// (Stride 4*width): img itself when it already is one, else a copy. Code
// that indexes pixels as (y*w+x)*4 may rely on it.
func RGBA(img image.Image) *image.RGBA {
	if r, ok := img.(*image.RGBA); ok && r.Rect.Min == (image.Point{}) && r.Stride == 4*r.Rect.Dx() {
		return r
	}
	return CopyRGBA(img)
}

// CopyRGBA returns a new *image.RGBA with origin (0,0) holding img's
// pixels: for callers that write into the result.
func CopyRGBA(img image.Image) *image.RGBA {
	b := img.Bounds()
	out := image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.Draw(out, out.Rect, img, b.Min, draw.Src)
	return out
}

// BoxBlur3 blurs a w x h float plane in place with three passes of a box
// of radius r (BoxBlurH then BoxBlurV; close to a Gaussian of sigma ~ r),
// edges clamped; r < 1 leaves it as it is.
func BoxBlur3(p []float32, w, h, r int) {
	if r < 1 {
		return
	}
	pl, tmp := &Plane{W: w, H: h, P: p}, NewPlane(w, h)
	for range 3 {
		BoxBlurH(tmp, pl, r)
		BoxBlurV(pl, tmp, r)
	}
}
