package anglegeneration

import (
	"image"
	"math"
	"sort"

	"fashiond/perception"
	"fashiond/pipelines/capability/raster"
	"fashiond/pipelines/capability/scene"
)

// body is the person prepared for novel views: the decontaminated person
// texture, the turning axes and the depth model's layout of the person.
type body struct {
	w, h  int
	img   *image.RGBA
	alpha *image.Gray
	axis  float32 // x of the vertical turning axis
	box   image.Rectangle
	pivot float32 // median model depth of the person
	ecc   float32 // depth/width ratio of the body cross-section
	// headAxis is the nose's x (the head turns about its own axis) and
	// headY0, headY1 the rows between which the turning axis blends from
	// the head's to the body's; headY1 == 0 when the pose has no nose
	headAxis       float32
	headY0, headY1 int
	// lay is the depth model's layout of the person (pixels, toward the
	// camera positive, zero at the pivot), nil without depth
	lay []float32
}

// Body layout from the depth model and the pose.
const (
	layoutBlurFrac  = 0.01 // blur radius of the layout, of the image height (at least 2 pixels)
	layoutTailDiv   = 20   // the depth range is read between the 1/20 and 19/20 quantiles
	layoutDepthFrac = 0.25 // the depth range spans this share of the person's height ...
	layoutGain      = 0.35 // ... times this
	layoutMinRange  = 0.05 // smallest depth range (model units) the scale divides by
	layoutMaxFrac   = 0.15 // the layout is clamped to this share of the person's height
	headAxisFrom    = 0.35 // the head's axis starts to blend in this far from the nose to the shoulders
	bodyEccentric   = 0.75 // depth-to-width ratio of the body's cross-section
	keypointSeen    = 0.5  // keypoint visibility above which it is used
)

// newBody prepares the person: the texture with its soft edge
// decontaminated, the body axis (shoulders and hips) and head axis (nose),
// and the depth model's layout of the person (a knee forward, an arm in
// front of the torso) scaled to pixels and smoothed within the mask.
func newBody(s *scene.Scene) *body {
	w, h := s.Image.Rect.Dx(), s.Image.Rect.Dy()
	b := &body{w: w, h: h, img: decontaminate(s.Image, s.PersonMask), alpha: s.PersonMask, ecc: bodyEccentric}
	b.box = scene.MaskBounds(s.PersonMask, 128)
	b.pivot = 0.5
	if s.Depth != nil && !b.box.Empty() {
		b.layout(s.PersonMask, s.Depth)
	}
	b.axis = float32(b.box.Min.X+b.box.Max.X) / 2
	if s.Pose != nil {
		b.axes(s.Pose)
	}
	return b
}

// layout sets the pivot (the person's median depth) and the depth model's
// layout of the person: depth about the pivot inside the mask, blurred and
// normalised by the blurred mask, scaled to pixels and clamped.
func (b *body) layout(mask *image.Gray, depth *perception.Depth) {
	w, h := b.w, b.h
	r := max(2, int(layoutBlurFrac*float64(h)))
	m := make([]float32, w*h)
	for y := 0; y < h; y++ {
		row := mask.Pix[y*mask.Stride : y*mask.Stride+w]
		for x, a := range row {
			if a > 128 {
				m[y*w+x] = 1
			}
		}
	}
	mb := append([]float32(nil), m...)
	blurPlane(mb, w, h, r)
	var v []float32
	for i, a := range mask.Pix {
		if a > 200 {
			v = append(v, depth.Data[i])
		}
	}
	if len(v) == 0 {
		return
	}
	sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
	b.pivot = v[len(v)/2]
	lo, hi := v[len(v)/layoutTailDiv], v[len(v)*(layoutTailDiv-1)/layoutTailDiv]
	k := float32(layoutDepthFrac*float64(b.box.Dy())) / max(layoutMinRange, hi-lo) * layoutGain
	d := make([]float32, w*h)
	for i := range d {
		d[i] = (depth.Data[i] - b.pivot) * m[i]
	}
	blurPlane(d, w, h, r)
	lim := layoutMaxFrac * float32(b.box.Dy())
	for i := range d {
		if mb[i] > 1e-3 {
			if b.lay == nil {
				b.lay = make([]float32, w*h)
			}
			b.lay[i] = clampf(d[i]/mb[i]*k, -lim, lim)
		}
	}
}

