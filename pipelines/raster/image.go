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
// of radius r (close to a Gaussian of sigma ~ r), edges clamped; r < 1
// leaves it as it is. Each pass runs the rows, then the columns, in
// parallel bands; the result does not depend on the split.
func BoxBlur3(p []float32, w, h, r int) {
	if r < 1 {
		return
	}
	tmp := make([]float32, len(p))
	inv := 1 / float32(2*r+1)
	for range 3 {
		ParallelRows(h, func(y0, y1 int) {
			for y := y0; y < y1; y++ {
				row := p[y*w : (y+1)*w]
				out := tmp[y*w : (y+1)*w]
				var s float32
				for k := -r; k <= r; k++ {
					s += row[min(max(k, 0), w-1)]
				}
				for x := 0; x < w; x++ {
					out[x] = s * inv
					s += row[min(x+r+1, w-1)] - row[max(x-r, 0)]
				}
			}
		})
		ParallelRows(w, func(x0, x1 int) {
			for x := x0; x < x1; x++ {
				var s float32
				for k := -r; k <= r; k++ {
					s += tmp[min(max(k, 0), h-1)*w+x]
				}
				for y := 0; y < h; y++ {
					p[y*w+x] = s * inv
					s += tmp[min(y+r+1, h-1)*w+x] - tmp[max(y-r, 0)*w+x]
				}
			}
		})
	}
}
