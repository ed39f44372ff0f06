// Float planes and fast blurs (the same helpers as pipelines/style, kept
// package-private in both so neither package exports raster internals).
package prompttryon

import (
	"image"
	"math"
	"runtime"
	"sync"
)

// plane is one float32 channel, row-major, w*h values.
type plane struct {
	w, h int
	p    []float32
}

func newPlane(w, h int) *plane { return &plane{w: w, h: h, p: make([]float32, w*h)} }

// parallelRows runs fn over [0,h) split into contiguous row bands, one per
// processor. fn must only touch its own rows, so the result does not depend
// on the split.
func parallelRows(h int, fn func(y0, y1 int)) {
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

// boxBlurH blurs src horizontally with a box of radius r into dst (edges
// clamped). Running sums: O(w) per row regardless of r.
func boxBlurH(dst, src *plane, r int) {
	w, h := src.w, src.h
	if r <= 0 {
		copy(dst.p, src.p)
		return
	}
	inv := 1 / float32(2*r+1)
	parallelRows(h, func(y0, y1 int) {
		for y := y0; y < y1; y++ {
			s := src.p[y*w : (y+1)*w]
			d := dst.p[y*w : (y+1)*w]
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

// boxBlurV blurs src vertically with a box of radius r into dst.
func boxBlurV(dst, src *plane, r int) {
	w, h := src.w, src.h
	if r <= 0 {
		copy(dst.p, src.p)
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
				row := src.p[min(max(i, 0), h-1)*w:]
				for x := x0; x < x1; x++ {
					acc[x-x0] += row[x]
				}
			}
			for y := 0; y < h; y++ {
				d := dst.p[y*w:]
				add := src.p[min(y+r+1, h-1)*w:]
				sub := src.p[max(y-r, 0)*w:]
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

// blur approximates a Gaussian of the given sigma (pixels) with three box
// passes; tmp is scratch of the same size. Result in p.
func blur(p, tmp *plane, sigma float64) {
	if sigma < 0.5 {
		return
	}
	// Box radius for three passes: sigma^2 = 3 * ((2r+1)^2-1)/12.
	r := int(math.Round((math.Sqrt(4*sigma*sigma+1) - 1) / 2))
	r = max(r, 1)
	for range 3 {
		boxBlurH(tmp, p, r)
		boxBlurV(p, tmp, r)
	}
}

// downsample averages f x f blocks (edge blocks partial).
func downsample(src *plane, f int) *plane {
	if f <= 1 {
		out := newPlane(src.w, src.h)
		copy(out.p, src.p)
		return out
	}
	w, h := (src.w+f-1)/f, (src.h+f-1)/f
	out := newPlane(w, h)
	parallelRows(h, func(y0, y1 int) {
		for y := y0; y < y1; y++ {
			sy0, sy1 := y*f, min(y*f+f, src.h)
			for x := 0; x < w; x++ {
				sx0, sx1 := x*f, min(x*f+f, src.w)
				var s float32
				for sy := sy0; sy < sy1; sy++ {
					row := src.p[sy*src.w:]
					for sx := sx0; sx < sx1; sx++ {
						s += row[sx]
					}
				}
				out.p[y*w+x] = s / float32((sy1-sy0)*(sx1-sx0))
			}
		}
	})
	return out
}

// upsample bilinearly resizes a block-averaged plane (factor f) back to w x h.
func upsample(src *plane, f, w, h int) *plane {
	out := newPlane(w, h)
	if f <= 1 && src.w == w && src.h == h {
		copy(out.p, src.p)
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
	parallelRows(h, func(y0, y1 int) {
		for y := y0; y < y1; y++ {
			sy := (float32(y)+0.5)*inv - 0.5
			iy := int(math.Floor(float64(sy)))
			fy := sy - float32(iy)
			ra := src.p[min(max(iy, 0), src.h-1)*src.w:]
			rb := src.p[min(max(iy+1, 0), src.h-1)*src.w:]
			o := out.p[y*w:]
			for x := 0; x < w; x++ {
				ix := x0s[x]
				fx := fxs[x]
				xa, xb := min(max(ix, 0), src.w-1), min(max(ix+1, 0), src.w-1)
				a := ra[xa] + (ra[xb]-ra[xa])*fx
				b := rb[xa] + (rb[xb]-rb[xa])*fx
				o[x] = a + (b-a)*fy
			}
		}
	})
	return out
}

// wideBlur blurs with a large sigma cheaply: block-average by a factor that
// keeps the reduced sigma near 4 px, blur there, and upsample.
func wideBlur(src *plane, sigma float64) *plane {
	f := max(1, int(sigma/4))
	small := downsample(src, f)
	tmp := newPlane(small.w, small.h)
	blur(small, tmp, sigma/float64(f))
	return upsample(small, f, src.w, src.h)
}

// maskPlane converts an optional person mask to a 0..1 plane at w x h,
// resampling bilinearly when its size differs.
func maskPlane(m *image.Gray, w, h int) *plane {
	if m == nil {
		return nil
	}
	mb := m.Bounds()
	mw, mh := mb.Dx(), mb.Dy()
	if mw == 0 || mh == 0 {
		return nil
	}
	out := newPlane(w, h)
	if mw == w && mh == h {
		for y := 0; y < h; y++ {
			row := m.Pix[y*m.Stride : y*m.Stride+w]
			o := out.p[y*w : (y+1)*w]
			for x, v := range row {
				o[x] = float32(v) * (1.0 / 255)
			}
		}
		return out
	}
	sx := float64(mw) / float64(w)
	sy := float64(mh) / float64(h)
	parallelRows(h, func(y0, y1 int) {
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
				out.p[y*w+x] = (a + (b-a)*ty) / 255
			}
		}
	})
	return out
}

func clamp01(v float32) float32 {
	if v < 0 {
		return 0
	}
	if v > 1 {
		return 1
	}
	return v
}

func smoothstep(e0, e1, x float32) float32 {
	t := clamp01((x - e0) / (e1 - e0))
	return t * t * (3 - 2*t)
}
