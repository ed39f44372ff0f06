// Package raster is the imaging capability the pipelines share: float32
// image planes and the separable box blurs (BoxBlurH/V, Blur, BoxBlur3,
// BoxBlurRGBA), resampling (Resize, ResizeFast, ResizeGray,
// SampleBilinear, SampleFloat, Downsample, Upsample), conversion to RGBA
// and the sRGB transfer functions. Binary and soft mask morphology lives in
// pipelines/capability/mask, on these blurs.
package raster

import (
	"image"
	"math"
	"runtime"
	"sync"
)

// Plane is one float32 channel, row-major, w*h values.
type Plane struct {
	W, H int
	P    []float32
}

// NewPlane returns a zeroed w x h plane.
func NewPlane(w, h int) *Plane { return &Plane{W: w, H: h, P: make([]float32, w*h)} }

// ParallelRows runs fn over [0,h) split into contiguous row bands, one per
// processor. fn must only touch its own rows, so the result does not depend
// on the split.
func ParallelRows(h int, fn func(y0, y1 int)) {
	n := runtime.GOMAXPROCS(0)
	if n > h {
		n = h
	}
	if n <= 1 || h < 64 {
		fn(0, h)
		return
	}
	var wg sync.WaitGroup
	step := (h + n - 1) / n
	for y0 := 0; y0 < h; y0 += step {
		y1 := min(y0+step, h)
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(y0, y1)
		}()
	}
	wg.Wait()
}

// BoxBlurH blurs src horizontally with a box of radius r into dst (edges
// clamped). Running sums: O(w) per row regardless of r.
func BoxBlurH(dst, src *Plane, r int) {
	w, h := src.W, src.H
	if r <= 0 {
		copy(dst.P, src.P)
		return
	}
	inv := 1 / float32(2*r+1)
	ParallelRows(h, func(y0, y1 int) {
		for y := y0; y < y1; y++ {
			s := src.P[y*w : (y+1)*w]
			d := dst.P[y*w : (y+1)*w]
			var acc float32
			for i := -r; i <= r; i++ {
				acc += s[min(max(i, 0), w-1)]
			}
			for x := 0; x < w; x++ {
				d[x] = acc * inv
				acc += s[min(x+r+1, w-1)] - s[max(x-r, 0)]
			}
		}
	})
}

// BoxBlurV blurs src vertically with a box of radius r into dst.
func BoxBlurV(dst, src *Plane, r int) {
	w, h := src.W, src.H
	if r <= 0 {
		copy(dst.P, src.P)
		return
	}
	inv := 1 / float32(2*r+1)
	// Process column bands so that each goroutine owns whole columns; the
	// inner loop walks a row of accumulators for cache friendliness.
	n := runtime.GOMAXPROCS(0)
	if n > w {
		n = w
	}
	step := (w + n - 1) / n
	var wg sync.WaitGroup
	for x0 := 0; x0 < w; x0 += step {
		x1 := min(x0+step, w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			acc := make([]float32, x1-x0)
			for i := -r; i <= r; i++ {
				row := src.P[min(max(i, 0), h-1)*w:]
				for x := x0; x < x1; x++ {
					acc[x-x0] += row[x]
				}
			}
			for y := 0; y < h; y++ {
				d := dst.P[y*w:]
				add := src.P[min(y+r+1, h-1)*w:]
				sub := src.P[max(y-r, 0)*w:]
				for x := x0; x < x1; x++ {
					a := acc[x-x0]
					d[x] = a * inv
					acc[x-x0] = a + add[x] - sub[x]
				}
			}
		}()
	}
	wg.Wait()
}

// Blur approximates a Gaussian of the given sigma (pixels) with three box
// passes; tmp is scratch of the same size. Result in p.
func Blur(p, tmp *Plane, sigma float64) {
	if sigma < 0.5 {
		return
	}
	// Box radius for three passes: sigma^2 = 3 * ((2r+1)^2-1)/12.
	r := int(math.Round((math.Sqrt(4*sigma*sigma+1) - 1) / 2))
	r = max(r, 1)
	for range 3 {
		BoxBlurH(tmp, p, r)
		BoxBlurV(p, tmp, r)
	}
}

