package transfer

import (
	"fmt"
	"image"
	"math"

	"fashiond/perception"
	"fashiond/pipelines/capability/garment"
	"fashiond/pipelines/capability/mask"
)

// placeBottom warps trousers along the legs (or a skirt over the hips).
func placeBottom(b *body, g *garment.Garment, cut *image.NRGBA, acc string, f fit, info *TransferInfo) ([]part, error) {
	L := g.Landmarks
	step, ss := workParams(acc)
	gwL, gwR, gwC := L["left_waist"], L["right_waist"], L["waist_center"]
	gWaist := dist(gwL, gwR)
	if gWaist < minGarmentWaist {
		return nil, fmt.Errorf("tryon: garment waist too narrow")
	}
	w := bodyWaist(b)
	s := w.width / gWaist * f.width
	if !g.Trousers {
		return placeSkirt(b, g, cut, acc, f, info, w, s)
	}
	crotch := L["crotch"]
	var parts []part
	var bones []*Bone
	var boxes []image.Rectangle
	legAllow := legAllowance(b)
	for _, sd := range []struct {
		name               string
		gw, gHem           perception.Point
		waist, hip, kn, an perception.Point
	}{
		{"left_leg", gwL, L["left_hem_center"], w.left, b.hipL, b.kneeL, b.ankL},
		{"right_leg", gwR, L["right_hem_center"], w.right, b.hipR, b.kneeR, b.ankR},
	} {
		g0 := mid(sd.gw, gwC)
		cutPoly := legPath(acc, mid(sd.gw, gwC), sd.gHem, gWaist, f, []perception.Point{sd.waist, sd.hip, sd.kn, sd.an})
		legM := overlap(splitMask(g.Mask, crotch, gwC, sd.gHem), g.Mask)
		widths, def, reach := legWidths(b, legM, cutPoly, g0, sd.gHem, gWaist, s, f)
		ng := normalOf(unit(sub(sd.gHem, g0)))
		outerG := dot(sub(sd.gw, g0), ng) > 0
		outerB := dot(sub(sd.waist, mid(w.left, w.right)), normalOf(unit(sub(cutPoly[1], cutPoly[0])))) > 0
		maxW := 0.0
		for _, v := range widths {
			maxW = math.Max(maxW, v)
		}
		bone := &Bone{Body: cutPoly, G0: g0, G1: sd.gHem, Width: def, Widths: widths, Flip: outerG != outerB, Reach: reach * maxW * legReachShare}
		var bb image.Rectangle
		for _, q := range cutPoly {
			bb = bb.Union(image.Rect(int(q.X), int(q.Y), int(q.X)+1, int(q.Y)+1))
		}
		bb = bb.Inset(-int(bone.Reach + 4))
		bones = append(bones, bone)
		boxes = append(boxes, bb)
		info.Targets[sd.name+"_hem"] = cutPoly[len(cutPoly)-1]
		parts = append(parts, part{name: sd.name, allow: legAllow, lay: warpLayer(&sampler{img: cut, part: legM, w: cut.Rect.Dx(), h: cut.Rect.Dy()}, bone, b.w, b.h, bb, min(step, 2), ss)})
	}
	// Cover the old trousers next to the new legs with the extended warp.
	extImg := extendColours(cut, max(cut.Rect.Dx(), cut.Rect.Dy())/extendRingsDiv)
	for i := range parts {
		ext := warpLayer(&sampler{img: extImg, w: cut.Rect.Dx(), h: cut.Rect.Dy()}, bones[i], b.w, b.h, boxes[i], min(step, 2), 1)
		extendInto(parts[i].lay, ext, mask.Dilate(b.lower, 3), legAllow, []*layer{parts[1-i].lay}, legExtendReach*b.sw)
	}
	return parts, nil
}

