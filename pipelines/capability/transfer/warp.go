package transfer

import (
	"errors"
	"image"
	"math"

	"fashiond/perception"
)

// A Mapping maps an output (body) position to a garment position: the
// backward map used to sample the garment.
type Mapping interface {
	Map(x, y float64) (gx, gy float64, ok bool)
}

// Affine is x' = A[0]x + A[1]y + A[2], y' = A[3]x + A[4]y + A[5].
type Affine [6]float64

// Map implements Mapping.
func (a Affine) Map(x, y float64) (float64, float64, bool) {
	return a[0]*x + a[1]*y + a[2], a[3]*x + a[4]*y + a[5], true
}

// FitAffine fits the least-squares affine map taking src[i] to dst[i]
// (at least three points not on a line).
func FitAffine(src, dst []perception.Point) (Affine, error) {
	if len(src) != len(dst) || len(src) < 3 {
		return Affine{}, errors.New("tryon: affine fit needs at least 3 point pairs")
	}
	// Normal equations for [x y 1] * [a b c]^T = x'.
	var m [3][3]float64
	var bx, by [3]float64
	for i, p := range src {
		v := [3]float64{p.X, p.Y, 1}
		for r := 0; r < 3; r++ {
			for c := 0; c < 3; c++ {
				m[r][c] += v[r] * v[c]
			}
			bx[r] += v[r] * dst[i].X
			by[r] += v[r] * dst[i].Y
		}
	}
	sx, err := solve3(m, bx)
	if err != nil {
		return Affine{}, err
	}
	sy, err := solve3(m, by)
	if err != nil {
		return Affine{}, err
	}
	return Affine{sx[0], sx[1], sx[2], sy[0], sy[1], sy[2]}, nil
}

func solve3(m [3][3]float64, b [3]float64) ([3]float64, error) {
	a := make([][]float64, 3)
	for i := range a {
		a[i] = append(m[i][:], b[i])
	}
	x, err := gauss(a)
	if err != nil {
		return [3]float64{}, err
	}
	return [3]float64{x[0], x[1], x[2]}, nil
}

// Similarity returns the similarity map (rotation, uniform scale,
// translation) taking a0->b0 and a1->b1.
func Similarity(a0, a1, b0, b1 perception.Point) Affine {
	ax, ay := a1.X-a0.X, a1.Y-a0.Y
	bx, by := b1.X-b0.X, b1.Y-b0.Y
	d := ax*ax + ay*ay
	if d == 0 {
		return Affine{1, 0, b0.X - a0.X, 0, 1, b0.Y - a0.Y}
	}
	// complex ratio (bx+i by)/(ax+i ay)
	c := (bx*ax + by*ay) / d
	s := (by*ax - bx*ay) / d
	return Affine{c, -s, b0.X - (c*a0.X - s*a0.Y), s, c, b0.Y - (s*a0.X + c*a0.Y)}
}

// Apply maps a point.
func (a Affine) Apply(p perception.Point) perception.Point {
	x, y, _ := a.Map(p.X, p.Y)
	return perception.Point{X: x, Y: y}
}

// gauss solves the augmented system a (n rows of n+1) by Gaussian
// elimination with partial pivoting.
func gauss(a [][]float64) ([]float64, error) {
	n := len(a)
	for c := 0; c < n; c++ {
		p := c
		for r := c + 1; r < n; r++ {
			if math.Abs(a[r][c]) > math.Abs(a[p][c]) {
				p = r
			}
		}
		if math.Abs(a[p][c]) < 1e-12 {
			return nil, errors.New("tryon: singular system (degenerate landmarks)")
		}
		a[c], a[p] = a[p], a[c]
		for r := c + 1; r < n; r++ {
			f := a[r][c] / a[c][c]
			if f == 0 {
				continue
			}
			for k := c; k <= n; k++ {
				a[r][k] -= f * a[c][k]
			}
		}
	}
	x := make([]float64, n)
	for r := n - 1; r >= 0; r-- {
		s := a[r][n]
		for k := r + 1; k < n; k++ {
			s -= a[r][k] * x[k]
		}
		x[r] = s / a[r][r]
	}
	return x, nil
}

