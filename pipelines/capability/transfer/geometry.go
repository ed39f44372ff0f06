package transfer

import (
	"image"
	"math"

	"fashiond/perception"
	"fashiond/pipelines/capability/mask"
)

// sideOf reports which side of the line a->b the point p lies on (+1/-1).
func sideOf(a, b, p perception.Point) float64 {
	v := (b.X-a.X)*(p.Y-a.Y) - (b.Y-a.Y)*(p.X-a.X)
	if v < 0 {
		return -1
	}
	return 1
}

// splitMask returns the garment pixels on p's side of the line a->b (the
// line extended both ways).
func splitMask(m *image.Gray, a, b, p perception.Point) *image.Gray {
	out := image.NewGray(m.Rect)
	s := sideOf(a, b, p)
	w := m.Rect.Dx()
	for i, v := range m.Pix {
		if v < 128 {
			continue
		}
		q := perception.Point{X: float64(i%w) + 0.5, Y: float64(i/w) + 0.5}
		if sideOf(a, b, q) == s {
			out.Pix[i] = 255
		}
	}
	return out
}

func subMask(a, b *image.Gray) *image.Gray {
	out := image.NewGray(a.Rect)
	for i, v := range a.Pix {
		if v >= 128 && b.Pix[i] < 128 {
			out.Pix[i] = 255
		}
	}
	return out
}

// extent walks from c along dir while the mask is on (allowing gaps of a
// few pixels) and returns the distance reached.
func extent(m *image.Gray, c, dir perception.Point, limit float64) float64 {
	w, h := m.Rect.Dx(), m.Rect.Dy()
	last, gap := 0.0, 0
	for t := 0.0; t <= limit; t++ {
		q := add(c, mul(dir, t))
		x, y := int(q.X), int(q.Y)
		if x < 0 || y < 0 || x >= w || y >= h {
			break
		}
		if m.Pix[y*m.Stride+x] >= 128 {
			last, gap = t, 0
		} else if gap++; gap > 6 && t > 2 {
			break
		}
	}
	return last
}

// polyAt returns the point at arc length t along the polyline and the unit
// direction of its segment there.
func polyAt(poly []perception.Point, t float64) (perception.Point, perception.Point) {
	for i := 1; i < len(poly); i++ {
		l := dist(poly[i-1], poly[i])
		if t <= l || i == len(poly)-1 {
			return lerp(poly[i-1], poly[i], t/math.Max(l, 1e-9)), unit(sub(poly[i], poly[i-1]))
		}
		t -= l
	}
	return poly[0], perception.Point{X: 0, Y: 1}
}

func polyLen(poly []perception.Point) float64 {
	l := 0.0
	for i := 1; i < len(poly); i++ {
		l += dist(poly[i-1], poly[i])
	}
	return l
}

func inPoly(poly []perception.Point, p perception.Point) bool {
	in := false
	for i, j := 0, len(poly)-1; i < len(poly); j, i = i, i+1 {
		a, b := poly[i], poly[j]
		if (a.Y > p.Y) != (b.Y > p.Y) && p.X < (b.X-a.X)*(p.Y-a.Y)/(b.Y-a.Y)+a.X {
			in = !in
		}
	}
	return in
}

func distPoly(poly []perception.Point, p perception.Point) float64 {
	best := math.Inf(1)
	for i, j := 0, len(poly)-1; i < len(poly); j, i = i, i+1 {
		a, b := poly[j], poly[i]
		d := sub(b, a)
		l2 := dot(d, d)
		t := 0.0
		if l2 > 0 {
			t = math.Min(math.Max(dot(sub(p, a), d)/l2, 0), 1)
		}
		best = math.Min(best, dist(p, lerp(a, b, t)))
	}
	return best
}

// normalOf is u turned a quarter (the left normal of a unit direction).
func normalOf(u perception.Point) perception.Point { return perception.Point{X: -u.Y, Y: u.X} }

// overlap grows a garment part by 3 pixels inside the garment mask.
func overlap(part, garmentMask *image.Gray) *image.Gray {
	d := mask.Dilate(part, 3)
	for i, v := range garmentMask.Pix {
		if v < 128 {
			d.Pix[i] = 0
		}
	}
	return d
}
