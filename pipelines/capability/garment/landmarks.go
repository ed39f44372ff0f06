package garment

import (
	"context"
	"fmt"
	"image"
	"math"

	"fashiond/perception"
)

// shape gives row/column queries on a binary mask.
type shape struct {
	m    *image.Gray
	w, h int
	bb   image.Rectangle
	cx   float64     // centroid x
	raw  *image.Gray // the mask before closing, when known
}

func newShape(m *image.Gray, bb image.Rectangle) *shape {
	s := &shape{m: m, w: m.Rect.Dx(), h: m.Rect.Dy(), bb: bb}
	var sx, n float64
	for y := bb.Min.Y; y < bb.Max.Y; y++ {
		for x := bb.Min.X; x < bb.Max.X; x++ {
			if s.on(x, y) {
				sx += float64(x)
				n++
			}
		}
	}
	s.cx = float64(bb.Min.X+bb.Max.X) / 2
	if n > 0 {
		s.cx = sx / n
	}
	return s
}

func (s *shape) on(x, y int) bool {
	return x >= 0 && y >= 0 && x < s.w && y < s.h && s.m.Pix[y*s.m.Stride+x] >= 128
}

// run returns the on-run of row y containing x (inclusive bounds).
func (s *shape) run(y, x int) (l, r int, ok bool) {
	if !s.on(x, y) {
		return 0, 0, false
	}
	l, r = x, x
	for s.on(l-1, y) {
		l--
	}
	for s.on(r+1, y) {
		r++
	}
	return l, r, true
}

// top returns the first on pixel from the top in column x (-1 if none).
func (s *shape) top(x int) int {
	for y := s.bb.Min.Y; y < s.bb.Max.Y; y++ {
		if s.on(x, y) {
			return y
		}
	}
	return -1
}

func pt(x, y float64) perception.Point { return perception.Point{X: x, Y: y} }

// classifyAndLandmark decides the kind of a flat-lay garment from its shape
// and finds its landmarks.
func classifyAndLandmark(g *Garment, raw *image.Gray, lab []Lab, w int) {
	s := newShape(g.Mask, g.BBox)
	s.raw = raw
	if crotch, ok := s.legSplit(); ok {
		g.Kind = KindBottom
		g.Trousers = true
		g.Landmarks = s.trouserLandmarks(crotch)
		return
	}
	lm, sleeves, neck := s.topLandmarks(lab, w)
	g.Landmarks = lm
	g.Sleeves = sleeves
	bodyW := lm["right_hem"].X - lm["left_hem"].X
	length := lm["hem_center"].Y - math.Min(lm["left_shoulder"].Y, lm["right_shoulder"].Y)
	topW := s.widthAt(g.BBox.Min.Y + max(2, g.BBox.Dy()/50))
	switch {
	case !sleeves && !neck && topW < 0.9*bodyW:
		// Flat top edge narrower than the hem, no sleeves: a skirt.
		g.Kind = KindBottom
		g.Landmarks = s.skirtLandmarks()
	case length > 1.9*bodyW || (!sleeves && length > 1.6*bodyW):
		g.Kind = KindFull
	default:
		g.Kind = KindTop
	}
}

// widthAt is the total on width of row y.
func (s *shape) widthAt(y int) float64 {
	n := 0
	for x := s.bb.Min.X; x < s.bb.Max.X; x++ {
		if s.on(x, y) {
			n++
		}
	}
	return float64(n)
}