// axes sets the body's turning axis (the mean x of the seen shoulders and
// hips, at least two) and the head's (the nose, blending into the body's
// between headY0 and the shoulders' row headY1).
func (b *body) axes(p *perception.Pose) {
	var sx float64
	n := 0
	for _, i := range []int{perception.KpLeftShoulder, perception.KpRightShoulder, perception.KpLeftHip, perception.KpRightHip} {
		if k := p.Keypoints[i]; k.Visibility > keypointSeen && k.X >= 0 && k.X < float64(b.w) {
			sx += k.X
			n++
		}
	}
	if n >= 2 {
		b.axis = float32(sx / float64(n))
	}
	no, ls, rs := p.Keypoints[perception.KpNose], p.Keypoints[perception.KpLeftShoulder], p.Keypoints[perception.KpRightShoulder]
	if no.Visibility > keypointSeen && ls.Visibility > keypointSeen && rs.Visibility > keypointSeen && no.X >= 0 && no.X < float64(b.w) {
		sy := (ls.Y + rs.Y) / 2
		if sy > no.Y {
			b.headAxis = float32(no.X)
			b.headY0 = int(no.Y + headAxisFrom*(sy-no.Y))
			b.headY1 = int(sy)
		}
	}
}

// view renders the person turned by theta (radians; positive: the camera
// moved to the viewer's left, so the front turns to the right). Turns of 80
// degrees and more are profiles (sideView); smaller turns foreshorten every
// row about the body axis (the head about the nose): the near half widens
// by 1.1, the far half narrows to 0.45, with a clamped parallax from the
// depth model's layout. The map is monotone per row, so nothing folds:
// no disocclusion holes and no doubled limbs (an earlier z-buffered
// per-pixel warp of elliptic cross-sections ghosted limbs where its depth
// was wrong).
func (b *body) view(theta float64) (*image.RGBA, *image.Gray) {
	if math.Abs(theta) >= 80*math.Pi/180 {
		return b.sideView(theta > 0)
	}
	return b.foreshorten(theta > 0, 1.1, 0.45, 0.3*math.Abs(math.Sin(theta)))
}

// shiftBackground renders the background plate as seen after the camera
// turned by theta around the person: pixels move by their depth relative to
// the person (behind the person they move the other way), sampled from the
// plate extended by reflection. The depth is smoothed strongly and the
// shift clamped, so the plate moves as a few coherent planes: sharp depth
// steps (often wrong at the filled hole) would tear and smear it.
func shiftBackground(plate *image.RGBA, depth *perception.Depth, pivot float32, theta float64) *image.RGBA {
	w, h := plate.Rect.Dx(), plate.Rect.Dy()
	m := w / 2
	ext := scene.ExtendAt(plate, w+2*m, h, image.Pt(m, 0))
	ew := w + 2*m
	out := image.NewRGBA(plate.Rect)
	st := float32(math.Sin(theta))
	k := float32(0.3 * float64(w))
	smax := float32(0.08 * float64(w))
	var shift []float32
	if depth != nil && depth.W == w && depth.H == h {
		shift = make([]float32, w*h)
		copy(shift, depth.Data)
		blurPlane(shift, w, h, max(4, int(0.03*float64(h))))
		for i, d := range shift {
			shift[i] = -st * clampf((d-pivot)*k, -smax, smax)
		}
	}
	uniform := -st * clampf(-0.3*k, -smax, smax)
	raster.ParallelRows(h, func(y0, y1 int) {
		for y := y0; y < y1; y++ {
			for x := 0; x < w; x++ {
				sx := float32(x) + uniform
				if shift != nil {
					// two fixed-point steps: the shift at the source point
					sx = float32(x) + shift[y*w+x]
					sx = float32(x) + raster.SampleFloat(shift, w, h, min(max(sx, 0), float32(w-1)), float32(y))
				}
				r, g, b, _ := raster.SampleBilinear(ext.Pix, ew, h, sx+float32(m), float32(y))
				i := y*out.Stride + x*4
				out.Pix[i], out.Pix[i+1], out.Pix[i+2], out.Pix[i+3] = uint8(r+0.5), uint8(g+0.5), uint8(b+0.5), 255
			}
		}
	})
	return out
}

func clampf(v, lo, hi float32) float32 {
	if v < lo {
		return lo
	}
	if v > hi {
		return hi
	}
	return v
}

