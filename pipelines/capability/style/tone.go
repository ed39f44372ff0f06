package style

import (
	"fashiond/pipelines/capability/raster"
	"math"
	"sync"
)

// sRGB <-> linear tables.
var (
	lutOnce   sync.Once
	toLinear8 [256]float32 // byte -> linear light
	toSRGB    [4097]float32
)

func initLUTs() {
	lutOnce.Do(func() {
		for i := range toLinear8 {
			toLinear8[i] = float32(raster.SRGBToLinear(float64(i) / 255))
		}
		for i := range toSRGB {
			toSRGB[i] = float32(raster.LinearToSRGB(float64(i) / 4096))
		}
	})
}

// encode maps linear light (>= 0) to sRGB 0..1 with a soft highlight
// shoulder above 0.8 so that exposure and flash gains roll off instead of
// clipping flat.
func encode(v float32) float32 {
	if v <= 0 {
		return 0
	}
	if v > 0.8 {
		// Rational shoulder: slope 1 at 0.8, approaches 1 asymptotically.
		t := (v - 0.8) / 0.2
		v = 0.8 + 0.2*t/(1+t)
	}
	f := v * 4096
	i := int(f)
	if i >= 4096 {
		return toSRGB[4096]
	}
	t := f - float32(i)
	return toSRGB[i] + (toSRGB[i+1]-toSRGB[i])*t
}

// curve is a tone curve sampled into a table over 0..1.
type curve struct {
	lut [1025]float32
}

// pt is a curve control point (input, output), both 0..1.
type pt struct{ x, y float32 }

// newCurve builds a monotone cubic (Fritsch–Carlson) curve through pts,
// which must be sorted by x and include x=0 and x=1.
func newCurve(pts ...pt) *curve {
	c := &curve{}
	n := len(pts)
	if n < 2 {
		for i := range c.lut {
			c.lut[i] = float32(i) / 1024
		}
		return c
	}
	d := make([]float64, n-1) // secant slopes
	for i := 0; i < n-1; i++ {
		d[i] = float64(pts[i+1].y-pts[i].y) / float64(pts[i+1].x-pts[i].x)
	}
	m := make([]float64, n)
	m[0], m[n-1] = d[0], d[n-2]
	for i := 1; i < n-1; i++ {
		if d[i-1]*d[i] <= 0 {
			m[i] = 0
		} else {
			m[i] = (d[i-1] + d[i]) / 2
		}
	}
	for i := 0; i < n-1; i++ {
		if d[i] == 0 {
			m[i], m[i+1] = 0, 0
			continue
		}
		a, b := m[i]/d[i], m[i+1]/d[i]
		if s := a*a + b*b; s > 9 {
			t := 3 / math.Sqrt(s)
			m[i], m[i+1] = t*a*d[i], t*b*d[i]
		}
	}
	seg := 0
	for i := range c.lut {
		x := float64(i) / 1024
		for seg < n-2 && x > float64(pts[seg+1].x) {
			seg++
		}
		x0, x1 := float64(pts[seg].x), float64(pts[seg+1].x)
		y0, y1 := float64(pts[seg].y), float64(pts[seg+1].y)
		h := x1 - x0
		t := (x - x0) / h
		t2, t3 := t*t, t*t*t
		y := (2*t3-3*t2+1)*y0 + (t3-2*t2+t)*h*m[seg] + (-2*t3+3*t2)*y1 + (t3-t2)*h*m[seg+1]
		c.lut[i] = float32(min(max(y, 0), 1))
	}
	return c
}

func (c *curve) at(v float32) float32 {
	if v <= 0 {
		return c.lut[0]
	}
	if v >= 1 {
		return c.lut[1024]
	}
	f := v * 1024
	i := int(f)
	t := f - float32(i)
	return c.lut[i] + (c.lut[i+1]-c.lut[i])*t
}

// luma is Rec. 709 luma of gamma-encoded values (a perceptual brightness
// good enough for grading decisions).
func luma(r, g, b float32) float32 { return 0.2126*r + 0.7152*g + 0.0722*b }

// toneTint is a zero-luma colour offset for split toning: the fully
// saturated colour of hue h (degrees) minus its luma.
func toneTint(h float64) [3]float32 {
	r, g, b := hueRGB(h)
	l := luma(r, g, b)
	return [3]float32{r - l, g - l, b - l}
}

// hueRGB returns the fully saturated, full-value colour of hue h (degrees).
func hueRGB(h float64) (r, g, b float32) {
	h = math.Mod(h, 360)
	if h < 0 {
		h += 360
	}
	x := float32(1 - math.Abs(math.Mod(h/60, 2)-1))
	switch {
	case h < 60:
		return 1, x, 0
	case h < 120:
		return x, 1, 0
	case h < 180:
		return 0, 1, x
	case h < 240:
		return 0, x, 1
	case h < 300:
		return x, 0, 1
	default:
		return 1, 0, x
	}
}
