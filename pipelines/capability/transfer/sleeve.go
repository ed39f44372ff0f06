package transfer

import (
	"image"
	"math"
	"slices"

	"fashiond/perception"
)

// placeSleeve maps the garment's sleeve (root gs-gu, cuff gco-gci) onto the
// arm: root to the shoulder seam and the underarm, cuff across the arm at
// the sleeve's length along shoulder-elbow-wrist, edges in between; an
// affine fit for standard, a thin-plate spline (bending at the elbow) for
// high and hyper.
func placeSleeve(b *body, cut *image.NRGBA, pm *image.Gray, acc string, f fit, s, gSW float64,
	gs, gu, gEnd, gco, gci, sh, el, wr, seam, under perception.Point, info *TransferInfo, name string) (*layer, *polyClip, image.Rectangle, error) {
	gco, gci = cuffCorners(gs, gu, gEnd, gco, gci)
	sa := sleeveArm(b, f, gSW, gs, gu, gEnd, sh, el, wr, seam, under)
	want := sa.want
	rootHalf := dist(seam, under) / 2
	cuffHalf := sa.cuffHalf(b, math.Max(dist(gco, gci)/2*(s*f.width), 0.5*(sleeveArmWidth*b.sw)*sleeveCuffEase), rootHalf)
	end, _ := polyAt(sa.arm, want)
	ne := sa.normal(want)
	src := []perception.Point{gs, gu, gco, gci, gEnd}
	dst := []perception.Point{seam, under, add(end, mul(ne, cuffHalf)), sub(end, mul(ne, cuffHalf)), end}
	// Edge points along the sleeve (and at the elbow when the sleeve
	// reaches past it).
	ts := []float64{0.35, 0.7}
	if e := dist(sh, el); acc != AccuracyStandard && e < want*0.95 && e > want*0.05 {
		ts = append(ts, e/want)
		slices.Sort(ts)
	}
	for _, t := range ts {
		c, _ := polyAt(sa.arm, t*want)
		n := sa.normal(t * want)
		hw := rootHalf + (cuffHalf-rootHalf)*t
		// The root is not centred on the joint: blend from the seam and
		// underarm towards the centred edges.
		top := lerp(add(seam, mul(sub(c, sh), 1)), add(c, mul(n, hw)), math.Min(1, t*2))
		bot := lerp(add(under, mul(sub(c, sh), 1)), sub(c, mul(n, hw)), math.Min(1, t*2))
		src = append(src, lerp(gs, gco, t), lerp(gu, gci, t))
		dst = append(dst, top, bot)
	}
	info.Targets[name+"_end"] = end
	var m Mapping
	if acc == AccuracyStandard {
		pw, err := pieceAffine(sa.arm, seam, under, dst[2], dst[3], gs, gu, gco, gci, want, sa.normal, rootHalf, cuffHalf)
		if err != nil {
			return nil, nil, image.Rectangle{}, err
		}
		m = pw
	} else {
		t, err := FitTPS(dst, src, sleeveTPSLambda)
		if err != nil {
			return nil, nil, image.Rectangle{}, err
		}
		m = t
	}
	clip := &polyClip{m: m, poly: sleeveOutline(dst, seam, under), margin: sleeveClipMargin * b.sw}
	var bb image.Rectangle
	for _, q := range dst {
		bb = bb.Union(image.Rect(int(q.X), int(q.Y), int(q.X)+1, int(q.Y)+1))
	}
	bb = bb.Inset(-int(0.1*b.sw + 4))
	step, ss := workParams(acc)
	return warpLayer(&sampler{img: cut, part: pm, w: cut.Rect.Dx(), h: cut.Rect.Dy()}, clip, b.w, b.h, bb, min(step, 2), ss), clip, bb, nil
}

