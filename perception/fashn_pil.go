package perception

import (
	"image"
	"math"

	"github.com/disintegration/imaging"
)

// Pillow's LANCZOS resize for 8-bit RGB (Image.resize without
// reducing_gap): per axis, coefficients of sinc(x)·sinc(x/3) over the
// support scaled by the shrink factor, normalised, rounded to 22-bit fixed
// point; a horizontal pass (over the rows the vertical pass needs), clipped
// to bytes, then a vertical pass. FASHN's pipeline pre-resizes photos with
// it to fit 864×864.

const (
	pilPrecision = 32 - 8 - 2
	pilSupport   = 3.0
)

func pilSinc(x float64) float64 {
	if x == 0 {
		return 1
	}
	x *= math.Pi
	return math.Sin(x) / x
}

func pilLanczos(x float64) float64 {
	if -pilSupport <= x && x < pilSupport {
		return pilSinc(x) * pilSinc(x/3)
	}
	return 0
}

// pilCoeffs is precompute_coeffs + normalize_coeffs_8bpc for one axis:
// per output pixel its first source pixel, count and fixed-point weights.
func pilCoeffs(inSize, outSize int) (bounds [][2]int, kk [][]int32) {
	scale := float64(inSize) / float64(outSize)
	filterscale := math.Max(scale, 1)
	support := pilSupport * filterscale
	for xx := range outSize {
		center := (float64(xx) + 0.5) * scale
		ss := 1 / filterscale
		xmin := max(int(center-support+0.5), 0)
		xmax := min(int(center+support+0.5), inSize) - xmin
		w := make([]float64, xmax)
		ww := 0.0
		for x := range xmax {
			w[x] = pilLanczos((float64(x+xmin) - center + 0.5) * ss)
			ww += w[x]
		}
		k := make([]int32, xmax)
		for x := range xmax {
			if ww != 0 {
				w[x] /= ww
			}
			if w[x] < 0 {
				k[x] = int32(-0.5 + w[x]*(1<<pilPrecision))
			} else {
				k[x] = int32(0.5 + w[x]*(1<<pilPrecision))
			}
		}
		bounds = append(bounds, [2]int{xmin, xmax})
		kk = append(kk, k)
	}
	return bounds, kk
}

func pilClip8(v int32) uint8 {
	switch {
	case v >= 1<<pilPrecision<<8:
		return 255
	case v <= 0:
		return 0
	}
	return uint8(v >> pilPrecision)
}

// resizePILLanczos resizes img to w×h as Pillow's Image.resize(LANCZOS)
// does for an RGB image (alpha set opaque).
func resizePILLanczos(img image.Image, w, h int) *image.NRGBA {
	src := imaging.Clone(img)
	sw, sh := src.Rect.Dx(), src.Rect.Dy()
	hb, hk := pilCoeffs(sw, w)
	vb, vk := pilCoeffs(sh, h)
	first := vb[0][0]
	last := vb[h-1][0] + vb[h-1][1]
	tmp := src
	if w != sw {
		tmp = image.NewNRGBA(image.Rect(0, 0, w, last-first))
		for y := range last - first {
			row := src.Pix[(y+first)*src.Stride:]
			for xx := range w {
				for c := range 3 {
					ss := int32(1 << (pilPrecision - 1))
					for x, k := range hk[xx] {
						ss += int32(row[4*(x+hb[xx][0])+c]) * k
					}
					tmp.Pix[y*tmp.Stride+4*xx+c] = pilClip8(ss)
				}
			}
		}
	} else {
		first = 0
	}
	out := image.NewNRGBA(image.Rect(0, 0, w, h))
	for yy := range h {
		for xx := range w {
			for c := range 3 {
				ss := int32(1 << (pilPrecision - 1))
				for y, k := range vk[yy] {
					ss += int32(tmp.Pix[(y+vb[yy][0]-first)*tmp.Stride+4*xx+c]) * k
				}
				out.Pix[yy*out.Stride+4*xx+c] = pilClip8(ss)
			}
			out.Pix[yy*out.Stride+4*xx+3] = 255
		}
	}
	return out
}