// legSplit looks for two legs: the centre column is off from the bottom up
// to a crotch over at least a quarter of the height, with garment on both
// sides of the gap.
func (s *shape) legSplit() (perception.Point, bool) {
	bb := s.bb
	cx := int(math.Round(s.cx))
	best := perception.Point{}
	bestY := bb.Max.Y
	dx := max(2, bb.Dx()/25)
	for x := cx - dx; x <= cx+dx; x++ {
		y := bb.Max.Y - 1
		for y >= bb.Min.Y && !s.on(x, y) {
			y--
		}
		if y+1 < bestY {
			bestY = y + 1
			best = pt(float64(x), float64(y+1))
		}
	}
	if float64(bb.Max.Y-bestY) < 0.25*float64(bb.Dy()) {
		return best, false
	}
	// The closing fills the narrow tip of the gap: climb it in the mask
	// before closing.
	if s.raw != nil {
		r := &shape{m: s.raw, w: s.w, h: s.h, bb: s.bb}
		x0 := int(best.X)
		for x := x0 - dx; x <= x0+dx; x++ {
			y := int(best.Y)
			for y > bb.Min.Y && !r.on(x, y-1) {
				y--
			}
			if y < int(best.Y) && !r.on(x, int(best.Y)) {
				if float64(y) < best.Y {
					best = pt(float64(x), float64(y))
				}
			}
		}
	}
	// Both sides of the gap must hold garment near the bottom.
	yb := bb.Max.Y - bb.Dy()/10
	left, right := false, false
	for x := bb.Min.X; x < bb.Max.X; x++ {
		if s.on(x, yb) {
			if float64(x) < best.X {
				left = true
			} else {
				right = true
			}
		}
	}
	return best, left && right
}

func (s *shape) trouserLandmarks(crotch perception.Point) map[string]perception.Point {
	bb := s.bb
	lm := map[string]perception.Point{"crotch": crotch}
	// Waist: the top-left-most and top-right-most pixels of a top band.
	band := max(3, bb.Dy()/30)
	var wl, wr perception.Point
	bl, br := math.Inf(1), math.Inf(-1)
	for y := bb.Min.Y; y < bb.Min.Y+band; y++ {
		for x := bb.Min.X; x < bb.Max.X; x++ {
			if !s.on(x, y) {
				continue
			}
			if v := float64(x + y); v < bl {
				bl, wl = v, pt(float64(x), float64(y))
			}
			if v := float64(x - y); v > br {
				br, wr = v, pt(float64(x), float64(y))
			}
		}
	}
	lm["left_waist"], lm["right_waist"] = wl, wr
	lm["waist_center"] = pt((wl.X+wr.X)/2, float64(bb.Min.Y))
	// Leg openings: the bottom rows of each side of the crotch.
	for _, side := range []string{"left", "right"} {
		yb := -1
		for yy := bb.Max.Y - 1; yy > int(crotch.Y) && yb < 0; yy-- {
			for x := bb.Min.X; x < bb.Max.X; x++ {
				if s.on(x, yy) && (float64(x) < crotch.X) == (side == "left") {
					yb = yy
					break
				}
			}
		}
		if yb < 0 {
			continue
		}
		var sx, n float64
		lo, hi := math.Inf(1), math.Inf(-1)
		for yy := yb - 2; yy <= yb; yy++ {
			for x := bb.Min.X; x < bb.Max.X; x++ {
				if s.on(x, yy) && (float64(x) < crotch.X) == (side == "left") {
					lo, hi = math.Min(lo, float64(x)), math.Max(hi, float64(x))
					sx += float64(x)
					n++
				}
			}
		}
		lm[side+"_hem_center"] = pt((lo+hi)/2, float64(yb))
		lm[side+"_hem_outer"] = pt(map[bool]float64{true: lo, false: hi}[side == "left"], float64(yb))
		lm[side+"_hem_inner"] = pt(map[bool]float64{true: hi, false: lo}[side == "left"], float64(yb))
	}
	return lm
}

func (s *shape) skirtLandmarks() map[string]perception.Point {
	bb := s.bb
	lm := map[string]perception.Point{}
	yt := bb.Min.Y + 1
	l, r, ok := s.run(yt, int(s.cx))
	if !ok {
		l, r = bb.Min.X, bb.Max.X-1
	}
	lm["left_waist"] = pt(float64(l), float64(bb.Min.Y))
	lm["right_waist"] = pt(float64(r), float64(bb.Min.Y))
	lm["waist_center"] = pt(float64(l+r)/2, float64(bb.Min.Y))
	yb := bb.Max.Y - 2
	l, r, ok = s.run(yb, int(s.cx))
	if !ok {
		l, r = bb.Min.X, bb.Max.X-1
	}
	lm["left_hem"] = pt(float64(l), float64(yb))
	lm["right_hem"] = pt(float64(r), float64(yb))
	lm["hem_center"] = pt(float64(l+r)/2, float64(bb.Max.Y-1))
	return lm
}

