package transfer

import (
	"fmt"
	"image"
	"math"

	"fashiond/perception"
	"fashiond/pipelines/capability/garment"
	"fashiond/pipelines/capability/mask"
)

// placeTop warps a top (or a full-length garment) onto the torso and arms.
func placeTop(b *body, g *garment.Garment, cut *image.NRGBA, acc string, f fit, info *TransferInfo) ([]part, error) {
	tp, err := topTargets(b, g, f)
	if err != nil {
		return nil, err
	}
	for i, n := range topTargetNames {
		info.Targets[n] = tp.dst[i]
	}
	m, err := torsoMapping(acc, tp.dst, tp.src)
	if err != nil {
		return nil, err
	}
	bodyM, sleeveL, sleeveR := splitTopParts(g)
	step, ss := workParams(acc)
	full := image.Rect(0, 0, b.w, b.h)
	bodyAllow := personOr(b, bodyAllowance*b.sw)
	sleeveAllow := personOr(b, sleeveAllowance*b.sw)
	parts := []part{{name: "body", allow: bodyAllow, lay: warpLayer(&sampler{img: cut, part: bodyM, w: cut.Rect.Dx(), h: cut.Rect.Dy()}, m, b.w, b.h, full, step, ss)}}
	extImg := extendColours(cut, max(cut.Rect.Dx(), cut.Rect.Dy())/extendRingsDiv)
	extend := func(parts []part) {
		ext := warpLayer(&sampler{img: extImg, w: cut.Rect.Dx(), h: cut.Rect.Dy()}, m, b.w, b.h, full, step, 1)
		extendTorso(b, g, parts, ext, bodyAllow)
	}
	if !g.Sleeves {
		extend(parts)
		return parts, nil
	}
	L := g.Landmarks
	var sleeveMaps []*polyClip
	var sleeveBoxes []image.Rectangle
	for _, sd := range []struct {
		name             string
		gs, gu, gEnd     perception.Point
		gco, gci         perception.Point
		sh, el, wr, seam perception.Point
		under            perception.Point
		pm               *image.Gray
	}{
		{"left_sleeve", tp.gsL, L["left_underarm"], L["left_sleeve_end"], L["left_cuff_outer"], L["left_cuff_inner"], b.shL, b.elL, b.wrL, tp.seamL, tp.dst[3], sleeveL},
		{"right_sleeve", tp.gsR, L["right_underarm"], L["right_sleeve_end"], L["right_cuff_outer"], L["right_cuff_inner"], b.shR, b.elR, b.wrR, tp.seamR, tp.dst[4], sleeveR},
	} {
		lay, clip, bb, err := placeSleeve(b, cut, sd.pm, acc, f, tp.s, tp.gSW, sd.gs, sd.gu, sd.gEnd, sd.gco, sd.gci, sd.sh, sd.el, sd.wr, sd.seam, sd.under, info, sd.name)
		if err != nil {
			return nil, err
		}
		parts = append(parts, part{name: sd.name, front: true, lay: lay, allow: sleeveAllow})
		sleeveMaps = append(sleeveMaps, clip)
		sleeveBoxes = append(sleeveBoxes, bb)
	}
	extend(parts)
	extendSleeves(b, extImg, cut, parts, sleeveMaps, sleeveBoxes, sleeveAllow)
	return parts, nil
}

// Tuning of a top's placement, in the body's shoulder widths (b.sw) unless
// said otherwise.
const (
	// bodyAllowance and sleeveAllowance: how far past the person's outline
	// (and the old top) the torso and the sleeves may reach.
	bodyAllowance   = 0.04
	sleeveAllowance = 0.1
	// extendRingsDiv: the garment's colours are extended outward by its
	// longer side over this many pixels' rings.
	extendRingsDiv = 12
	// torsoExtendReach and sleeveExtendReach: how far the extended warp
	// covers the old garment beyond the new one's outline.
	torsoExtendReach  = 0.15
	sleeveExtendReach = 0.12
	// sleeveExtendMargin: the sleeve polygon grown by this for the
	// extended warp; sleeveExtendBox grows its box.
	sleeveExtendMargin = 0.16
	sleeveExtendBox    = 0.1
	// tpsLambda is the thin-plate spline's regularisation for the torso.
	tpsLambda = 1e-3
	// minGarmentShoulder is the smallest garment shoulder width in pixels.
	minGarmentShoulder = 4
)

// topTargetNames are the garment landmarks whose body targets (the first
// entries of topPlacement.dst) are reported in TransferInfo.Targets.
var topTargetNames = []string{"left_shoulder", "right_shoulder", "collar_center", "left_underarm", "right_underarm", "left_hem", "right_hem", "hem_center"}

