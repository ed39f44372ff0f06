package raster

import (
	"image"

	xdraw "golang.org/x/image/draw"
)

// Resize scales img to exactly w x h (Catmull-Rom; opaque output).
func Resize(img image.Image, w, h int) *image.RGBA {
	out := image.NewRGBA(image.Rect(0, 0, w, h))
	xdraw.CatmullRom.Scale(out, out.Rect, img, img.Bounds(), xdraw.Src, nil)
	return out
}

// ResizeFast scales img to exactly w x h with bilinear filtering.
func ResizeFast(img image.Image, w, h int) *image.RGBA {
	out := image.NewRGBA(image.Rect(0, 0, w, h))
	xdraw.ApproxBiLinear.Scale(out, out.Rect, img, img.Bounds(), xdraw.Src, nil)
	return out
}

// ResizeGray scales a mask to exactly w x h (bilinear).
func ResizeGray(g *image.Gray, w, h int) *image.Gray {
	out := image.NewGray(image.Rect(0, 0, w, h))
	if g.Rect.Dx() == w && g.Rect.Dy() == h {
		for y := 0; y < h; y++ {
			copy(out.Pix[y*w:(y+1)*w], g.Pix[(y)*g.Stride:])
		}
		return out
	}
	xdraw.BiLinear.Scale(out, out.Rect, g, g.Bounds(), xdraw.Src, nil)
	return out
}

// BoxBlurRGBA blurs img in place with a box of radius r, three passes
// (close to a Gaussian of sigma ~ r). Alpha is left unchanged.
func BoxBlurRGBA(img *image.RGBA, r int) {
	if r < 1 {
		return
	}
	w, h := img.Rect.Dx(), img.Rect.Dy()
	tmp := make([]uint8, len(img.Pix))
	for pass := 0; pass < 3; pass++ {
		boxH(img.Pix, tmp, w, h, img.Stride, r)
		boxV(tmp, img.Pix, w, h, img.Stride, r)
	}
}

// boxH is a horizontal box filter of RGB channels from src to dst
// (clamped edges); alpha is copied.
func boxH(src, dst []uint8, w, h, stride, r int) {
	ParallelRows(h, func(y0, y1 int) {
		inv := 1.0 / float64(2*r+1)
		for y := y0; y < y1; y++ {
			row := src[y*stride : y*stride+w*4]
			out := dst[y*stride : y*stride+w*4]
			for c := 0; c < 3; c++ {
				var s int
				for k := -r; k <= r; k++ {
					s += int(row[min(max(k, 0), w-1)*4+c])
				}
				for x := 0; x < w; x++ {
					out[x*4+c] = uint8(float64(s)*inv + 0.5)
					s += int(row[min(max(x+r+1, 0), w-1)*4+c]) - int(row[min(max(x-r, 0), w-1)*4+c])
				}
			}
			for x := 0; x < w; x++ {
				out[x*4+3] = row[x*4+3]
			}
		}
	})
}

// boxV is the vertical counterpart of boxH (bands of columns in
// parallel).
func boxV(src, dst []uint8, w, h, stride, r int) {
	ParallelRows(w, func(x0, x1 int) {
		inv := 1.0 / float64(2*r+1)
		for x := x0; x < x1; x++ {
			for y := 0; y < h; y++ {
				dst[y*stride+x*4+3] = src[y*stride+x*4+3]
			}
			for c := 0; c < 3; c++ {
				var s int
				for k := -r; k <= r; k++ {
					s += int(src[min(max(k, 0), h-1)*stride+x*4+c])
				}
				for y := 0; y < h; y++ {
					dst[y*stride+x*4+c] = uint8(float64(s)*inv + 0.5)
					s += int(src[min(max(y+r+1, 0), h-1)*stride+x*4+c]) - int(src[min(max(y-r, 0), h-1)*stride+x*4+c])
				}
			}
		}
	})
}

// SampleBilinear returns the bilinearly interpolated RGBA at (fx, fy) of a
// packed RGBA buffer (w x h, stride 4w), clamped at the edges.
func SampleBilinear(pix []uint8, w, h int, fx, fy float32) (r, g, b, a float32) {
	if fx < 0 {
		fx = 0
	}
	if fy < 0 {
		fy = 0
	}
	maxX, maxY := float32(w-1), float32(h-1)
	if fx > maxX {
		fx = maxX
	}
	if fy > maxY {
		fy = maxY
	}
	x0, y0 := int(fx), int(fy)
	x1, y1 := x0+1, y0+1
	if x1 >= w {
		x1 = w - 1
	}
	if y1 >= h {
		y1 = h - 1
	}
	ax, ay := fx-float32(x0), fy-float32(y0)
	i00 := (y0*w + x0) * 4
	i01 := (y0*w + x1) * 4
	i10 := (y1*w + x0) * 4
	i11 := (y1*w + x1) * 4
	w00 := (1 - ax) * (1 - ay)
	w01 := ax * (1 - ay)
	w10 := (1 - ax) * ay
	w11 := ax * ay
	r = float32(pix[i00])*w00 + float32(pix[i01])*w01 + float32(pix[i10])*w10 + float32(pix[i11])*w11
	g = float32(pix[i00+1])*w00 + float32(pix[i01+1])*w01 + float32(pix[i10+1])*w10 + float32(pix[i11+1])*w11
	b = float32(pix[i00+2])*w00 + float32(pix[i01+2])*w01 + float32(pix[i10+2])*w10 + float32(pix[i11+2])*w11
	a = float32(pix[i00+3])*w00 + float32(pix[i01+3])*w01 + float32(pix[i10+3])*w10 + float32(pix[i11+3])*w11
	return
}

// SampleFloat returns the bilinearly interpolated value at (fx, fy) of a
// w x h float plane, clamped at the edges.
func SampleFloat(p []float32, w, h int, fx, fy float32) float32 {
	if fx < 0 {
		fx = 0
	}
	if fy < 0 {
		fy = 0
	}
	if fx > float32(w-1) {
		fx = float32(w - 1)
	}
	if fy > float32(h-1) {
		fy = float32(h - 1)
	}
	x0, y0 := int(fx), int(fy)
	x1, y1 := min(x0+1, w-1), min(y0+1, h-1)
	ax, ay := fx-float32(x0), fy-float32(y0)
	return (p[y0*w+x0]*(1-ax)+p[y0*w+x1]*ax)*(1-ay) + (p[y1*w+x0]*(1-ax)+p[y1*w+x1]*ax)*ay
}
