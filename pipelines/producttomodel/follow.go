package producttomodel

import (
	"bytes"
	"image"

	"fashiond/perception"
)

// framedFace is the dressed subject's face f in the framed photo's pixels,
// nil when f is nil or framed is not found in dressed. frame cuts framed
// out of dressed without scaling; cropOffset finds where.
func framedFace(f *perception.Face, dressed, framed *image.RGBA) *[4]float64 {
	if f == nil {
		return nil
	}
	o, ok := cropOffset(dressed, framed)
	if !ok {
		return nil
	}
	b := [4]float64{f.Box[0] - float64(o.X), f.Box[1] - float64(o.Y), f.Box[2] - float64(o.X), f.Box[3] - float64(o.Y)}
	return &b
}

// cropOffset finds the top-left corner in full of crop, an unscaled
// sub-image of it (a ratio crop trims one dimension only: the search runs
// along that one, comparing crop's first row or column exactly).
func cropOffset(full, crop *image.RGBA) (image.Point, bool) {
	w, h, cw, ch := full.Rect.Dx(), full.Rect.Dy(), crop.Rect.Dx(), crop.Rect.Dy()
	if cw > w || ch > h || cw == 0 || ch == 0 {
		return image.Point{}, false
	}
	row := func(img *image.RGBA, x, y, n int) []byte {
		i := y*img.Stride + x*4
		return img.Pix[i : i+4*n]
	}
	for y := 0; y <= h-ch; y++ {
		for x := 0; x <= w-cw; x++ {
			if bytes.Equal(row(full, x, y, cw), row(crop, 0, 0, cw)) && bytes.Equal(row(full, x, y+ch/2, cw), row(crop, 0, ch/2, cw)) {
				return image.Pt(x, y), true
			}
		}
	}
	return image.Point{}, false
}
