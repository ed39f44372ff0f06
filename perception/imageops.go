package perception

import (
	"image"
	"math"

	"github.com/disintegration/imaging"
)

// This file holds the tensor packing and float-map resampling shared by the
// adapters. Everything works on Pix slices; no per-pixel At() calls in loops.

// asNRGBA returns img as an *image.NRGBA whose bounds start at (0,0),
// converting (once, with the fast paths of image/draw and imaging) when needed.
func asNRGBA(img image.Image) *image.NRGBA {
	if n, ok := img.(*image.NRGBA); ok && n.Rect.Min == (image.Point{}) {
		return n
	}
	return imaging.Clone(img)
}

// resizeLinear resizes with a (downscale-antialiased) bilinear filter, like
// PIL's BILINEAR that the model references were computed with.
func resizeLinear(img image.Image, w, h int) *image.NRGBA {
	b := img.Bounds()
	if b.Dx() == w && b.Dy() == h {
		return asNRGBA(img)
	}
	return imaging.Resize(img, w, h, imaging.Linear)
}

// packNHWC writes an NRGBA image as float32 NHWC RGB into dst (len w*h*3),
// computing v*scale+shift per channel. Alpha is ignored (images are treated
// as opaque; premultiplication is undone by NRGBA already).
func packNHWC(dst []float32, img *image.NRGBA, scale, shift float32) {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	i := 0
	for y := 0; y < h; y++ {
		row := img.Pix[y*img.Stride : y*img.Stride+w*4]
		for x := 0; x < w*4; x += 4 {
			dst[i] = float32(row[x])*scale + shift
			dst[i+1] = float32(row[x+1])*scale + shift
			dst[i+2] = float32(row[x+2])*scale + shift
			i += 3
		}
	}
}

// packNCHW writes an NRGBA image as float32 NCHW into dst (len 3*w*h):
// channel c of the output is (pix[order[c]]*scale[c]) + shift[c].
// order picks the source channel (0=R,1=G,2=B) for each output plane.
func packNCHW(dst []float32, img *image.NRGBA, order [3]int, scale, shift [3]float32) {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	plane := w * h
	for y := 0; y < h; y++ {
		row := img.Pix[y*img.Stride : y*img.Stride+w*4]
		o := y * w
		for x := 0; x < w; x++ {
			p := row[x*4 : x*4+3 : x*4+3]
			dst[o+x] = float32(p[order[0]])*scale[0] + shift[0]
			dst[plane+o+x] = float32(p[order[1]])*scale[1] + shift[1]
			dst[2*plane+o+x] = float32(p[order[2]])*scale[2] + shift[2]
		}
	}
}

// padCanvas places img at (ox, oy) on a black opaque w x h canvas.
func padCanvas(img *image.NRGBA, w, h, ox, oy int) *image.NRGBA {
	dst := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := 3; i < len(dst.Pix); i += 4 {
		dst.Pix[i] = 255
	}
	sw, sh := img.Rect.Dx(), img.Rect.Dy()
	for y := 0; y < sh; y++ {
		dy := y + oy
		if dy < 0 || dy >= h {
			continue
		}
		x0, x1 := max(0, -ox), min(sw, w-ox)
		if x0 >= x1 {
			continue
		}
		copy(dst.Pix[dy*dst.Stride+(x0+ox)*4:dy*dst.Stride+(x1+ox)*4], img.Pix[y*img.Stride+x0*4:y*img.Stride+x1*4])
	}
	return dst
}

// floatMap is a single-channel float32 map (row-major).
type floatMap struct {
	W, H int
	Data []float32
}

// sampleRegion resamples the region [x0,x1) x [y0,y1) of src (in src pixel
// units, edges of pixels) to a dw x dh map with bilinear interpolation
// (half-pixel centres, clamped to the region's edge pixels so nothing
// outside the region, such as padding, bleeds in).
func sampleRegion(src floatMap, x0, y0, x1, y1 float64, dw, dh int) floatMap {
	out := floatMap{W: dw, H: dh, Data: make([]float32, dw*dh)}
	if dw <= 0 || dh <= 0 || src.W == 0 || src.H == 0 {
		return out
	}
	sx := (x1 - x0) / float64(dw)
	sy := (y1 - y0) / float64(dh)
	xlo, xhi := clampInt(int(math.Floor(x0)), 0, src.W-1), clampInt(int(math.Ceil(x1))-1, 0, src.W-1)
	ylo, yhi := clampInt(int(math.Floor(y0)), 0, src.H-1), clampInt(int(math.Ceil(y1))-1, 0, src.H-1)
	// Precompute the horizontal taps.
	xi0 := make([]int, dw)
	xi1 := make([]int, dw)
	xf := make([]float32, dw)
	for x := 0; x < dw; x++ {
		fx := x0 + (float64(x)+0.5)*sx - 0.5
		i := int(math.Floor(fx))
		f := fx - float64(i)
		xi0[x] = clampInt(i, xlo, xhi)
		xi1[x] = clampInt(i+1, xlo, xhi)
		xf[x] = float32(f)
	}
	for y := 0; y < dh; y++ {
		fy := y0 + (float64(y)+0.5)*sy - 0.5
		j := int(math.Floor(fy))
		g := float32(fy - float64(j))
		r0 := src.Data[clampInt(j, ylo, yhi)*src.W:]
		r1 := src.Data[clampInt(j+1, ylo, yhi)*src.W:]
		o := out.Data[y*dw : (y+1)*dw]
		for x := range o {
			a, b := xi0[x], xi1[x]
			f := xf[x]
			top := r0[a] + (r0[b]-r0[a])*f
			bot := r1[a] + (r1[b]-r1[a])*f
			o[x] = top + (bot-top)*g
		}
	}
	return out
}

func clampInt(v, lo, hi int) int {
	if v < lo {
		return lo
	}
	if v > hi {
		return hi
	}
	return v
}

// toGray converts a 0..1 probability map to an 8-bit mask.
func (m floatMap) toGray() *image.Gray {
	g := image.NewGray(image.Rect(0, 0, m.W, m.H))
	for i, v := range m.Data {
		g.Pix[i] = unit8(v)
	}
	return g
}

func unit8(v float32) uint8 {
	if !(v > 0) { // also NaN
		return 0
	}
	if v >= 1 {
		return 255
	}
	return uint8(v*255 + 0.5)
}

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

func sigmoid32(x float32) float32 { return float32(1 / (1 + math.Exp(-float64(x)))) }

// channel extracts plane c of an NCHW [1,C,H,W] tensor as a floatMap.
func channel(data []float32, c, w, h int) floatMap {
	return floatMap{W: w, H: h, Data: data[c*w*h : (c+1)*w*h]}
}