// Bottoms tuning (lengths in the body's shoulder widths, b.sw).
const (
	// minGarmentWaist is the narrowest garment waist in pixels.
	minGarmentWaist = 4
	// waistRaise: the waist sits this share of the torso length above the
	// hips.
	waistRaise = 0.2
	// The body's waist is the old bottoms' width (searched up to
	// waistReach) or waistHips times the hip distance, whichever is wider;
	// outside [waistMin, waistMax] it is waistDefault.
	waistReach   = 1.2
	waistHips    = 1.3
	waistMin     = 0.3
	waistMax     = 1.6
	waistDefault = 0.9
	// fullLegLength: a trouser leg this many garment waist widths long
	// reaches the ankle; its share of the leg is kept in
	// [minLegShare, maxLegShare], and the last piece may overshoot its
	// joint by maxLegOvershoot.
	fullLegLength   = 2.45
	minLegShare     = 0.2
	maxLegShare     = 1.04
	maxLegOvershoot = 1.15
	// legProfileSamples: the leg's width is measured at this many levels.
	legProfileSamples = 8
	// legWidthReach: how far across the leg the old trousers are searched;
	// widths outside [legWidthMin, legWidthMax] are not measured ones.
	legWidthReach = 0.7
	legWidthMin   = 0.12
	legWidthMax   = 1.1
	// legWidthEase: the new leg is this much wider than the old one.
	legWidthEase = 1.04
	// legReachShare: the bone's reach is this share of the garment leg's
	// widest extent at the widest scale.
	legReachShare = 0.7
	// legAllowance and legInPerson: the legs may reach this far past the
	// old trousers, but only inside the person dilated by legInPerson.
	legAllowanceReach = 0.05
	legInPerson       = 0.03
	// legExtendReach: the extended warp covers the old trousers this far
	// from the new legs.
	legExtendReach = 0.3
)

// waistLine is the body's waist: its two sides, its centre and its width.
type waistLine struct {
	left, right, centre perception.Point
	width               float64
}

// bodyWaist finds the body's waist above the hips and its width from the
// old bottoms (or the hips).
func bodyWaist(b *body) waistLine {
	raise := waistRaise * b.torsoLen
	w := waistLine{left: add(b.hipL, mul(b.up, raise)), right: add(b.hipR, mul(b.up, raise))}
	w.centre = mid(w.left, w.right)
	el := extent(b.lower, w.centre, mul(b.right, -1), waistReach*b.sw)
	er := extent(b.lower, w.centre, b.right, waistReach*b.sw)
	w.width = math.Max(el+er, waistHips*dist(b.hipL, b.hipR))
	if w.width > waistMax*b.sw || w.width < waistMin*b.sw {
		w.width = waistDefault * b.sw
	}
	return w
}

// placeSkirt warps a skirt: waist corners to the waist, hem corners down
// the legs, scaled by s.
func placeSkirt(b *body, g *garment.Garment, cut *image.NRGBA, acc string, f fit, info *TransferInfo, w waistLine, s float64) ([]part, error) {
	L := g.Landmarks
	step, ss := workParams(acc)
	mw := w.centre
	hemLen := (L["hem_center"].Y - L["waist_center"].Y) * s * f.length
	down := mul(b.up, -1)
	wl := add(mw, mul(b.right, -w.width/2))
	wr := add(mw, mul(b.right, w.width/2))
	hw := dist(L["left_hem"], L["right_hem"]) * s / 2
	hc := add(add(mw, mul(down, hemLen)), mul(b.right, f.drape*b.sw))
	src := []perception.Point{L["left_waist"], L["right_waist"], L["left_hem"], L["right_hem"], L["hem_center"], L["waist_center"]}
	dst := []perception.Point{wl, wr, add(hc, mul(b.right, -hw)), add(hc, mul(b.right, hw)), hc, mw}
	m, err := torsoMapping(acc, dst, src)
	if err != nil {
		return nil, err
	}
	info.Targets["waist_center"] = mw
	full := image.Rect(0, 0, b.w, b.h)
	return []part{{name: "skirt", lay: warpLayer(&sampler{img: cut, part: g.Mask, w: cut.Rect.Dx(), h: cut.Rect.Dy()}, m, b.w, b.h, full, step, ss)}}, nil
}