// Sleeve tuning (lengths in the body's shoulder widths, b.sw).
const (
	// defaultCuffHalf: without cuff landmarks the cuff is this share of
	// the garment's shoulder-underarm distance wide on each side.
	defaultCuffHalf = 0.35
	// fullSleeveLength: a sleeve this many garment shoulder widths long
	// covers the whole arm; minSleeveShare is the shortest share of the arm.
	fullSleeveLength = 1.2
	minSleeveShare   = 0.12
	// cuffPastUnderarm: the cuff lies at least this far past the underarm.
	cuffPastUnderarm = 0.1
	// A short sleeve (under shortSleeveLength garment shoulder widths, or
	// under shortSleeveRoots root widths: a ghost mannequin's dropped
	// shoulder makes it look longer than it is) ends above the elbow, at
	// most shortSleeveElbow of the upper arm.
	shortSleeveLength = 0.75
	shortSleeveRoots  = 1.3
	shortSleeveElbow  = 0.85
	// sleeveArmWidth is the arm's assumed width; the cuff is at least
	// half of it times sleeveCuffEase.
	sleeveArmWidth = 0.3
	sleeveCuffEase = 1.15
	// sleeveArmReach: how far out from the arm's axis the person (or the
	// old sleeve) is looked for; below sleeveArmMin it was not found.
	sleeveArmReach = 0.4
	sleeveArmMin   = 0.05
	// sleeveLooseFit: the cuff's half width is at most this times the
	// person's outer reach halfway along the sleeve.
	sleeveLooseFit = 1.35
	// oldSleeveCover and oldSleeveMax: the sleeve covers the old sleeve's
	// reach (times oldSleeveCover) when that reach is under oldSleeveMax.
	oldSleeveCover = 1.04
	oldSleeveMax   = 0.38
	// sleeveTPSLambda regularises the sleeve's thin-plate spline.
	sleeveTPSLambda = 1e-2
	// sleeveClipMargin: the warp reaches this far past the sleeve outline.
	sleeveClipMargin = 0.06
)

// cuffCorners returns the garment's outer and inner cuff corners; without
// them, the two points across the sleeve's end (the outer one nearer the
// shoulder gs).
func cuffCorners(gs, gu, gEnd, gco, gci perception.Point) (perception.Point, perception.Point) {
	if gco != (perception.Point{}) && gci != (perception.Point{}) {
		return gco, gci
	}
	ax := unit(sub(gEnd, mid(gs, gu)))
	n := perception.Point{X: -ax.Y, Y: ax.X}
	half := defaultCuffHalf * dist(gs, gu)
	gco, gci = add(gEnd, mul(n, half)), sub(gEnd, mul(n, half))
	if dist(gco, gs) > dist(gci, gs) {
		gco, gci = gci, gco
	}
	return gco, gci
}

// armPath is the part of the arm a sleeve covers: the polyline from the
// shoulder, its length, and which side of it is the outer (seam) side.
type armPath struct {
	arm  []perception.Point
	want float64 // length of arm
	o    float64 // 1 or -1: the sign of the outer normal
}

// normal is the outer unit normal of the arm at arc length t.
func (a armPath) normal(t float64) perception.Point {
	_, u := polyAt(a.arm, t)
	return mul(perception.Point{X: -u.Y, Y: u.X}, a.o)
}

// sleeveArm returns the arm polyline (shoulder sh, elbow el, wrist wr) cut
// at the sleeve's length (seam: the body's shoulder seam, on the outer
// side): the garment's sleeve length (gs to gEnd) in
// shoulder widths, past the underarm, above the elbow for a short sleeve.
func sleeveArm(b *body, f fit, gSW float64, gs, gu, gEnd, sh, el, wr, seam, under perception.Point) armPath {
	gl := dist(gs, gEnd)
	frac := math.Min(math.Max(gl/gSW/fullSleeveLength*f.sleeve, minSleeveShare), 1.0)
	poly := []perception.Point{sh, el, wr}
	want := frac * polyLen(poly)
	if u := unit(sub(el, sh)); dot(sub(under, sh), u)+cuffPastUnderarm*b.sw > want {
		want = math.Min(dot(sub(under, sh), u)+cuffPastUnderarm*b.sw, polyLen(poly))
	}
	if gl/gSW < shortSleeveLength || gl < shortSleeveRoots*dist(gs, gu) {
		want = math.Min(want, shortSleeveElbow*dist(sh, el))
	}
	// Truncate the arm polyline at the sleeve's length.
	arm := []perception.Point{sh}
	acc2 := 0.0
	for i := 1; i < len(poly); i++ {
		l := dist(poly[i-1], poly[i])
		if acc2+l >= want || i == len(poly)-1 {
			arm = append(arm, lerp(poly[i-1], poly[i], math.Min((want-acc2)/math.Max(l, 1), 1)))
			break
		}
		arm = append(arm, poly[i])
		acc2 += l
	}
	a := armPath{arm: arm, want: polyLen(arm), o: 1}
	// Orientation: the outer (seam) side of the arm.
	_, u0 := polyAt(arm, 0)
	if dot(sub(seam, sh), perception.Point{X: -u0.Y, Y: u0.X}) < 0 {
		a.o = -1
	}
	return a
}

