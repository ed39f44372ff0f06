package perception

import (
	"fmt"
	"math"
	"strconv"
)

// Pure-Go rasterisation of a grey canvas that draws pixel for pixel what
// OpenCV 4.x draws for the calls DWPose's draw_pose makes (LINE_8, no
// antialiasing): ellipse2Poly, fillConvexPoly, a filled circle and a line
// of thickness 2. The algorithms follow OpenCV's drawing.cpp (fixed point
// with 16 fractional bits, its sine table, its Bresenham iterator); the
// pose-map fixtures (diffusion/testdata/fashn/pose-*.png, drawn by the
// reference with cv2) check them.

const (
	cvShift = 16
	cvOne   = 1 << cvShift
)

// grayCanvas is a one-channel 8-bit image.
type grayCanvas struct {
	w, h int
	pix  []uint8
}

func newGrayCanvas(w, h int, v uint8) *grayCanvas {
	c := &grayCanvas{w: w, h: h, pix: make([]uint8, w*h)}
	if v != 0 {
		for i := range c.pix {
			c.pix[i] = v
		}
	}
	return c
}

// hline sets x1..x2 (inclusive, already clipped) of row y.
func (c *grayCanvas) hline(y, x1, x2 int, v uint8) {
	row := c.pix[y*c.w : (y+1)*c.w]
	for x := x1; x <= x2; x++ {
		row[x] = v
	}
}

func (c *grayCanvas) put(x, y int, v uint8) {
	if x >= 0 && x < c.w && y >= 0 && y < c.h {
		c.pix[y*c.w+x] = v
	}
}

// cvSinTable is OpenCV's SinTable: sin of 0..450 degrees to 7 decimals, as
// float32.
var cvSinTable = func() [451]float32 {
	var t [451]float32
	for i := range t {
		s := strconv.FormatFloat(math.Sin(float64(i)*math.Pi/180), 'f', 7, 64)
		v, _ := strconv.ParseFloat(s, 32)
		t[i] = float32(v)
	}
	return t
}()

// cvRound is OpenCV's cvRound: round half to even.
func cvRound(v float64) int64 { return int64(math.RoundToEven(v)) }

type pt64 struct{ x, y int64 }

// ellipse2Poly is cv::ellipse2Poly with integer points: the arc from start
// to end degrees every delta degrees, rounded, consecutive duplicates
// dropped.
func ellipse2Poly(cx, cy, ax, ay int64, angle, start, end, delta int) []pt64 {
	for angle < 0 {
		angle += 360
	}
	for angle > 360 {
		angle -= 360
	}
	if start > end {
		start, end = end, start
	}
	for start < 0 {
		start += 360
		end += 360
	}
	for end > 360 {
		end -= 360
		start -= 360
	}
	if end-start > 360 {
		start, end = 0, 360
	}
	a := angle
	if a < 0 {
		a += 360
	}
	beta, alpha := float64(cvSinTable[a]), float64(cvSinTable[450-a])
	var out []pt64
	prev := pt64{math.MinInt64, math.MinInt64}
	for i := start; i < end+delta; i += delta {
		an := min(i, end)
		if an < 0 {
			an += 360
		}
		x := float64(ax) * float64(cvSinTable[450-an])
		y := float64(ay) * float64(cvSinTable[an])
		p := pt64{cvRound(float64(cx) + x*alpha - y*beta), cvRound(float64(cy) + x*beta + y*alpha)}
		if p != prev {
			out = append(out, p)
			prev = p
		}
	}
	if len(out) == 1 {
		out = []pt64{{cx, cy}, {cx, cy}}
	}
	return out
}

// clipLine is cv::clipLine on a w×h area; false when the segment is
// outside.
func clipLine(w, h int64, p1, p2 *pt64) bool {
	if w <= 0 || h <= 0 {
		return false
	}
	right, bottom := w-1, h-1
	code := func(p pt64) int {
		c := 0
		if p.x < 0 {
			c |= 1
		}
		if p.x > right {
			c |= 2
		}
		if p.y < 0 {
			c |= 4
		}
		if p.y > bottom {
			c |= 8
		}
		return c
	}
	xcode := func(x int64) int {
		c := 0
		if x < 0 {
			c |= 1
		}
		if x > right {
			c |= 2
		}
		return c
	}
	c1, c2 := code(*p1), code(*p2)
	if c1&c2 == 0 && c1|c2 != 0 {
		if c1&12 != 0 {
			a := bottom
			if c1 < 8 {
				a = 0
			}
			p1.x += int64(float64(a-p1.y) * float64(p2.x-p1.x) / float64(p2.y-p1.y))
			p1.y = a
			c1 = xcode(p1.x)
		}
		if c2&12 != 0 {
			a := bottom
			if c2 < 8 {
				a = 0
			}
			p2.x += int64(float64(a-p2.y) * float64(p2.x-p1.x) / float64(p2.y-p1.y))
			p2.y = a
			c2 = xcode(p2.x)
		}
		if c1&c2 == 0 && c1|c2 != 0 {
			if c1 != 0 {
				a := right
				if c1 == 1 {
					a = 0
				}
				p1.y += int64(float64(a-p1.x) * float64(p2.y-p1.y) / float64(p2.x-p1.x))
				p1.x = a
				c1 = 0
			}
			if c2 != 0 {
				a := right
				if c2 == 1 {
					a = 0
				}
				p2.y += int64(float64(a-p2.x) * float64(p2.y-p1.y) / float64(p2.x-p1.x))
				p2.x = a
				c2 = 0
			}
		}
	}
	return c1|c2 == 0
}