// blurPlane is a three-pass box blur of a float plane (radius r).
func blurPlane(p []float32, w, h, r int) {
	g := &perception.Depth{W: w, H: h, Data: p}
	// scene.ResizeDepth would resample; a box blur keeps the size.
	tmp := make([]float32, len(p))
	inv := 1 / float32(2*r+1)
	for pass := 0; pass < 3; pass++ {
		for y := 0; y < h; y++ {
			row := g.Data[y*w : (y+1)*w]
			var s float32
			for k := -r; k <= r; k++ {
				s += row[min(max(k, 0), w-1)]
			}
			for x := 0; x < w; x++ {
				tmp[y*w+x] = s * inv
				s += row[min(x+r+1, w-1)] - row[max(x-r, 0)]
			}
		}
		for x := 0; x < w; x++ {
			var s float32
			for k := -r; k <= r; k++ {
				s += tmp[min(max(k, 0), h-1)*w+x]
			}
			for y := 0; y < h; y++ {
				p[y*w+x] = s * inv
				s += tmp[min(y+r+1, h-1)*w+x] - tmp[max(y-r, 0)*w+x]
			}
		}
	}
}

// decontaminate replaces the colour of soft-edge pixels (0 < alpha < 230)
// by the nearest confident person colour, so that warps that stretch the
// edge do not smear background colour into the person.
func decontaminate(img *image.RGBA, alpha *image.Gray) *image.RGBA {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	out := image.NewRGBA(img.Rect)
	copy(out.Pix, img.Pix)
	ok := make([]bool, w*h)
	for i := range ok {
		ok[i] = alpha.Pix[(i/w)*alpha.Stride+i%w] >= 230
	}
	for pass := 0; pass < 6; pass++ {
		next := append([]bool(nil), ok...)
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				i := y*w + x
				if ok[i] || alpha.Pix[y*alpha.Stride+x] == 0 {
					continue
				}
				var sr, sg, sb, n int
				for _, d := range [4][2]int{{-1, 0}, {1, 0}, {0, -1}, {0, 1}} {
					xx, yy := x+d[0], y+d[1]
					if xx < 0 || yy < 0 || xx >= w || yy >= h || !ok[yy*w+xx] {
						continue
					}
					j := yy*out.Stride + xx*4
					sr += int(out.Pix[j])
					sg += int(out.Pix[j+1])
					sb += int(out.Pix[j+2])
					n++
				}
				if n > 0 {
					j := y*out.Stride + x*4
					out.Pix[j], out.Pix[j+1], out.Pix[j+2] = uint8(sr/n), uint8(sg/n), uint8(sb/n)
					next[i] = true
				}
			}
		}
		ok = next
	}
	return out
}

// sideView renders a profile (facing right when left is true: the camera
// moved to the viewer's left). The same monotone horizontal map is applied
// to every row, so the whole person keeps its vertical extent and vertical
// structures (legs crossing the axis, the arms, the garment edges) stay
// coherent instead of shearing row by row: the near half (silhouette edge to
// the body axis) is foreshortened to the body's depth-to-width ratio and the
// far half is folded tightly in front of the axis, with a smooth transition
// at the axis (nose, sternum, fly), so the face reads as turned with the
// near cheek and ear dominating. The real profile is unknown; this is a
// foreshortened near-profile of the front texture.
func (b *body) sideView(left bool) (*image.RGBA, *image.Gray) {
	return b.foreshorten(left, float64(b.ecc)*0.8, 0.22, 0)
}

// The turn's horizontal map: its slope changes from the near side's to the
// far side's over a logistic step about the axis.
const (
	turnWidthDiv = 4    // the step's scale: the person's width / this ...
	turnWidthMin = 4.0  // ... but at least this many pixels
	turnSoftness = 0.12 // the step's width, of that scale
	rowMinSlope  = 0.15 // smallest output step per source pixel: the row map stays monotone
)

// turnMap is the smooth monotone horizontal map of a turn: slope cn on the
// near side of the axis (x < axis when left), cf on the far side.
type turnMap struct {
	left   bool
	cn, cf float64
	tau    float64 // width of the slope's step about the axis
}

// slope is the map's derivative at x for the axis A.
func (m turnMap) slope(A, x float64) float64 {
	t := (x - A) / m.tau
	if !m.left {
		t = -t
	}
	return m.cf + (m.cn-m.cf)/(1+math.Exp(t))
}

// forward fills fw with the map (source x -> output X) about axis A,
// monotone increasing, with fw at A's pixel equal to A.
func (m turnMap) forward(A float64, fw []float64) {
	w := len(fw)
	ia := int(math.Round(A))
	ia = min(max(ia, 0), w-1)
	fw[ia] = A
	for x := ia + 1; x < w; x++ {
		fw[x] = fw[x-1] + m.slope(A, float64(x)-0.5)
	}
	for x := ia - 1; x >= 0; x-- {
		fw[x] = fw[x+1] - m.slope(A, float64(x)+0.5)
	}
}