// topLandmarks finds a top's landmarks from its silhouette. It returns the
// landmarks, whether sleeves reach out from the body and whether the top
// edge has a neckline dip.
func (s *shape) topLandmarks(lab []Lab, w int) (map[string]perception.Point, bool, bool) {
	bb := s.bb
	cx := int(math.Round(s.cx))
	lm := map[string]perception.Point{}
	hlP, hrP, bottom := s.hemCorners(cx)
	lm["left_hem"], lm["right_hem"] = hlP, hrP
	lm["hem_center"] = pt(float64(cx), float64(bottom))
	bodyW := hrP.X - hlP.X
	ul, okl := s.underarm(cx, hlP, hrP, bodyW, true)
	ur, okr := s.underarm(cx, hlP, hrP, bodyW, false)
	sleeves := okl && okr
	if !okl {
		ul = pt(hlP.X, float64(bb.Min.Y)+defaultUnderarmDepth*float64(bb.Dy()))
	}
	if !okr {
		ur = pt(hrP.X, float64(bb.Min.Y)+defaultUnderarmDepth*float64(bb.Dy()))
	}
	lm["left_underarm"], lm["right_underarm"] = ul, ur
	// Shoulders: on the top edge slightly inside the body sides.
	inset := shoulderInset * bodyW
	for _, sd := range []struct {
		name string
		x    float64
	}{{"left_shoulder", ul.X + inset}, {"right_shoulder", ur.X - inset}} {
		x := int(math.Round(sd.x))
		lm[sd.name] = pt(float64(x), float64(s.top(x)))
	}
	hasNeck := s.neckPoints(lab, w, cx, bodyW, lm)
	// Sleeve ends.
	if sleeves {
		lm["left_sleeve_end"], lm["left_cuff_outer"], lm["left_cuff_inner"] = s.sleeveEnd(lm["left_shoulder"], ul, true)
		lm["right_sleeve_end"], lm["right_cuff_outer"], lm["right_cuff_inner"] = s.sleeveEnd(lm["right_shoulder"], ur, false)
	} else {
		lm["left_sleeve_end"] = lm["left_shoulder"]
		lm["right_sleeve_end"] = lm["right_shoulder"]
	}
	return lm, sleeves, hasNeck
}

// Top landmark tuning (shares of the body's width at the hem unless said).
const (
	// hemBandDiv: the hem corners are looked for in the bottom band of
	// the box's height over this (at least 3 rows).
	hemBandDiv = 12
	// minUnderarmDip: a sleeve sticks out when the outline dips in by
	// more than this.
	minUnderarmDip = 0.06
	// defaultUnderarmDepth: without a dip the underarm lies this share of
	// the box's height below its top.
	defaultUnderarmDepth = 0.35
	// shoulderInset: the shoulders lie this far inside the body sides.
	shoulderInset = 0.055
	// neckSpan and neckGap: the neck points are looked for between these
	// distances from the centre (neckGap at least 2 pixels).
	neckSpan = 0.3
	neckGap  = 0.04
	// neckDip and collarDip, in neck half-widths: a dip of the top edge at
	// the centre deeper than neckDip is a neckline; deeper than collarDip
	// the collar is the top edge there, else it is found in the colours.
	neckDip   = 0.08
	collarDip = 0.35
)

// hemCorners returns the bottom-left-most and bottom-right-most pixels of
// the body (the rows' runs containing the centre cx) in the bottom band,
// and the body's bottom row at the centre.
func (s *shape) hemCorners(cx int) (hlP, hrP perception.Point, bottom int) {
	bb := s.bb
	bottom = bb.Max.Y - 1
	for bottom > bb.Min.Y && !s.on(cx, bottom) {
		bottom--
	}
	band := max(3, bb.Dy()/hemBandDiv)
	bestL, bestR := math.Inf(-1), math.Inf(-1)
	for y := bottom - band; y <= bottom; y++ {
		l, r, ok := s.run(y, cx)
		if !ok {
			continue
		}
		if v := float64(y - l); v > bestL {
			bestL, hlP = v, pt(float64(l), float64(y))
		}
		if v := float64(y + r); v > bestR {
			bestR, hrP = v, pt(float64(r), float64(y))
		}
	}
	return hlP, hrP, bottom
}