// cuffHalf limits the cuff's half width (cuffHalf at first) to a loose fit
// around the arm (the person's outer reach halfway along the sleeve, which
// includes the old sleeve), then widens it to cover the old sleeve on the
// outer side of the arm (the inner side runs into the torso).
func (a armPath) cuffHalf(b *body, cuffHalf, rootHalf float64) float64 {
	minHalf := 0.5 * (sleeveArmWidth * b.sw) * sleeveCuffEase
	c, _ := polyAt(a.arm, a.want/2)
	armOut := extent(b.pm, c, a.normal(a.want/2), sleeveArmReach*b.sw)
	limit := math.Max(armOut*sleeveLooseFit, minHalf)
	if armOut > sleeveArmMin*b.sw && cuffHalf > limit {
		cuffHalf = limit
	}
	out := extent(b.upper, c, a.normal(a.want/2), sleeveArmReach*b.sw)
	if hw := (rootHalf + cuffHalf) / 2; out*oldSleeveCover > hw && out < oldSleeveMax*b.sw {
		cuffHalf += 2 * (out*oldSleeveCover - hw)
	}
	return cuffHalf
}

// sleeveOutline is the sleeve's outline on the body from its control
// points dst (seam, underarm, cuff corners, end, then edge pairs): root,
// outer edge, cuff, inner edge.
func sleeveOutline(dst []perception.Point, seam, under perception.Point) []perception.Point {
	outline := []perception.Point{seam}
	for i := 5; i < len(dst); i += 2 {
		outline = append(outline, dst[i])
	}
	outline = append(outline, dst[2], dst[3])
	for i := len(dst) - 1; i >= 6; i -= 2 {
		outline = append(outline, dst[i])
	}
	return append(outline, under)
}

// pieceAffine is the standard sleeve map: one affine map for the upper
// arm and, when the sleeve reaches past the elbow, a second for the
// forearm, split at the elbow's cross line.
type pieceAffineMap struct {
	a, b     Affine
	split    bool
	e0, e1   perception.Point // elbow cross line
	cuffSide float64
}

func pieceAffine(arm []perception.Point, seam, under, co, ci, gs, gu, gco, gci perception.Point, want float64,
	normal func(float64) perception.Point, rootHalf, cuffHalf float64) (*pieceAffineMap, error) {
	if len(arm) < 3 {
		a, err := FitAffine([]perception.Point{seam, under, co, ci}, []perception.Point{gs, gu, gco, gci})
		return &pieceAffineMap{a: a}, err
	}
	el := arm[1]
	t := dist(arm[0], el) / want
	// Elbow cross-section on the body and on the garment.
	n := mul(add(normal(dist(arm[0], el)-1), normal(dist(arm[0], el)+1)), 0.5)
	hw := rootHalf + (cuffHalf-rootHalf)*t
	e0, e1 := add(el, mul(n, hw)), sub(el, mul(n, hw))
	g0, g1 := lerp(gs, gco, t), lerp(gu, gci, t)
	a, err := FitAffine([]perception.Point{seam, under, e0, e1}, []perception.Point{gs, gu, g0, g1})
	if err != nil {
		return nil, err
	}
	b, err := FitAffine([]perception.Point{e0, e1, co, ci}, []perception.Point{g0, g1, gco, gci})
	if err != nil {
		return nil, err
	}
	return &pieceAffineMap{a: a, b: b, split: true, e0: e0, e1: e1, cuffSide: sideOf(e0, e1, mid(co, ci))}, nil
}

func (p *pieceAffineMap) Map(x, y float64) (float64, float64, bool) {
	if p.split && sideOf(p.e0, p.e1, perception.Point{X: x, Y: y}) == p.cuffSide {
		return p.b.Map(x, y)
	}
	return p.a.Map(x, y)
}

// polyClip limits a mapping to a polygon (plus a margin).
type polyClip struct {
	m      Mapping
	poly   []perception.Point
	margin float64
}

func (c *polyClip) Map(x, y float64) (float64, float64, bool) {
	p := perception.Point{X: x, Y: y}
	if !inPoly(c.poly, p) && distPoly(c.poly, p) > c.margin {
		return 0, 0, false
	}
	return c.m.Map(x, y)
}