// line8 is OpenCV's Line with an 8-connected LineIterator (left to right,
// clipped to the canvas).
func (c *grayCanvas) line8(p1, p2 pt64, v uint8) {
	w, h := int64(c.w), int64(c.h)
	if uint64(p1.x) >= uint64(w) || uint64(p2.x) >= uint64(w) || uint64(p1.y) >= uint64(h) || uint64(p2.y) >= uint64(h) {
		if !clipLine(w, h, &p1, &p2) {
			return
		}
	}
	dx, dy := p2.x-p1.x, p2.y-p1.y
	sx, sy := int64(1), int64(1)
	if dx < 0 {
		dx, dy = -dx, -dy
		p1 = p2
	}
	if dy < 0 {
		dy = -dy
		sy = -1
	}
	vert := dy > dx
	if vert {
		dx, dy = dy, dx
		sx, sy = sy, sx
	}
	err := dx - 2*dy
	plusDelta, minusDelta := 2*dx, -2*dy
	// Per step: the major axis always moves by sx; the minor by sy when
	// err < 0 (before the update).
	x, y := p1.x, p1.y
	for range dx + 1 {
		c.put(int(x), int(y), v)
		minor := err < 0
		if minor {
			err += minusDelta + plusDelta
		} else {
			err += minusDelta
		}
		if vert {
			y += sx
			if minor {
				x += sy
			}
		} else {
			x += sx
			if minor {
				y += sy
			}
		}
	}
}