// underarm finds an underarm: the deepest concavity of the body outline
// (the runs containing the centre cx) below its outermost point, measured
// from the line joining that point to the hem corner; false when the
// outline does not dip in clearly (no sleeve sticks out).
func (s *shape) underarm(cx int, hlP, hrP perception.Point, bodyW float64, left bool) (perception.Point, bool) {
	type bp struct{ x, y float64 }
	var curve []bp
	for y := s.bb.Min.Y; y <= int(hlP.Y); y++ {
		l, r, ok := s.run(y, cx)
		if !ok {
			continue
		}
		if left {
			curve = append(curve, bp{float64(l), float64(y)})
		} else {
			curve = append(curve, bp{float64(r), float64(y)})
		}
	}
	if len(curve) < 3 {
		return perception.Point{}, false
	}
	ext := 0
	for i, c := range curve {
		if (left && c.x < curve[ext].x) || (!left && c.x > curve[ext].x) {
			ext = i
		}
	}
	e := curve[ext]
	hc := hlP
	if !left {
		hc = hrP
	}
	dx, dy := hc.X-e.x, hc.Y-e.y
	n := math.Hypot(dx, dy)
	if n == 0 {
		return perception.Point{}, false
	}
	best, bestD := -1, 0.0
	for i := ext + 1; i < len(curve); i++ {
		c := curve[i]
		d := ((c.x-e.x)*dy - (c.y-e.y)*dx) / n
		if !left {
			d = -d
		}
		if d < 0 {
			d = -d
		}
		if d > bestD {
			best, bestD = i, d
		}
	}
	if best < 0 || bestD < minUnderarmDip*bodyW {
		return perception.Point{}, false
	}
	return pt(curve[best].x, curve[best].y), true
}

// neckPoints sets the neck points (the highest top-edge points either
// side of the centre cx) and the collar centre in lm, and says whether the
// top edge has a neckline.
func (s *shape) neckPoints(lab []Lab, w, cx int, bodyW float64, lm map[string]perception.Point) bool {
	bb := s.bb
	neck := func(x0, x1 int) perception.Point {
		best := pt(float64(cx), float64(bb.Max.Y))
		for x := x0; x <= x1; x++ {
			if t := s.top(x); t >= 0 && float64(t) < best.Y {
				best = pt(float64(x), float64(t))
			}
		}
		return best
	}
	span := int(neckSpan * bodyW)
	in := max(2, int(neckGap*bodyW))
	ln := neck(cx-span, cx-in)
	rn := neck(cx+in, cx+span)
	lm["left_neck"], lm["right_neck"] = ln, rn
	neckHalf := math.Max((rn.X-ln.X)/2, 4)
	var tops []float64
	for x := cx - 3; x <= cx+3; x++ {
		if t := s.top(x); t >= 0 {
			tops = append(tops, float64(t))
		}
	}
	topC := median(tops)
	neckTop := math.Min(ln.Y, rn.Y)
	dip := topC - neckTop
	hasNeck := dip > neckDip*neckHalf
	if dip > collarDip*neckHalf {
		lm["collar_center"] = pt(float64(cx), topC)
	} else {
		lm["collar_center"] = pt(float64(cx), s.neckline(lab, w, cx, topC, neckHalf))
		hasNeck = true
	}
	return hasNeck
}