// topLandmarksNeeded are the garment landmarks a top cannot be placed without.
var topLandmarksNeeded = []string{"left_shoulder", "right_shoulder", "left_underarm", "right_underarm", "left_hem", "right_hem", "collar_center", "hem_center", "left_sleeve_end", "right_sleeve_end"}

// topPlacement is where a top goes on the body: the garment points (src)
// and their body targets (dst) of the torso warp, and the shoulders,
// seams, scale and shoulder width the sleeves follow.
type topPlacement struct {
	src, dst     []perception.Point
	gsL, gsR     perception.Point // garment shoulders
	seamL, seamR perception.Point // body shoulder seams
	s, gSW       float64          // body-to-garment scale; garment shoulder width
}

// topTargets finds the body targets of a top's landmarks: shoulder seams,
// underarms, hem corners and centre, neck and mid-side points.
func topTargets(b *body, g *garment.Garment, f fit) (topPlacement, error) {
	L := g.Landmarks
	for _, n := range topLandmarksNeeded {
		if _, ok := L[n]; !ok {
			return topPlacement{}, fmt.Errorf("tryon: garment landmark %s missing", n)
		}
	}
	tp := topPlacement{gsL: L["left_shoulder"], gsR: L["right_shoulder"]}
	tp.gSW = dist(tp.gsL, tp.gsR)
	if tp.gSW < minGarmentShoulder {
		return topPlacement{}, fmt.Errorf("tryon: garment shoulders coincide")
	}
	tp.seamL, tp.seamR = shoulderSeam(b, b.shL, -1), shoulderSeam(b, b.shR, 1)
	tp.s = dist(tp.seamL, tp.seamR) / tp.gSW
	T := Similarity(tp.gsL, tp.gsR, tp.seamL, tp.seamR)
	hemL, hemR := topHem(b, g, f, tp)
	mSeam := mid(tp.seamL, tp.seamR)
	wScale := func(p perception.Point) perception.Point {
		// widen the upper torso points about the centre line with the fit
		d := dot(sub(p, mSeam), b.right)
		return add(p, mul(b.right, d*(f.width-1)))
	}
	underT := func(gu, gs, j perception.Point, in float64) perception.Point {
		return wScale(underarmTarget(b, gu, gs, j, in, tp.gSW))
	}
	tp.src = []perception.Point{tp.gsL, tp.gsR, L["collar_center"], L["left_underarm"], L["right_underarm"], L["left_hem"], L["right_hem"], L["hem_center"]}
	tp.dst = []perception.Point{tp.seamL, tp.seamR, T.Apply(L["collar_center"]), underT(L["left_underarm"], tp.gsL, b.shL, 1), underT(L["right_underarm"], tp.gsR, b.shR, -1), hemL, hemR, add(mid(hemL, hemR), mul(b.up, -(L["hem_center"].Y-mid(L["left_hem"], L["right_hem"]).Y)*tp.s))}
	for _, n := range []string{"left_neck", "right_neck"} {
		if q, ok := L[n]; ok {
			tp.src = append(tp.src, q)
			tp.dst = append(tp.dst, T.Apply(q))
		}
	}
	// Mid-side points keep the sides straight.
	tp.src = append(tp.src, mid(L["left_underarm"], L["left_hem"]), mid(L["right_underarm"], L["right_hem"]))
	tp.dst = append(tp.dst, mid(tp.dst[3], hemL), mid(tp.dst[4], hemR))
	return tp, nil
}

// Shoulder seam tuning (in b.sw).
const (
	seamReachTop    = 0.45 // the old top's upper edge is looked for this far above the joint
	seamReachPerson = 0.4  // else the person's
	seamMinRise     = 0.05 // a shorter rise counts as not found
	seamDefaultRise = 0.15 // the rise when neither edge is found
	seamRiseShare   = 0.92 // the seam sits this share of the way up the rise
	seamOutward     = 0.03 // and this far outward
)

// shoulderSeam is a shoulder seam on the body: above the shoulder joint j at
// the top of the old top (or of the person), slightly outward (out is -1
// on the left, 1 on the right).
func shoulderSeam(b *body, j perception.Point, out float64) perception.Point {
	t := extent(b.upper, j, b.up, seamReachTop*b.sw)
	if t < seamMinRise*b.sw {
		t = extent(b.pm, j, b.up, seamReachPerson*b.sw)
	}
	if t < seamMinRise*b.sw || b.shouldersGuessed && t > seamDefaultRise*b.sw {
		// Guessed shoulders: what lies above them is the neck and hair.
		t = seamDefaultRise * b.sw
	}
	return add(add(j, mul(b.up, seamRiseShare*t)), mul(b.right, out*seamOutward*b.sw))
}