// Downsample averages f x f blocks (edge blocks partial).
func Downsample(src *Plane, f int) *Plane {
	if f <= 1 {
		out := NewPlane(src.W, src.H)
		copy(out.P, src.P)
		return out
	}
	w, h := (src.W+f-1)/f, (src.H+f-1)/f
	out := NewPlane(w, h)
	ParallelRows(h, func(y0, y1 int) {
		for y := y0; y < y1; y++ {
			sy0, sy1 := y*f, min(y*f+f, src.H)
			for x := 0; x < w; x++ {
				sx0, sx1 := x*f, min(x*f+f, src.W)
				var s float32
				for sy := sy0; sy < sy1; sy++ {
					row := src.P[sy*src.W:]
					for sx := sx0; sx < sx1; sx++ {
						s += row[sx]
					}
				}
				out.P[y*w+x] = s / float32((sy1-sy0)*(sx1-sx0))
			}
		}
	})
	return out
}

// Upsample bilinearly resizes a block-averaged plane (factor f) back to w x h.
func Upsample(src *Plane, f, w, h int) *Plane {
	out := NewPlane(w, h)
	if f <= 1 && src.W == w && src.H == h {
		copy(out.P, src.P)
		return out
	}
	inv := 1 / float32(f)
	// Precompute x taps.
	x0s := make([]int, w)
	fxs := make([]float32, w)
	for x := 0; x < w; x++ {
		sx := (float32(x)+0.5)*inv - 0.5
		ix := int(math.Floor(float64(sx)))
		fxs[x] = sx - float32(ix)
		x0s[x] = ix
	}
	ParallelRows(h, func(y0, y1 int) {
		for y := y0; y < y1; y++ {
			sy := (float32(y)+0.5)*inv - 0.5
			iy := int(math.Floor(float64(sy)))
			fy := sy - float32(iy)
			ra := src.P[min(max(iy, 0), src.H-1)*src.W:]
			rb := src.P[min(max(iy+1, 0), src.H-1)*src.W:]
			o := out.P[y*w:]
			for x := 0; x < w; x++ {
				ix := x0s[x]
				fx := fxs[x]
				xa, xb := min(max(ix, 0), src.W-1), min(max(ix+1, 0), src.W-1)
				a := ra[xa] + (ra[xb]-ra[xa])*fx
				b := rb[xa] + (rb[xb]-rb[xa])*fx
				o[x] = a + (b-a)*fy
			}
		}
	})
	return out
}

// WideBlur blurs with a large sigma cheaply: block-average by a factor that
// keeps the reduced sigma near 4 px, blur there, and upsample.
func WideBlur(src *Plane, sigma float64) *Plane {
	f := max(1, int(sigma/4))
	small := Downsample(src, f)
	tmp := NewPlane(small.W, small.H)
	Blur(small, tmp, sigma/float64(f))
	return Upsample(small, f, src.W, src.H)
}

// MaskPlane converts an optional person mask to a 0..1 plane at w x h,
// resampling bilinearly when its size differs.
func MaskPlane(m *image.Gray, w, h int) *Plane {
	if m == nil {
		return nil
	}
	mb := m.Bounds()
	mw, mh := mb.Dx(), mb.Dy()
	if mw == 0 || mh == 0 {
		return nil
	}
	out := NewPlane(w, h)
	if mw == w && mh == h {
		for y := 0; y < h; y++ {
			row := m.Pix[y*m.Stride : y*m.Stride+w]
			o := out.P[y*w : (y+1)*w]
			for x, v := range row {
				o[x] = float32(v) * (1.0 / 255)
			}
		}
		return out
	}
	sx := float64(mw) / float64(w)
	sy := float64(mh) / float64(h)
	ParallelRows(h, func(y0, y1 int) {
		for y := y0; y < y1; y++ {
			fy := (float64(y)+0.5)*sy - 0.5
			iy := int(math.Floor(fy))
			ty := float32(fy - float64(iy))
			ya, yb := min(max(iy, 0), mh-1), min(max(iy+1, 0), mh-1)
			ra := m.Pix[ya*m.Stride:]
			rb := m.Pix[yb*m.Stride:]
			for x := 0; x < w; x++ {
				fx := (float64(x)+0.5)*sx - 0.5
				ix := int(math.Floor(fx))
				tx := float32(fx - float64(ix))
				xa, xb := min(max(ix, 0), mw-1), min(max(ix+1, 0), mw-1)
				a := float32(ra[xa]) + (float32(ra[xb])-float32(ra[xa]))*tx
				b := float32(rb[xa]) + (float32(rb[xb])-float32(rb[xa]))*tx
				out.P[y*w+x] = (a + (b-a)*ty) / 255
			}
		}
	})
	return out
}

func Clamp01(v float32) float32 {
	if v < 0 {
		return 0
	}
	if v > 1 {
		return 1
	}
	return v
}

func Smoothstep(e0, e1, x float32) float32 {
	t := Clamp01((x - e0) / (e1 - e0))
	return t * t * (3 - 2*t)
}