// neckline finds the front neckline under a visible inner back neck: the
// strongest vertical change of lightness in strips beside the centre line
// (avoiding a label on it), searched between 0.45 and 1.1 neck half-widths
// below the top; the prior 0.75 is used when no edge stands out.
func (s *shape) neckline(lab []Lab, w, cx int, topC, neckHalf float64) float64 {
	y0 := int(topC + 0.3*neckHalf)
	y1 := int(topC + 1.25*neckHalf)
	prior := topC + 0.75*neckHalf
	if y1-y0 < 6 {
		return prior
	}
	off0, off1 := max(3, int(0.15*neckHalf)), max(6, int(0.4*neckHalf))
	prof := make([]float64, y1-y0+1)
	for y := y0; y <= y1; y++ {
		var sum, n float64
		for _, sgn := range []int{-1, 1} {
			for o := off0; o <= off1; o++ {
				x := cx + sgn*o
				if s.on(x, y) {
					sum += lab[y*w+x].L
					n++
				}
			}
		}
		if n > 0 {
			prof[y-y0] = sum / n
		}
	}
	best, bestV := prior, 0.0
	lo, hi := topC+0.45*neckHalf, topC+1.1*neckHalf
	for i := 2; i < len(prof)-2; i++ {
		y := float64(y0 + i)
		if y < lo || y > hi {
			continue
		}
		d := math.Abs(prof[i+2] + prof[i+1] - prof[i-1] - prof[i-2])
		// Prefer edges near the prior.
		d *= 1 - 0.5*math.Abs(y-prior)/neckHalf
		if d > bestV {
			best, bestV = y, d
		}
	}
	if bestV < 6 {
		return prior
	}
	return best
}

// sleeveEnd finds the midpoint of a sleeve's opening: sleeve pixels lie
// outside the shoulder-underarm line; the cuff is the band farthest along
// the sleeve's axis and its corners are the extremes across the axis.
func (s *shape) sleeveEnd(sh, ua perception.Point, left bool) (end, outer, inner perception.Point) {
	// Outward normal of the line sh->ua.
	dx, dy := ua.X-sh.X, ua.Y-sh.Y
	nx, ny := dy, -dx
	if (left && nx > 0) || (!left && nx < 0) {
		nx, ny = -nx, -ny
	}
	nl := math.Hypot(nx, ny)
	if nl == 0 {
		return sh, sh, ua
	}
	nx, ny = nx/nl, ny/nl
	var px, py []float64
	var sx, sy float64
	for y := s.bb.Min.Y; y < s.bb.Max.Y; y++ {
		for x := s.bb.Min.X; x < s.bb.Max.X; x++ {
			if !s.on(x, y) {
				continue
			}
			if (float64(x)-sh.X)*nx+(float64(y)-sh.Y)*ny > 2 {
				px = append(px, float64(x))
				py = append(py, float64(y))
				sx += float64(x)
				sy += float64(y)
			}
		}
	}
	if len(px) < 20 {
		return sh, sh, ua
	}
	// The outer cuff corner is the sleeve pixel farthest out from the
	// shoulder-underarm line;
	// the inner corner the one farthest from the shoulder among those well
	// away from the outer corner.
	far := func(from perception.Point, away perception.Point, minD float64) (perception.Point, bool) {
		best, bd := perception.Point{}, -1.0
		for i := range px {
			if math.Hypot(px[i]-away.X, py[i]-away.Y) < minD {
				continue
			}
			if d := math.Hypot(px[i]-from.X, py[i]-from.Y); d > bd {
				best, bd = pt(px[i], py[i]), d
			}
		}
		return best, bd >= 0
	}
	outer, bp := perception.Point{}, math.Inf(-1)
	_ = bp
	for i := range px {
		if v := (px[i]-sh.X)*nx + (py[i]-sh.Y)*ny; v > bp {
			outer, bp = pt(px[i], py[i]), v
		}
	}
	inner, ok := far(sh, outer, 0.4*math.Hypot(sh.X-ua.X, sh.Y-ua.Y))
	if !ok {
		return outer, outer, outer
	}
	_ = sx
	_ = sy
	return pt((outer.X+inner.X)/2, (outer.Y+inner.Y)/2), outer, inner
}