// legAllowance is where trousers may go: the old trousers' region (a
// little wider), behind the top, arms and hands, and past the old
// trousers only within the person's silhouette, so that the leg edges
// follow the legs rather than the warp's outline.
func legAllowance(b *body) *image.Gray {
	legAllow := mask.Dilate(b.lower, legAllowanceReach*b.sw)
	inPerson := mask.Dilate(mask.Binary(b.pm, 96), legInPerson*b.sw)
	for i, v := range b.upper.Pix {
		if v >= 128 || (inPerson.Pix[i] < 128 && b.lower.Pix[i] < 128) {
			legAllow.Pix[i] = 0
		}
	}
	return legAllow
}

// legPath is the body polyline (waist, hip, knee, ankle) a trouser leg
// covers, cut at the leg's length (g0 to gHem, in garment waist widths);
// at the standard tier two straight pieces, waist to knee and knee to hem
// (no bend at the hip).
func legPath(acc string, g0, gHem perception.Point, gWaist float64, f fit, poly []perception.Point) []perception.Point {
	gl := dist(g0, gHem)
	frac := math.Min(math.Max(gl/gWaist/fullLegLength*f.length, minLegShare), maxLegShare)
	total := dist(poly[0], poly[1]) + dist(poly[1], poly[2]) + dist(poly[2], poly[3])
	want := frac * total
	cutPoly := []perception.Point{poly[0]}
	acc2 := 0.0
	for i := 1; i < len(poly); i++ {
		l := dist(poly[i-1], poly[i])
		if acc2+l >= want || i == len(poly)-1 {
			t := math.Min((want-acc2)/math.Max(l, 1), maxLegOvershoot)
			cutPoly = append(cutPoly, lerp(poly[i-1], poly[i], t))
			break
		}
		cutPoly = append(cutPoly, poly[i])
		acc2 += l
	}
	if acc == AccuracyStandard && len(cutPoly) > 2 {
		cutPoly = append([]perception.Point{poly[0]}, cutPoly[2:]...)
	}
	return cutPoly
}

// legWidths is a trouser leg's width profile: at legProfileSamples levels,
// the old trousers' width across the leg over the garment leg's (legM)
// width at the same fraction of its length (g0 to gHem). Levels without a
// measurement take the median (def, or s when there is none), and all are
// kept within half and twice it. reach is the garment leg's widest extent.
func legWidths(b *body, legM *image.Gray, cutPoly []perception.Point, g0, gHem perception.Point, gWaist, s float64, f fit) (widths []float64, def, reach float64) {
	ng := normalOf(unit(sub(gHem, g0)))
	bl := polyLen(cutPoly)
	widths = make([]float64, legProfileSamples)
	var valid []float64
	for i := range widths {
		fr := (float64(i) + 0.5) / legProfileSamples
		c, u := polyAt(cutPoly, fr*bl)
		n := normalOf(u)
		wb := extent(b.lower, c, n, legWidthReach*b.sw) + extent(b.lower, c, mul(n, -1), legWidthReach*b.sw)
		gc := lerp(g0, gHem, fr)
		wg := extent(legM, gc, ng, gWaist) + extent(legM, gc, mul(ng, -1), gWaist)
		widths[i] = math.NaN()
		if wb > legWidthMin*b.sw && wb < legWidthMax*b.sw && wg > 4 {
			widths[i] = wb / wg * legWidthEase * f.width
			valid = append(valid, widths[i])
		}
		reach = math.Max(reach, wg)
	}
	def = s
	if len(valid) > 0 {
		def = med(valid)
	}
	for i, v := range widths {
		if math.IsNaN(v) {
			widths[i] = def
		}
		widths[i] = math.Min(math.Max(widths[i], 0.5*def), 2*def)
	}
	return widths, def, reach
}