// TPS is a 2-D thin-plate spline f(p) = a0 + a1 x + a2 y + sum w_i U(|p-c_i|)
// with U(r) = r^2 log r^2, one per output coordinate. Coordinates are
// normalised internally for conditioning.
type TPS struct {
	ctrl         []perception.Point // normalised control points
	wx, wy       []float64
	ax, ay       [3]float64
	ox, oy, scal float64
}

func tpsU(r2 float64) float64 {
	if r2 < 1e-12 {
		return 0
	}
	return r2 * math.Log(r2)
}

// FitTPS fits the spline taking src[i] to dst[i] by solving the (n+3)x(n+3)
// system [K+lambda I, P; P^T, 0]. lambda >= 0 relaxes interpolation
// (smoothing) in normalised units.
func FitTPS(src, dst []perception.Point, lambda float64) (*TPS, error) {
	n := len(src)
	if n != len(dst) || n < 3 {
		return nil, errors.New("tryon: thin-plate spline needs at least 3 point pairs")
	}
	t := &TPS{}
	var mx, my float64
	for _, p := range src {
		mx += p.X
		my += p.Y
	}
	mx /= float64(n)
	my /= float64(n)
	var sc float64
	for _, p := range src {
		sc = math.Max(sc, math.Hypot(p.X-mx, p.Y-my))
	}
	if sc == 0 {
		return nil, errors.New("tryon: thin-plate spline control points coincide")
	}
	t.ox, t.oy, t.scal = mx, my, sc
	t.ctrl = make([]perception.Point, n)
	for i, p := range src {
		t.ctrl[i] = perception.Point{X: (p.X - mx) / sc, Y: (p.Y - my) / sc}
	}
	build := func(v func(i int) float64) ([]float64, error) {
		m := n + 3
		a := make([][]float64, m)
		for i := range a {
			a[i] = make([]float64, m+1)
		}
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				dx, dy := t.ctrl[i].X-t.ctrl[j].X, t.ctrl[i].Y-t.ctrl[j].Y
				a[i][j] = tpsU(dx*dx + dy*dy)
			}
			a[i][i] += lambda
			a[i][n], a[i][n+1], a[i][n+2] = 1, t.ctrl[i].X, t.ctrl[i].Y
			a[n][i], a[n+1][i], a[n+2][i] = 1, t.ctrl[i].X, t.ctrl[i].Y
			a[i][m] = v(i)
		}
		return gauss(a)
	}
	sx, err := build(func(i int) float64 { return dst[i].X })
	if err != nil {
		return nil, err
	}
	sy, err := build(func(i int) float64 { return dst[i].Y })
	if err != nil {
		return nil, err
	}
	t.wx, t.wy = sx[:n], sy[:n]
	copy(t.ax[:], sx[n:])
	copy(t.ay[:], sy[n:])
	return t, nil
}

// Map implements Mapping.
func (t *TPS) Map(x, y float64) (float64, float64, bool) {
	u, v := (x-t.ox)/t.scal, (y-t.oy)/t.scal
	fx := t.ax[0] + t.ax[1]*u + t.ax[2]*v
	fy := t.ay[0] + t.ay[1]*u + t.ay[2]*v
	for i, c := range t.ctrl {
		dx, dy := u-c.X, v-c.Y
		k := tpsU(dx*dx + dy*dy)
		fx += t.wx[i] * k
		fy += t.wy[i] * k
	}
	return fx, fy, true
}

// Bone maps a body polyline (e.g. shoulder-elbow-wrist) to a straight
// garment axis: a body position is expressed as arc length along the
// polyline and signed distance from it, then placed at the proportional
// arc length along the garment axis and the distance divided by Width.
type Bone struct {
	Body   []perception.Point // polyline on the body, first point = garment axis start
	G0, G1 perception.Point   // garment axis start and end
	// Width is the body/garment width scale; Widths, when set, samples it
	// at evenly spaced fractions of the body polyline's length instead.
	Width  float64
	Widths []float64
	// Flip mirrors the across-axis direction (garment side orientation).
	Flip bool
	// Reach is how far (body pixels) from the polyline a position maps.
	Reach float64
	// Shear tilts the garment's across lines: a garment point at across
	// distance d sits Shear*d further along the axis. It makes the garment
	// root line (e.g. shoulder seam to underarm), which is oblique to a
	// flat-lay sleeve's axis, land across the arm.
	Shear float64

	lens  []float64
	total float64
}