// wornLandmarks places a worn top's landmarks from the wearer's pose and the
// clothes mask: shoulders at the mask's top above the shoulder joints, the
// sleeve ends where the mask stops along each arm, the hem at the mask's
// bottom.
func wornLandmarks(ctx context.Context, p perception.Perception, img *image.RGBA, g *Garment) error {
	pose, err := p.Pose(ctx, img)
	if err != nil {
		return fmt.Errorf("garment: pose: %w", err)
	}
	kp := pose.Keypoints
	s := newShape(g.Mask, g.BBox)
	a, b := kp[perception.KpRightShoulder], kp[perception.KpLeftShoulder]
	if a.X > b.X {
		a, b = b, a
	}
	ea, eb := kp[perception.KpRightElbow], kp[perception.KpLeftElbow]
	wa, wb := kp[perception.KpRightWrist], kp[perception.KpLeftWrist]
	if kp[perception.KpRightShoulder].X > kp[perception.KpLeftShoulder].X {
		ea, eb, wa, wb = eb, ea, wb, wa
	}
	lm := map[string]perception.Point{}
	lm["left_shoulder"], lm["right_shoulder"] = s.up(a), s.up(b)
	tipL, tipR, tips := s.shoulderTips(a, b)
	var underL, underR perception.Point
	if tips {
		span := float64(tipR - tipL)
		in := int(tipInset * span)
		lm["left_shoulder"] = s.up(perception.Keypoint{X: float64(tipL + in), Y: a.Y})
		lm["right_shoulder"] = s.up(perception.Keypoint{X: float64(tipR - in), Y: b.Y})
		// The armpit of a worn tee: about half the span below the tips.
		underL = pt(float64(tipL)+wornUnderarmIn*span, lm["left_shoulder"].Y+wornUnderarmDepth*span)
		underR = pt(float64(tipR)-wornUnderarmIn*span, lm["right_shoulder"].Y+wornUnderarmDepth*span)
	}
	lm["left_sleeve_end"] = s.alongArm(a, ea, wa)
	lm["right_sleeve_end"] = s.alongArm(b, eb, wb)
	sw := b.X - a.X
	wornCuffs(lm, a, b, sw)
	cx := (a.X + b.X) / 2
	lm["left_underarm"] = pt(a.X+jointUnderarmIn*sw, a.Y+jointUnderarmDepth*math.Abs(sw))
	lm["right_underarm"] = pt(b.X-jointUnderarmIn*sw, b.Y+jointUnderarmDepth*math.Abs(sw))
	if tips {
		lm["left_underarm"], lm["right_underarm"] = underL, underR
	}
	s.wornHemAndNeck(g, cx, a, b, sw, lm)
	g.Landmarks = lm
	g.Kind = KindTop
	g.Sleeves = true
	return nil
}

// Worn-garment landmark tuning (shares of the shoulder span unless said).
const (
	// tipLevels: the shoulder tips are looked for in the clothes mask's
	// runs these shares of the joints' width below the higher shoulder;
	// a run between tipMinWidth and tipMaxWidth joint widths counts.
	tipMinWidth = 1.1
	tipMaxWidth = 2
	// tipInset: the shoulders lie this far inside the tips.
	tipInset = 0.04
	// wornUnderarmIn and wornUnderarmDepth: the armpit of a worn tee lies
	// this far in from the tips and this far below them.
	wornUnderarmIn    = 0.14
	wornUnderarmDepth = 0.5
	// jointUnderarmIn and jointUnderarmDepth: without tips, from the
	// shoulder joints (shares of their distance).
	jointUnderarmIn    = 0.1
	jointUnderarmDepth = 0.45
	// wornCuffHalf: the cuff's half width, in shoulder-joint distances.
	wornCuffHalf = 0.13
	// wornNeck: the neck points lie this far either side of the centre.
	wornNeck = 0.18
)

// tipLevels: see tipMinWidth.
var tipLevels = []float64{0.08, 0.12, 0.16}

// up climbs from a keypoint to the top of the garment mask above it.
func (s *shape) up(k perception.Keypoint) perception.Point {
	x, y := int(k.X), int(k.Y)
	for y > 0 && s.on(x, y-1) {
		y--
	}
	return pt(float64(x), float64(y))
}