// foreshorten maps every row with the same smooth monotone horizontal map
// around the body axis: slope cn on the near side (x < axis when left),
// cf on the far side. With par > 0 the depth model's layout adds a
// parallax of par pixels per pixel of depth, smoothed and kept monotone per
// row (no folds, so no holes and no doubled limbs).
func (b *body) foreshorten(left bool, cn, cf, par float64) (*image.RGBA, *image.Gray) {
	w, h := b.w, b.h
	out := image.NewRGBA(image.Rect(0, 0, w, h))
	alpha := image.NewGray(out.Rect)
	rt := float64(b.box.Dx()) / turnWidthDiv
	if rt < turnWidthMin {
		rt = turnWidthMin
	}
	m := turnMap{left: left, cn: cn, cf: cf, tau: turnSoftness * rt}
	body := make([]float64, w)
	m.forward(float64(b.axis), body)
	var head []float64
	if b.headY1 > 0 {
		head = make([]float64, w)
		m.forward(float64(b.headAxis), head)
	}
	sign := float32(1)
	if !left {
		sign = -1
	}
	raster.ParallelRows(h, func(y0, y1 int) {
		rowF := make([]float64, w)
		inv := make([]float32, w)
		for y := y0; y < y1; y++ {
			b.rowMap(rowF, y, body, head, par, sign)
			invertRow(rowF, inv)
			b.sampleRow(out, alpha, y, inv)
		}
	})
	return out, alpha
}

// rowMap fills rowF with row y's forward map: the body's map, blended
// towards the head's above the shoulders, plus the layout's parallax (par
// pixels per pixel of depth, signed by the turn), kept monotone.
func (b *body) rowMap(rowF []float64, y int, body, head []float64, par float64, sign float32) {
	hw := 0.0 // weight of the head's axis on this row
	if head != nil {
		hw = float64(b.headY1-y) / float64(max(1, b.headY1-b.headY0))
		hw = min(max(hw, 0), 1)
	}
	for x := range rowF {
		rowF[x] = body[x]
		if hw > 0 {
			rowF[x] = hw*head[x] + (1-hw)*body[x]
		}
		if par > 0 && b.lay != nil {
			rowF[x] += par * float64(sign*b.lay[y*b.w+x])
		}
		if x > 0 && rowF[x] < rowF[x-1]+rowMinSlope {
			rowF[x] = rowF[x-1] + rowMinSlope
		}
	}
}

// invertRow fills inv with the inverse of the monotone row map rowF:
// output X -> source x, NaN where nothing maps.
func invertRow(rowF []float64, inv []float32) {
	w := len(rowF)
	k := 0
	for X := 0; X < w; X++ {
		inv[X] = float32(math.NaN())
		fx := float64(X)
		if fx < rowF[0] || fx > rowF[w-1] {
			continue
		}
		for k < w-2 && rowF[k+1] < fx {
			k++
		}
		f := (fx - rowF[k]) / max(rowF[k+1]-rowF[k], 1e-6)
		inv[X] = float32(float64(k) + min(max(f, 0), 1))
	}
}

// sampleRow draws row y of the person layer and its alpha from the source
// positions inv (linear interpolation; NaN and transparent stay empty).
func (b *body) sampleRow(out *image.RGBA, alpha *image.Gray, y int, inv []float32) {
	w := b.w
	irow := b.img.Pix[y*b.img.Stride:]
	arow := b.alpha.Pix[y*b.alpha.Stride:]
	orow := out.Pix[y*out.Stride:]
	grow := alpha.Pix[y*alpha.Stride:]
	for X := 0; X < w; X++ {
		sx := inv[X]
		if sx != sx {
			continue
		}
		x0 := int(sx)
		x1 := min(x0+1, w-1)
		f := sx - float32(x0)
		a := float32(arow[x0])*(1-f) + float32(arow[x1])*f
		if a < 1 {
			continue
		}
		for c := 0; c < 3; c++ {
			orow[X*4+c] = uint8(float32(irow[x0*4+c])*(1-f) + float32(irow[x1*4+c])*f + 0.5)
		}
		orow[X*4+3] = 255
		grow[X] = uint8(a + 0.5)
	}
}