func (b *Bone) init() {
	if b.lens != nil {
		return
	}
	b.lens = make([]float64, len(b.Body))
	for i := 1; i < len(b.Body); i++ {
		b.lens[i] = b.lens[i-1] + math.Hypot(b.Body[i].X-b.Body[i-1].X, b.Body[i].Y-b.Body[i-1].Y)
	}
	b.total = b.lens[len(b.lens)-1]
}

// Map implements Mapping.
func (b *Bone) Map(x, y float64) (float64, float64, bool) {
	b.init()
	if b.total == 0 || len(b.Body) < 2 {
		return 0, 0, false
	}
	bestD := math.Inf(1)
	var bestS, bestSide float64
	for i := 1; i < len(b.Body); i++ {
		p0, p1 := b.Body[i-1], b.Body[i]
		dx, dy := p1.X-p0.X, p1.Y-p0.Y
		l := math.Hypot(dx, dy)
		if l == 0 {
			continue
		}
		ux, uy := dx/l, dy/l
		t := (x-p0.X)*ux + (y-p0.Y)*uy
		// Let the first and last segments extend past their ends.
		lo, hi := 0.0, l
		if i == 1 {
			lo = math.Inf(-1)
		}
		if i == len(b.Body)-1 {
			hi = math.Inf(1)
		}
		tc := math.Min(math.Max(t, lo), hi)
		cx, cy := p0.X+ux*tc, p0.Y+uy*tc
		d := math.Hypot(x-cx, y-cy)
		if d < bestD {
			bestD = d
			bestS = b.lens[i-1] + tc
			side := (x-p0.X)*(-uy) + (y-p0.Y)*ux
			if side < 0 {
				bestSide = -d
			} else {
				bestSide = d
			}
		}
	}
	if bestD > b.Reach {
		return 0, 0, false
	}
	gx, gy := b.G1.X-b.G0.X, b.G1.Y-b.G0.Y
	gl := math.Hypot(gx, gy)
	if gl == 0 {
		return 0, 0, false
	}
	gux, guy := gx/gl, gy/gl
	s := bestS / b.total * gl
	d := bestSide / b.widthAt(bestS/b.total)
	if b.Flip {
		d = -d
	}
	s += b.Shear * d
	return b.G0.X + gux*s + (-guy)*d, b.G0.Y + guy*s + gux*d, true
}

func (b *Bone) widthAt(f float64) float64 {
	n := len(b.Widths)
	if n == 0 {
		return b.Width
	}
	x := f*float64(n) - 0.5
	if x <= 0 {
		return b.Widths[0]
	}
	if x >= float64(n-1) {
		return b.Widths[n-1]
	}
	i := int(x)
	t := x - float64(i)
	return b.Widths[i]*(1-t) + b.Widths[i+1]*t
}

// layer is a premultiplied float RGBA image.
type layer struct {
	w, h int
	pix  []float32 // r,g,b,a premultiplied, 0..1
}

func newLayer(w, h int) *layer { return &layer{w: w, h: h, pix: make([]float32, w*h*4)} }

// sampler reads a garment cutout with bilinear interpolation of
// premultiplied colour, restricted to a part mask.
type sampler struct {
	img  *image.NRGBA
	part *image.Gray // nil = whole garment
	w, h int
}

func (s *sampler) at(x, y int) (r, g, b, a float32) {
	if x < 0 || y < 0 || x >= s.w || y >= s.h {
		return 0, 0, 0, 0
	}
	if s.part != nil && s.part.Pix[y*s.part.Stride+x] < 128 {
		return 0, 0, 0, 0
	}
	o := y*s.img.Stride + x*4
	a = float32(s.img.Pix[o+3]) / 255
	return float32(s.img.Pix[o]) / 255 * a, float32(s.img.Pix[o+1]) / 255 * a, float32(s.img.Pix[o+2]) / 255 * a, a
}