// shoulderTips finds the tips of the shoulders of a worn garment (pose
// shoulders a, b): the pose's joints sit well inside the garment's
// shoulder line (seams at the tips of the shoulders), and the clothes
// mask's run a little below the collar, where it is widest before the
// sleeves hang down, gives the tips. Taking the joints would make the
// garment's shoulder span too narrow, and the transfer would scale the
// whole garment up (a boxy body, wide sleeves).
func (s *shape) shoulderTips(a, b perception.Keypoint) (tipL, tipR int, ok bool) {
	jw := math.Abs(b.X - a.X)
	cxi := int((a.X + b.X) / 2)
	if jw <= 4 {
		return 0, 0, false
	}
	y0 := min(a.Y, b.Y)
	for _, f := range tipLevels {
		if l, r, found := s.run(int(y0+f*jw), cxi); found && float64(r-l) > jw*tipMinWidth && float64(r-l) < jw*tipMaxWidth && r-l > tipR-tipL {
			tipL, tipR, ok = l, r, true
		}
	}
	return tipL, tipR, ok
}

// alongArm follows the arm (shoulder, elbow, wrist) on the garment mask
// and returns the last point on it: the sleeve's end.
func (s *shape) alongArm(sh, el, wr perception.Keypoint) perception.Point {
	last := pt(sh.X, sh.Y)
	for _, seg := range [][2]perception.Keypoint{{sh, el}, {el, wr}} {
		n := int(math.Hypot(seg[1].X-seg[0].X, seg[1].Y-seg[0].Y))
		for i := 0; i <= n; i++ {
			t := float64(i) / float64(max(n, 1))
			x := seg[0].X + t*(seg[1].X-seg[0].X)
			y := seg[0].Y + t*(seg[1].Y-seg[0].Y)
			if !s.on(int(x), int(y)) {
				return last
			}
			last = pt(x, y)
		}
	}
	return last
}

// wornCuffs sets the cuff corners across each sleeve's end (shoulders a
// and b, signed span sw).
func wornCuffs(lm map[string]perception.Point, a, b perception.Keypoint, sw float64) {
	for _, sd := range []struct {
		name string
		sh   perception.Keypoint
	}{{"left", a}, {"right", b}} {
		e := lm[sd.name+"_sleeve_end"]
		dx, dy := e.X-sd.sh.X, e.Y-sd.sh.Y
		l := math.Max(math.Hypot(dx, dy), 1)
		nx, ny := -dy/l*wornCuffHalf*math.Abs(sw), dx/l*wornCuffHalf*math.Abs(sw)
		if (sd.name == "left") == (nx > 0) {
			nx, ny = -nx, -ny
		}
		lm[sd.name+"_cuff_outer"] = pt(e.X+nx, e.Y+ny)
		lm[sd.name+"_cuff_inner"] = pt(e.X-nx, e.Y-ny)
	}
}

// wornHemAndNeck sets the hem corners and centre (the mask's bottom at
// the centre cx) and the collar and neck points.
func (s *shape) wornHemAndNeck(g *Garment, cx float64, a, b perception.Keypoint, sw float64, lm map[string]perception.Point) {
	bottom := g.BBox.Max.Y - 1
	for y := g.BBox.Max.Y - 1; y > g.BBox.Min.Y; y-- {
		if s.on(int(cx), y) {
			bottom = y
			break
		}
	}
	hl, hr, ok := s.run(bottom-2, int(cx))
	if !ok {
		hl, hr = int(a.X), int(b.X)
	}
	lm["left_hem"] = pt(float64(hl), float64(bottom))
	lm["right_hem"] = pt(float64(hr), float64(bottom))
	lm["hem_center"] = pt(cx, float64(bottom))
	top := s.top(int(cx))
	lm["collar_center"] = pt(cx, float64(top))
	lm["left_neck"] = pt(cx-wornNeck*sw, math.Min(lm["left_shoulder"].Y, float64(top)))
	lm["right_neck"] = pt(cx+wornNeck*sw, math.Min(lm["right_shoulder"].Y, float64(top)))
}