// line2 is OpenCV's Line2: a line between fixed-point (16-bit) ends.
func (c *grayCanvas) line2(p1, p2 pt64, v uint8) {
	if !clipLine(int64(c.w)<<cvShift, int64(c.h)<<cvShift, &p1, &p2) {
		return
	}
	dx, dy := p2.x-p1.x, p2.y-p1.y
	ax, ay := abs64(dx), abs64(dy)
	var xStep, yStep int64
	var ecount int
	if ax > ay {
		if dx < 0 {
			dy = -dy
			p1, p2 = p2, p1
		}
		xStep = cvOne
		yStep = dy * cvOne / (ax | 1)
		ecount = int((p2.x - p1.x) >> cvShift)
	} else {
		if dy < 0 {
			dx = -dx
			p1, p2 = p2, p1
		}
		xStep = dx * cvOne / (ay | 1)
		yStep = cvOne
		ecount = int((p2.y - p1.y) >> cvShift)
	}
	p1.x += cvOne >> 1
	p1.y += cvOne >> 1
	c.put(int((p2.x+cvOne>>1)>>cvShift), int((p2.y+cvOne>>1)>>cvShift), v)
	if ax > ay {
		p1.x >>= cvShift
		for ; ecount >= 0; ecount-- {
			c.put(int(p1.x), int(p1.y>>cvShift), v)
			p1.x++
			p1.y += yStep
		}
		return
	}
	p1.y >>= cvShift
	for ; ecount >= 0; ecount-- {
		c.put(int(p1.x>>cvShift), int(p1.y), v)
		p1.x += xStep
		p1.y++
	}
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// fillConvexPoly is OpenCV's FillConvexPoly (LINE_8) of points with shift
// fractional bits: the outline with line8 (shift 0) or line2, then the
// scanlines between the two edge walkers.
func (c *grayCanvas) fillConvexPoly(v []pt64, shift uint, col uint8) {
	npts := len(v)
	if npts == 0 {
		return
	}
	delta := int64(1) << shift >> 1
	const delta1, delta2 = cvOne >> 1, cvOne >> 1
	p0 := pt64{v[npts-1].x << (cvShift - shift), v[npts-1].y << (cvShift - shift)}
	xmin, xmax, ymin, ymax := v[0].x, v[0].x, v[0].y, v[0].y
	imin := 0
	for i, q := range v {
		if q.y < ymin {
			ymin, imin = q.y, i
		}
		ymax, xmax, xmin = max(ymax, q.y), max(xmax, q.x), min(xmin, q.x)
		p := pt64{q.x << (cvShift - shift), q.y << (cvShift - shift)}
		if shift == 0 {
			c.line8(pt64{p0.x >> cvShift, p0.y >> cvShift}, pt64{p.x >> cvShift, p.y >> cvShift}, col)
		} else {
			c.line2(p0, p, col)
		}
		p0 = p
	}
	xmin, xmax = (xmin+delta)>>shift, (xmax+delta)>>shift
	ymin, ymax = (ymin+delta)>>shift, (ymax+delta)>>shift
	if npts < 3 || int(xmax) < 0 || int(ymax) < 0 || int(xmin) >= c.w || int(ymin) >= c.h {
		return
	}
	ymax = min(ymax, int64(c.h-1))
	type walker struct {
		idx, di int
		x, dx   int64
		ye      int
	}
	edge := [2]walker{{idx: imin, di: 1, x: -cvOne, ye: int(ymin)}, {idx: imin, di: npts - 1, x: -cvOne, ye: int(ymin)}}
	edges := npts
	for y := int(ymin); y <= int(ymax); y++ {
		for i := range edge {
			if y < edge[i].ye {
				continue
			}
			idx0, di := edge[i].idx, edge[i].di
			idx := (idx0 + di) % npts
			for {
				// The reference's `for (; edges-- > 0; )`: the count drops
				// on every test, the failing one included.
				more := edges > 0
				edges--
				if !more {
					break
				}
				ty := int((v[idx].y + delta) >> shift)
				if ty > y {
					xs, xe := v[idx0].x<<(cvShift-shift), v[idx].x<<(cvShift-shift)
					edge[i].ye = ty
					edge[i].dx = ((xe-xs)*2 + int64(ty-y)) / (2 * int64(ty-y))
					edge[i].x = xs
					edge[i].idx = idx
					break
				}
				idx0 = idx
				idx = (idx + di) % npts
			}
		}
		if edges < 0 {
			break
		}
		if y >= 0 {
			l, r := 0, 1
			if edge[0].x > edge[1].x {
				l, r = 1, 0
			}
			x1, x2 := int((edge[l].x+delta1)>>cvShift), int((edge[r].x+delta2)>>cvShift)
			if x2 >= 0 && x1 < c.w {
				c.hline(y, max(x1, 0), min(x2, c.w-1), col)
			}
		}
		edge[0].x += edge[0].dx
		edge[1].x += edge[1].dx
	}
}

// circleFill is OpenCV's Circle with fill (cv2.circle, thickness -1,
// LINE_8).
func (c *grayCanvas) circleFill(cx, cy, radius int, col uint8) {
	var errv, dy int
	dx, plus, minus := radius, 1, (radius<<1)-1
	inside := cx >= radius && cx < c.w-radius && cy >= radius && cy < c.h-radius
	span := func(y, x1, x2 int, clipX bool) {
		if clipX {
			x1, x2 = max(x1, 0), min(x2, c.w-1)
		}
		if y >= 0 && y < c.h && x1 <= x2 {
			c.hline(y, x1, x2, col)
		}
	}
	for dx >= dy {
		y11, y12, y21, y22 := cy-dy, cy+dy, cy-dx, cy+dx
		x11, x12, x21, x22 := cx-dx, cx+dx, cx-dy, cx+dy
		switch {
		case inside:
			span(y11, x11, x12, false)
			span(y12, x11, x12, false)
			span(y21, x21, x22, false)
			span(y22, x21, x22, false)
		case x11 < c.w && x12 >= 0 && y21 < c.h && y22 >= 0:
			span(y11, x11, x12, true)
			span(y12, x11, x12, true)
			if x21 < c.w && x22 >= 0 {
				span(y21, x21, x22, true)
				span(y22, x21, x22, true)
			}
		}
		dy++
		errv += plus
		plus += 2
		mask := 0
		if errv > 0 {
			mask = -1
		}
		errv -= minus & mask
		dx += mask
		minus -= mask & 2
	}
}

// thickLine is cv2.line with thickness > 1 (LINE_8, integer ends): a
// fixed-point quadrilateral and round caps.
func (c *grayCanvas) thickLine(p0, p1 pt64, thickness int, col uint8) {
	p0 = pt64{p0.x << cvShift, p0.y << cvShift}
	p1 = pt64{p1.x << cvShift, p1.y << cvShift}
	dx := float64(p0.x-p1.x) / cvOne
	dy := float64(p1.y-p0.y) / cvOne
	r := dx*dx + dy*dy
	odd := thickness & 1
	t := int64(thickness) << (cvShift - 1)
	if math.Abs(r) > 2.220446049250313e-16 {
		r = (float64(t) + float64(odd)*cvOne*0.5) / math.Sqrt(r)
		d := pt64{cvRound(dy * r), cvRound(dx * r)}
		c.fillConvexPoly([]pt64{{p0.x + d.x, p0.y + d.y}, {p0.x - d.x, p0.y - d.y}, {p1.x - d.x, p1.y - d.y}, {p1.x + d.x, p1.y + d.y}}, cvShift, col)
	}
	for _, p := range []pt64{p0, p1} {
		c.circleFill(int((p.x+cvOne>>1)>>cvShift), int((p.y+cvOne>>1)>>cvShift), int((t+cvOne>>1)>>cvShift), col)
	}
}

// checkCanvasSize refuses sizes a pose map cannot have.
func checkCanvasSize(w, h int) error {
	if w < 1 || h < 1 || w > 1<<14 || h > 1<<14 {
		return fmt.Errorf("pose map: size %dx%d must be in 1..16384", w, h)
	}
	return nil
}
