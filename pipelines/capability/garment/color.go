package garment

import (
	"image"
	"image/color"
	"math"

	"fashiond/pipelines/capability/mask"
	"fashiond/pipelines/capability/raster"
)

// Lab is a CIE L*a*b* colour (D65 white).
type Lab struct{ L, A, B float64 }

var srgbLin = raster.SRGBTable()

func labF(t float64) float64 {
	if t > 216.0/24389.0 {
		return math.Cbrt(t)
	}
	return (24389.0/27.0*t + 16) / 116
}

// ToLab converts 8-bit sRGB to CIE Lab (D65).
func ToLab(r, g, b uint8) Lab {
	R, G, B := srgbLin[r], srgbLin[g], srgbLin[b]
	x := (0.4124564*R + 0.3575761*G + 0.1804375*B) / 0.95047
	y := 0.2126729*R + 0.7151522*G + 0.0721750*B
	z := (0.0193339*R + 0.1191920*G + 0.9503041*B) / 1.08883
	fx, fy, fz := labF(x), labF(y), labF(z)
	return Lab{L: 116*fy - 16, A: 500 * (fx - fy), B: 200 * (fy - fz)}
}

// DeltaE2000 is the CIEDE2000 colour difference (kL=kC=kH=1) between two
// sRGB colours (alpha ignored). About 1 is a just-noticeable difference;
// above 10 the colours read as clearly different.
func DeltaE2000(a, b color.RGBA) float64 {
	return DeltaE2000Lab(ToLab(a.R, a.G, a.B), ToLab(b.R, b.G, b.B))
}

// DeltaE2000Lab is CIEDE2000 on Lab values (Sharma, Wu and Dalal 2005).
func DeltaE2000Lab(p, q Lab) float64 {
	deg := math.Pi / 180
	c1 := math.Hypot(p.A, p.B)
	c2 := math.Hypot(q.A, q.B)
	cm := (c1 + c2) / 2
	cm7 := math.Pow(cm, 7)
	g := 0.5 * (1 - math.Sqrt(cm7/(cm7+math.Pow(25, 7))))
	a1, a2 := (1+g)*p.A, (1+g)*q.A
	c1p, c2p := math.Hypot(a1, p.B), math.Hypot(a2, q.B)
	hp := func(a, b float64) float64 {
		if a == 0 && b == 0 {
			return 0
		}
		h := math.Atan2(b, a) / deg
		if h < 0 {
			h += 360
		}
		return h
	}
	h1, h2 := hp(a1, p.B), hp(a2, q.B)
	dL := q.L - p.L
	dC := c2p - c1p
	var dh float64
	if c1p*c2p != 0 {
		dh = h2 - h1
		if dh > 180 {
			dh -= 360
		} else if dh < -180 {
			dh += 360
		}
	}
	dH := 2 * math.Sqrt(c1p*c2p) * math.Sin(dh/2*deg)
	lm := (p.L + q.L) / 2
	cmp := (c1p + c2p) / 2
	var hm float64
	switch {
	case c1p*c2p == 0:
		hm = h1 + h2
	case math.Abs(h1-h2) <= 180:
		hm = (h1 + h2) / 2
	case h1+h2 < 360:
		hm = (h1 + h2 + 360) / 2
	default:
		hm = (h1 + h2 - 360) / 2
	}
	t := 1 - 0.17*math.Cos((hm-30)*deg) + 0.24*math.Cos(2*hm*deg) + 0.32*math.Cos((3*hm+6)*deg) - 0.20*math.Cos((4*hm-63)*deg)
	dTheta := 30 * math.Exp(-math.Pow((hm-275)/25, 2))
	cmp7 := math.Pow(cmp, 7)
	rc := 2 * math.Sqrt(cmp7/(cmp7+math.Pow(25, 7)))
	l50 := (lm - 50) * (lm - 50)
	sl := 1 + 0.015*l50/math.Sqrt(20+l50)
	sc := 1 + 0.045*cmp
	sh := 1 + 0.015*cmp*t
	rt := -math.Sin(2*dTheta*deg) * rc
	x, y, z := dL/sl, dC/sc, dH/sh
	return math.Sqrt(x*x + y*y + z*z + rt*y*z)
}

// luma returns the Rec.601 luma of img over rect as a w x h float field.
func luma(img image.Image, rect image.Rectangle) []float32 {
	w, h := rect.Dx(), rect.Dy()
	out := make([]float32, w*h)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			r, g, b, _ := img.At(rect.Min.X+x, rect.Min.Y+y).RGBA()
			out[y*w+x] = float32(0.299*float64(r>>8) + 0.587*float64(g>>8) + 0.114*float64(b>>8))
		}
	}
	return out
}

// SSIM is the mean structural similarity (Wang et al. 2004) of the luma of
// a and b over rect (in both images' coordinates), with a Gaussian window of
// sigma 1.5 and the usual constants for 8-bit data (K1=0.01, K2=0.03).
// 1 means identical; it returns 0 for an empty rect.
func SSIM(a, b image.Image, rect image.Rectangle) float64 {
	rect = rect.Intersect(a.Bounds()).Intersect(b.Bounds())
	w, h := rect.Dx(), rect.Dy()
	if w <= 0 || h <= 0 {
		return 0
	}
	var sum float64
	for _, v := range ssimMap(luma(a, rect), luma(b, rect), w, h) {
		sum += float64(v)
	}
	return sum / float64(w*h)
}

// ssimMap is the per-pixel SSIM of two luma fields.
func ssimMap(x, y []float32, w, h int) []float32 {
	xx := make([]float32, w*h)
	yy := make([]float32, w*h)
	xy := make([]float32, w*h)
	for i := range x {
		xx[i] = x[i] * x[i]
		yy[i] = y[i] * y[i]
		xy[i] = x[i] * y[i]
	}
	const sigma = 1.5
	mx := mask.GaussBlur(x, w, h, sigma)
	my := mask.GaussBlur(y, w, h, sigma)
	sxx := mask.GaussBlur(xx, w, h, sigma)
	syy := mask.GaussBlur(yy, w, h, sigma)
	sxy := mask.GaussBlur(xy, w, h, sigma)
	const c1 = (0.01 * 255) * (0.01 * 255)
	const c2 = (0.03 * 255) * (0.03 * 255)
	out := make([]float32, w*h)
	for i := range x {
		ux, uy := float64(mx[i]), float64(my[i])
		vx := float64(sxx[i]) - ux*ux
		vy := float64(syy[i]) - uy*uy
		cxy := float64(sxy[i]) - ux*uy
		out[i] = float32(((2*ux*uy + c1) * (2*cxy + c2)) / ((ux*ux + uy*uy + c1) * (vx + vy + c2)))
	}
	return out
}

// SSIMMasked is SSIM over the pixels where m >= 128 (m in the images'
// coordinates, same size): the mean of the SSIM map inside the mask. It
// returns 0 when the mask is empty.
func SSIMMasked(a, b image.Image, m *image.Gray) float64 {
	rect := a.Bounds().Intersect(b.Bounds())
	w, h := rect.Dx(), rect.Dy()
	if w <= 0 || h <= 0 {
		return 0
	}
	s := ssimMap(luma(a, rect), luma(b, rect), w, h)
	var sum, n float64
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			if m.GrayAt(rect.Min.X+x, rect.Min.Y+y).Y >= 128 {
				sum += float64(s[y*w+x])
				n++
			}
		}
	}
	if n == 0 {
		return 0
	}
	return sum / n
}