// Underarm tuning: the body's armpit lies about 0.4 shoulder widths below
// the joint; a dropped-shoulder or ghost-mannequin garment's deeper
// underarm would widen the sleeve root and push the cuff down the arm, so
// the depth is held within [underarmMinDepth, underarmMaxDepth] (b.sw),
// and the point moves underarmInward inward.
const (
	underarmMinDepth = 0.3
	underarmMaxDepth = 0.5
	underarmInward   = 0.06
)

// underarmTarget is the body target of a garment underarm gu (garment
// shoulder gs) below the shoulder joint j, in (1 left, -1 right) inward.
func underarmTarget(b *body, gu, gs, j perception.Point, in, gSW float64) perception.Point {
	depth := math.Min(math.Max((gu.Y-gs.Y)/gSW, underarmMinDepth), underarmMaxDepth)
	return add(add(j, mul(b.up, -depth*b.sw)), mul(b.right, in*underarmInward*b.sw))
}

// Hem tuning.
const (
	// teeLengthRatio: a regular tee, this many shoulder widths long, ends
	// just above the hips.
	teeLengthRatio = 1.55
	// hemSnap: a top shorter than the old one by less than this share of
	// the torso length comes down to the old top's hem (its lower band
	// stretches), so no band of the old top is left to inpaint (a visible
	// smear over the waistband); a cropped top stays cropped.
	hemSnap = 0.3
	// hemWidthOld and hemWidthGarment: the hem is the wider of the old
	// top's width and the garment's scaled hem width, each times these.
	hemWidthOld     = 1.04
	hemWidthGarment = 0.9
	// hemDrapeDrop: the hem corners follow the drape this much (of the
	// drape's shift) lower on one side.
	hemDrapeDrop = 0.5
)

// hemLevels and hemSideOffsets: where the old top's length is measured
// (lateral offsets in b.sw) and where its width (shares of the torso
// length below the seams; the median over them, so that sleeves or a gap
// do not dominate).
var (
	hemSideOffsets = []float64{-0.2, 0, 0.2}
	hemLevels      = []float64{0.7, 0.8, 0.9}
)

// Old top width plausibility (b.sw): widths outside are ignored; the
// sideways search reaches oldTopReach.
const (
	oldTopMinWidth = 0.3
	oldTopMaxWidth = 1.8
	oldTopReach    = 1.2
)

// topHem returns the body targets of the garment's hem corners: at the
// garment's length (snapped to the old top's hem when close), centred on
// the old top (or the hips), as wide as the old top or the garment.
func topHem(b *body, g *garment.Garment, f fit, tp topPlacement) (hemL, hemR perception.Point) {
	L := g.Landmarks
	mSeam := mid(tp.seamL, tp.seamR)
	mh := mid(b.hipL, b.hipR)
	gLen := L["hem_center"].Y - mid(tp.gsL, tp.gsR).Y
	ratio := gLen / tp.gSW
	raise := dot(sub(mSeam, mid(b.shL, b.shR)), b.up)
	hemDist := (b.torsoLen + raise) * (ratio / teeLengthRatio) * f.length
	if f.length >= 1 {
		var lows []float64
		for _, t := range hemSideOffsets {
			c := add(mSeam, mul(b.right, t*b.sw))
			lows = append(lows, extent(b.upper, c, mul(b.up, -1), 2*b.torsoLen))
		}
		if oldLen := med(lows); oldLen > hemDist && oldLen-hemDist < hemSnap*b.torsoLen {
			hemDist = oldLen
		}
	}
	var ws, cs []float64
	for _, t := range hemLevels {
		c := add(mSeam, mul(b.up, -t*math.Min(hemDist, b.torsoLen+raise)))
		el := extent(b.upper, c, mul(b.right, -1), oldTopReach*b.sw)
		er := extent(b.upper, c, b.right, oldTopReach*b.sw)
		if el+er > oldTopMinWidth*b.sw && el+er < oldTopMaxWidth*b.sw {
			ws, cs = append(ws, el+er), append(cs, (er-el)/2)
		}
	}
	bestW, bestC := med(ws), med(cs)
	hemC := add(mSeam, mul(b.up, -hemDist))
	// Centre the hem laterally on the old top (or the hips).
	lat := dot(sub(mh, hemC), b.right)
	if bestW > 0 {
		lat = dot(sub(add(mSeam, mul(b.right, bestC)), hemC), b.right)
	}
	hemC = add(hemC, mul(b.right, lat+f.drape*b.sw))
	gHemW := dist(L["left_hem"], L["right_hem"])
	half := math.Max(bestW/2*hemWidthOld, gHemW/2*tp.s*hemWidthGarment) * f.width
	hemL = add(hemC, mul(b.right, -half))
	hemR = add(hemC, mul(b.right, half))
	hemL = add(hemL, mul(b.up, -f.drape*hemDrapeDrop*b.sw))
	hemR = add(hemR, mul(b.up, f.drape*hemDrapeDrop*b.sw))
	return hemL, hemR
}