func (s *sampler) bilinear(x, y float64) (r, g, b, a float32) {
	x -= 0.5
	y -= 0.5
	x0, y0 := int(math.Floor(x)), int(math.Floor(y))
	fx, fy := float32(x-float64(x0)), float32(y-float64(y0))
	r00, g00, b00, a00 := s.at(x0, y0)
	r10, g10, b10, a10 := s.at(x0+1, y0)
	r01, g01, b01, a01 := s.at(x0, y0+1)
	r11, g11, b11, a11 := s.at(x0+1, y0+1)
	w00, w10, w01, w11 := (1-fx)*(1-fy), fx*(1-fy), (1-fx)*fy, fx*fy
	return r00*w00 + r10*w10 + r01*w01 + r11*w11,
		g00*w00 + g10*w10 + g01*w01 + g11*w11,
		b00*w00 + b10*w10 + b01*w01 + b11*w11,
		a00*w00 + a10*w10 + a01*w01 + a11*w11
}

// warpLayer renders the garment part through the backward mapping m into a
// w x h layer, evaluating m on a grid of step pixels (bilinearly
// interpolated between) and taking ss x ss samples per pixel. Only pixels
// inside clip are rendered.
func warpLayer(s *sampler, m Mapping, w, h int, clip image.Rectangle, step, ss int) *layer {
	out := newLayer(w, h)
	clip = clip.Intersect(image.Rect(0, 0, w, h))
	if clip.Empty() {
		return out
	}
	step = max(step, 1)
	ss = max(ss, 1)
	// Grid of mapped positions at sub-pixel resolution.
	sw := clip.Dx()*ss + 1
	shh := clip.Dy()*ss + 1
	gw := (sw+step-1)/step + 1
	gh := (shh+step-1)/step + 1
	gx := make([]float64, gw*gh)
	gy := make([]float64, gw*gh)
	gok := make([]bool, gw*gh)
	for j := 0; j < gh; j++ {
		for i := 0; i < gw; i++ {
			x := float64(clip.Min.X) + float64(i*step)/float64(ss)
			y := float64(clip.Min.Y) + float64(j*step)/float64(ss)
			gx[j*gw+i], gy[j*gw+i], gok[j*gw+i] = m.Map(x, y)
		}
	}
	inv := 1 / float32(ss*ss)
	for py := clip.Min.Y; py < clip.Max.Y; py++ {
		for px := clip.Min.X; px < clip.Max.X; px++ {
			var r, g, b, a float32
			for sy := 0; sy < ss; sy++ {
				for sx := 0; sx < ss; sx++ {
					// sub-sample position in grid units
					ux := float64((px-clip.Min.X)*ss+sx) + 0.5
					uy := float64((py-clip.Min.Y)*ss+sy) + 0.5
					fi, fj := ux/float64(step), uy/float64(step)
					i0, j0 := int(fi), int(fj)
					if i0 >= gw-1 {
						i0 = gw - 2
					}
					if j0 >= gh-1 {
						j0 = gh - 2
					}
					k := j0*gw + i0
					if !gok[k] || !gok[k+1] || !gok[k+gw] || !gok[k+gw+1] {
						continue
					}
					tx, ty := fi-float64(i0), fj-float64(j0)
					mx := (gx[k]*(1-tx)+gx[k+1]*tx)*(1-ty) + (gx[k+gw]*(1-tx)+gx[k+gw+1]*tx)*ty
					my := (gy[k]*(1-tx)+gy[k+1]*tx)*(1-ty) + (gy[k+gw]*(1-tx)+gy[k+gw+1]*tx)*ty
					sr, sg, sb, sa := s.bilinear(mx, my)
					r += sr
					g += sg
					b += sb
					a += sa
				}
			}
			o := (py*w + px) * 4
			out.pix[o], out.pix[o+1], out.pix[o+2], out.pix[o+3] = r*inv, g*inv, b*inv, a*inv
		}
	}
	return out
}