// torsoMapping fits the body-to-garment map of the torso: affine at the
// standard tier, a thin-plate spline above it.
func torsoMapping(acc string, dst, src []perception.Point) (Mapping, error) {
	if acc == AccuracyStandard {
		a, err := FitAffine(dst, src)
		if err != nil {
			return nil, err
		}
		return a, nil
	}
	t, err := FitTPS(dst, src, tpsLambda)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// splitTopParts splits a garment with sleeves into its body and the two
// sleeves (outside the shoulder-underarm lines), overlapping by a few
// pixels so that no seam opens between them; without sleeves the body is
// the whole garment and the sleeves are nil.
func splitTopParts(g *garment.Garment) (bodyM, sleeveL, sleeveR *image.Gray) {
	bodyM = g.Mask
	if !g.Sleeves {
		return bodyM, nil, nil
	}
	L := g.Landmarks
	sleeveL = splitMask(g.Mask, L["left_shoulder"], L["left_underarm"], L["left_sleeve_end"])
	sleeveR = splitMask(g.Mask, L["right_shoulder"], L["right_underarm"], L["right_sleeve_end"])
	bodyM = subMask(subMask(g.Mask, sleeveL), sleeveR)
	return overlap(bodyM, g.Mask), overlap(sleeveL, g.Mask), overlap(sleeveR, g.Mask)
}

// personOr is the person (or the old top) dilated by r pixels: how far a
// garment part may reach past the outline. With shoulders the face guard
// moved, the person is the parsing's clothes.
func personOr(b *body, r float64) *image.Gray {
	m := mask.Binary(b.pm, 128)
	if b.shouldersGuessed {
		// The pose was wrong: only the clothes say where the torso is (the
		// person mask has the hair and the neck beside them).
		for i := range m.Pix {
			m.Pix[i] = 0
			if b.clothesAt(i) {
				m.Pix[i] = 255
			}
		}
	}
	for i, v := range b.upper.Pix {
		m.Pix[i] = max(m.Pix[i], v)
	}
	return mask.Dilate(m, r)
}

// extendTorso lets the torso layer (parts[0]) cover the rest of the old top
// (and bottoms, for a full-length garment) with its extended warp ext.
func extendTorso(b *body, g *garment.Garment, parts []part, ext *layer, bodyAllow *image.Gray) {
	var others []*layer
	for _, q := range parts[1:] {
		others = append(others, q.lay)
	}
	region := b.upper
	if g.Kind == garment.KindFull {
		region = image.NewGray(b.upper.Rect)
		for i := range region.Pix {
			region.Pix[i] = max(b.upper.Pix[i], b.lower.Pix[i])
		}
	}
	extendInto(parts[0].lay, ext, mask.Dilate(region, 3), bodyAllow, others, torsoExtendReach*b.sw)
}

// extendSleeves lets each sleeve also cover the old sleeve beside it
// (within a short reach of its own outline) with its extended warp.
func extendSleeves(b *body, extImg, cut *image.NRGBA, parts []part, sleeveMaps []*polyClip, sleeveBoxes []image.Rectangle, sleeveAllow *image.Gray) {
	region := mask.Dilate(b.upper, 3)
	for k := range sleeveMaps {
		wide := &polyClip{m: sleeveMaps[k].m, poly: sleeveMaps[k].poly, margin: sleeveExtendMargin * b.sw}
		bb := sleeveBoxes[k].Inset(-int(sleeveExtendBox * b.sw))
		ext := warpLayer(&sampler{img: extImg, w: cut.Rect.Dx(), h: cut.Rect.Dy()}, wide, b.w, b.h, bb, 2, 1)
		var others []*layer
		for j, q := range parts {
			if j != k+1 {
				others = append(others, q.lay)
			}
		}
		extendInto(parts[k+1].lay, ext, region, sleeveAllow, others, sleeveExtendReach*b.sw)
	}
}
