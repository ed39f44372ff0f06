package transfer

import (
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"math"
	"math/rand/v2"
	"slices"

	"fashiond/cv"
	"fashiond/perception"
	"fashiond/pipelines"
	"fashiond/pipelines/capability/garment"
	"fashiond/pipelines/capability/mask"
	"fashiond/pipelines/capability/raster"
)

// Accuracy levels.
const (
	AccuracyStandard = "standard"
	AccuracyHigh     = "high"
	AccuracyHyper    = "hyper"
)

// Options tune one transfer.
type Options struct {
	// Accuracy: "standard" (affine torso, straight sleeves and legs), "high"
	// (thin-plate spline torso on 12 landmarks, sleeves and legs bent at the
	// elbow and knee) or "hyper" (high at 2x2 supersampling plus shading
	// transfer from the original clothes and edge refinement). "" = standard.
	Accuracy string
	// Variation 0 is the neutral fit; 1, 2, 3 draw fit and drape changes
	// (width, length, sleeve length, hem drape) from Seed.
	Variation int
	Seed      int64
	// Progress, when set, receives the stage and the fraction of this
	// transfer done.
	Progress func(stage string, fraction float64)
}

// TransferInfo describes what a transfer did.
type TransferInfo struct {
	Kind   string // garment kind placed
	Method string // e.g. "affine-warp", "tps-warp", "tps-warp-hires+shading+edge-refine"
	Notes  []string
	// Coverage is the fraction of the old garment region the new garment
	// covers; the rest was filled (inpainted).
	Coverage float64
	// Targets are the body positions the garment landmarks were placed at.
	Targets map[string]perception.Point
	// Layer is the composited garment's alpha at the output size.
	Layer *image.Gray
	// Replaced is the old garment region that was removed.
	Replaced *image.Gray
	// PersonMask is the person in the output (the person model's mask
	// joined with the parsing's skin, clothes and hair next to it and the
	// new garment).
	PersonMask *image.Gray
}

// fit holds the variation parameters.
type fit struct {
	width, length, sleeve, drape float64
}

func fitFor(o Options) fit {
	if o.Variation <= 0 {
		return fit{1, 1, 1, 0}
	}
	r := rand.New(rand.NewPCG(uint64(o.Seed), uint64(o.Variation)*0x9e3779b97f4a7c15))
	sgn := func() float64 {
		if r.IntN(2) == 0 {
			return -1
		}
		return 1
	}
	// Each variation moves every parameter by a noticeable amount.
	return fit{
		width:  1 + sgn()*(0.04+0.05*r.Float64()),
		length: 1 + sgn()*(0.04+0.06*r.Float64()),
		sleeve: 1 + sgn()*(0.08+0.12*r.Float64()),
		drape:  sgn() * (0.03 + 0.04*r.Float64()),
	}
}

// part is one warped garment piece.
type part struct {
	name  string
	lay   *layer
	front bool // drawn over arms (sleeves)
	// allow limits where the part may be drawn (nil: anywhere).
	allow *image.Gray
}

// Transfer puts garment g on the person in img and returns the result at
// the person image's size. A person that cannot be found is a
// *pipelines.Error saying so.
func Transfer(ctx context.Context, p perception.Perception, person image.Image, g *garment.Garment, o Options) (*image.RGBA, *TransferInfo, error) {
	prog := func(stage string, f float64) {
		if o.Progress != nil {
			o.Progress(stage, f)
		}
	}
	if g == nil || g.Cutout == nil || len(g.Landmarks) == 0 {
		return nil, nil, fmt.Errorf("tryon: no analysed garment")
	}
	acc := o.Accuracy
	switch acc {
	case "":
		acc = AccuracyStandard
	case AccuracyStandard, AccuracyHigh, AccuracyHyper:
	default:
		return nil, nil, fmt.Errorf("tryon: unknown accuracy %q (want standard, high or hyper)", o.Accuracy)
	}
	img := raster.CopyRGBA(person)
	prog("person", 0.05)
	b, err := analyzePerson(ctx, p, img)
	if err != nil {
		return nil, nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	prog("warp", 0.4)
	cut := decontaminate(g.Cutout)
	f := fitFor(o)
	info := &TransferInfo{Kind: g.Kind, Targets: map[string]perception.Point{}}
	var parts []part
	switch g.Kind {
	case garment.KindBottom:
		b.frontOfBottoms()
		b.lower = b.growLike(b.lower, b.legs, b.upper)
		parts, err = placeBottom(b, g, cut, acc, f, info)
	default:
		parts, err = placeTop(b, g, cut, acc, f, info)
	}
	if err != nil {
		return nil, nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	prog("composite", 0.75)
	// Full-length trousers replace the old trousers entirely: what the warp
	// leaves of them is recoloured to the garment (keeping their folds)
	// rather than inpainted from the surroundings.
	var recolour *color.RGBA
	if g.Kind == garment.KindBottom && g.Trousers {
		recolour = &g.Dominant
	}
	out, err := composite(b, g.Kind, parts, acc, info, recolour)
	if err != nil {
		return nil, nil, err
	}
	// A garment that ends up (almost) nowhere visible is a failure, not a
	// result: e.g. trousers on an upper-body photo.
	if n := mask.Count(info.Layer); n < b.w*b.h/200 {
		where := "the torso"
		if g.Kind == garment.KindBottom {
			where = "the legs"
		}
		return nil, nil, pipelines.Failf("the %s garment could not be placed: %s of the person in personImage are not visible enough (%d garment pixels)", g.Kind, where, n)
	}
	switch acc {
	case AccuracyStandard:
		info.Method = "affine-warp+lighting"
	case AccuracyHigh:
		info.Method = "tps-warp+lighting"
	case AccuracyHyper:
		info.Method = "tps-warp-hires+shading+edge-refine"
	}
	info.Notes = []string{
		"classical warp of the garment photo onto the body: parts of the garment hidden in the photo (back, inside of sleeves) are not hallucinated",
		"fit, drape and folds come from geometry, not from cloth simulation; the garment keeps the flat-lay's own lighting" + map[bool]string{true: " modulated by the original clothes' folds", false: ""}[acc == AccuracyHyper],
		"where the old garment is not covered by the new one it is filled by inpainting (OpenCV Telea), which cannot recreate skin or background detail",
	}
	prog("done", 1)
	return out, info, nil
}

// decontaminate replaces the colour of the garment's edge pixels (where
// the flat-lay's background bleeds in) with the colour of the nearest
// interior pixel.
func decontaminate(c *image.NRGBA) *image.NRGBA {
	w, h := c.Rect.Dx(), c.Rect.Dy()
	out := image.NewNRGBA(c.Rect)
	copy(out.Pix, c.Pix)
	interior := image.NewGray(image.Rect(0, 0, w, h))
	for i := 0; i < w*h; i++ {
		if c.Pix[i*4+3] == 255 {
			interior.Pix[i] = 255
		}
	}
	interior = mask.Erode(interior, 2)
	band := 4
	// Propagate interior colours outward ring by ring.
	known := interior.Pix
	for range band {
		next := append([]uint8(nil), known...)
		for y := 1; y < h-1; y++ {
			for x := 1; x < w-1; x++ {
				i := y*w + x
				if known[i] != 0 || c.Pix[i*4+3] == 0 {
					continue
				}
				var r, g, bl, n int
				for _, j := range []int{i - 1, i + 1, i - w, i + w} {
					if known[j] != 0 {
						r += int(out.Pix[j*4])
						g += int(out.Pix[j*4+1])
						bl += int(out.Pix[j*4+2])
						n++
					}
				}
				if n > 0 {
					out.Pix[i*4], out.Pix[i*4+1], out.Pix[i*4+2] = uint8(r/n), uint8(g/n), uint8(bl/n)
					next[i] = 255
				}
			}
		}
		known = next
	}
	return out
}

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

func workParams(acc string) (step, ss int) {
	switch acc {
	case AccuracyHyper:
		return 2, 2
	case AccuracyHigh:
		return 3, 1
	}
	return 4, 1
}

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

// normalOf is u turned a quarter (the left normal of a unit direction).
func normalOf(u perception.Point) perception.Point { return perception.Point{X: -u.Y, Y: u.X} }

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

// composite removes the old garment, fills what the new one leaves
// visible, and lays the new garment behind arms, hands, hair and face
// (sleeves over the arms, behind the hands).
func composite(b *body, kind string, parts []part, acc string, info *TransferInfo, recolour *color.RGBA) (*image.RGBA, error) {
	w, h := b.w, b.h
	old := oldRegion(b, kind)
	alpha := coverage(parts, w*h)
	sig := 1.0
	if acc == AccuracyHyper {
		sig = hyperEdgeSigma
	}
	front := mask.GaussBlur(mask.Float(b.front), w, h, sig)
	hands := mask.GaussBlur(mask.Float(b.hands), w, h, sig)
	// Fill: the old garment region where the new garment (net of what is
	// kept in front) does not cover it.
	fill := image.NewGray(image.Rect(0, 0, w, h))
	var oldN, covN int
	for i := range fill.Pix {
		if old.Pix[i] < 128 {
			continue
		}
		oldN++
		if alpha[i] >= 0.5 {
			covN++
		}
		fill.Pix[i] = 255
	}
	if oldN > 0 {
		info.Coverage = float64(covN) / float64(oldN)
	}
	base := b.img
	if covN < oldN && recolour == nil {
		inp, err := cv.Inpaint(b.img, fill, inpaintRadius)
		if err != nil {
			return nil, err
		}
		base = inp
	}
	out := image.NewRGBA(image.Rect(0, 0, w, h))
	copy(out.Pix, base.Pix)
	// Lighting (all tiers) and fold shading (hyper) from the original
	// clothes modulate the garment where it lies on them.
	shade := shading(b, old, acc == AccuracyHyper)
	if recolour != nil && covN < oldN {
		recolourRemnants(out, parts, old, fill, shade, *recolour)
	}
	allow := map[string][]float32{}
	for _, pt := range parts {
		if pt.allow != nil {
			allow[pt.name] = mask.GaussBlur(mask.Float(pt.allow), w, h, sig)
		}
	}
	keep := func(pt part) []float32 {
		if pt.front {
			return hands
		}
		return front
	}
	islands := map[string][]float32{}
	for _, pt := range parts {
		if isl := islandsOf(pt, keep(pt), w, h); isl != nil {
			islands[pt.name] = isl
		}
	}
	layerA := drawParts(b, out, parts, keep, islands, allow, shade)
	info.Layer = mask.FromFloat(layerA, w, h)
	info.Replaced = old
	info.PersonMask = dressedPerson(b, info.Layer)
	return out, nil
}

// Compositing tuning.
const (
	// hyperEdgeSigma: the hyper tier softens the edges of what stays in
	// front (and of each part's allowed region) with this Gaussian
	// (pixels) instead of 1.
	hyperEdgeSigma = 1.6
	// inpaintRadius is the inpainting radius (pixels) of the uncovered
	// old garment.
	inpaintRadius = 5
	// remnantFeather softens the recoloured remnants' edge (pixels).
	remnantFeather = 1.5
	// remnantOpaque and remnantMinSamples: the garment's mean colour is
	// taken over its pixels at least this opaque, when there are more than
	// this many (every third pixel is sampled).
	remnantOpaque     = 0.95
	remnantMinSamples = 100
	// armCapSigma softens the region where sleeves lie over the torso.
	armCapSigma = 2
	// islandShare: a piece of a part smaller than this share of its
	// largest piece is dropped; islandGrow grows the dropped pieces.
	islandShare = 25
	islandGrow  = 2
	// minLayerAlpha: weaker garment pixels are not drawn.
	minLayerAlpha = 0.002
	// personNear: the parsing's skin, clothes and hair count as the person
	// this far (b.sw) from the person model's mask.
	personNear = 0.08
	// personClose and personFeather: the closing radius and the edge
	// softening (pixels) of the dressed person's mask.
	personClose   = 4
	personFeather = 1.5
)

// oldRegion is the old garment region a kind replaces (the old top, the
// old bottoms, or both), grown a little, without what lies in front of it
// (arms, hands, face, hair: never removed).
func oldRegion(b *body, kind string) *image.Gray {
	var old *image.Gray
	switch kind {
	case garment.KindBottom:
		old = b.lower
	case garment.KindFull:
		old = image.NewGray(b.upper.Rect)
		for i := range old.Pix {
			old.Pix[i] = max(b.upper.Pix[i], b.lower.Pix[i])
		}
	default:
		old = b.upper
	}
	old = mask.Dilate(old, 3)
	return subMask(old, b.front)
}

// coverage is the new garment's joint alpha over n pixels (each part
// within its allowed region).
func coverage(parts []part, n int) []float32 {
	alpha := make([]float32, n)
	for _, pt := range parts {
		for i := 0; i < n; i++ {
			a := pt.lay.pix[i*4+3]
			if pt.allow != nil && pt.allow.Pix[i] < 128 {
				a = 0
			}
			alpha[i] = 1 - (1-alpha[i])*(1-a)
		}
	}
	return alpha
}

// recolourRemnants paints the old region the garment does not cover (fill)
// in the garment's colour, with the same lighting as the garment layer
// beside it (shade, nil: none), so that the remnants do not stand out as
// darker patches. The colour is the warped garment's own mean over the old
// region (the dominant colour of the whole photo can lean to its shadows
// or background), or rc0 when too few of its pixels lie there.
func recolourRemnants(out *image.RGBA, parts []part, old, fill *image.Gray, shade []float32, rc0 color.RGBA) {
	w, h := out.Rect.Dx(), out.Rect.Dy()
	folds := shade
	if folds == nil {
		folds = make([]float32, w*h)
		for i := range folds {
			folds[i] = 1
		}
	}
	soft := mask.GaussBlur(mask.Float(fill), w, h, remnantFeather)
	rc := [3]float32{float32(rc0.R), float32(rc0.G), float32(rc0.B)}
	var sum [3]float64
	var n float64
	for _, pt := range parts {
		for i := 0; i < w*h; i += 3 {
			a := pt.lay.pix[i*4+3]
			if a < remnantOpaque || old.Pix[i] < 128 {
				continue
			}
			for c := 0; c < 3; c++ {
				sum[c] += float64(pt.lay.pix[i*4+c] / a * 255)
			}
			n++
		}
	}
	if n > remnantMinSamples {
		for c := range 3 {
			rc[c] = float32(sum[c] / n)
		}
	}
	for i := 0; i < w*h; i++ {
		a := soft[i] * float32(old.Pix[i]) / 255
		if a <= 0 {
			continue
		}
		for c := 0; c < 3; c++ {
			v := min(max(rc[c]*folds[i], 0), 255)
			o := float32(out.Pix[i*4+c])
			out.Pix[i*4+c] = uint8(o + (v-o)*a + 0.5)
		}
	}
}

// islandsOf returns the (grown) pieces of a part cut off from it by what
// is kept in front (a hem corner peeking out beyond a forearm), which are
// dropped, as 0..1 floats; nil when there are none.
func islandsOf(pt part, keep []float32, w, h int) []float32 {
	vis := image.NewGray(image.Rect(0, 0, w, h))
	for i := 0; i < w*h; i++ {
		a := pt.lay.pix[i*4+3] * (1 - keep[i])
		if pt.allow != nil && pt.allow.Pix[i] < 128 {
			a = 0
		}
		if a >= 0.5 {
			vis.Pix[i] = 255
		}
	}
	lab, sizes := mask.Components(vis)
	big := 0
	for _, n := range sizes {
		big = max(big, n)
	}
	drop := image.NewGray(vis.Rect)
	found := false
	for i, l := range lab {
		if l != 0 && sizes[l] < big/islandShare {
			drop.Pix[i] = 255
			found = true
		}
	}
	if !found {
		return nil
	}
	return mask.Float(mask.Dilate(drop, islandGrow))
}

// drawParts draws the garment parts over out, each net of what stays in
// front of it (keep), its dropped islands, its allowed region (soft
// allow) and, for sleeves, the torso where they lie flattened against the
// chest (they lie over it only around the arm); with the lighting gain
// shade (nil: none). It returns the garment layer's alpha.
func drawParts(b *body, out *image.RGBA, parts []part, keep func(part) []float32, islands, allow map[string][]float32, shade []float32) []float32 {
	w, h := b.w, b.h
	layerA := make([]float32, w*h)
	armCap := mask.GaussBlur(mask.Float(b.armCap), w, h, armCapSigma)
	var bodyA []float32
	if len(parts) > 0 && !parts[0].front {
		bodyA = make([]float32, w*h)
		for i := range bodyA {
			bodyA[i] = parts[0].lay.pix[i*4+3]
		}
	}
	for _, pt := range parts {
		kp, isl := keep(pt), islands[pt.name]
		for i := 0; i < w*h; i++ {
			a := pt.lay.pix[i*4+3]
			if a <= minLayerAlpha {
				continue
			}
			a *= 1 - kp[i]
			if isl != nil {
				a *= 1 - isl[i]
			}
			if pt.front && bodyA != nil {
				a *= max(armCap[i], 1-bodyA[i])
			}
			if pt.allow != nil {
				a *= allow[pt.name][i]
			}
			if a <= 0 {
				continue
			}
			drawPixel(out, pt.lay.pix, i, a, shade)
			layerA[i] = 1 - (1-layerA[i])*(1-a)
		}
	}
	return layerA
}

// drawPixel blends layer pixel i (premultiplied) over out with weight a
// and lighting gain shade[i] (shade nil: 1).
func drawPixel(out *image.RGBA, pix []float32, i int, a float32, shade []float32) {
	inv := 1 / pix[i*4+3]
	k := float32(1)
	if shade != nil {
		k = shade[i]
	}
	for c := 0; c < 3; c++ {
		gc := pix[i*4+c] * inv * k * 255
		gc = min(max(gc, 0), 255)
		o := float32(out.Pix[i*4+c])
		out.Pix[i*4+c] = uint8(o + (gc-o)*a + 0.5)
	}
}

// dressedPerson is the person with the new garment (layer): the person
// model's mask, the parsing's skin, clothes and hair near it, and the
// garment layer, closed, hole-filled and feathered.
func dressedPerson(b *body, layer *image.Gray) *image.Gray {
	pm := image.NewGray(b.pm.Rect)
	near := mask.Dilate(mask.Binary(b.pm, 96), personNear*b.sw)
	for i := range pm.Pix {
		v := max(b.pm.Pix[i], layer.Pix[i])
		if near.Pix[i] >= 128 {
			v = max(v, b.parse.Skin.Pix[i], b.parse.Clothes.Pix[i], b.parse.Hair.Pix[i])
		}
		pm.Pix[i] = v
	}
	return mask.Feather(mask.FillHoles(mask.Close(mask.Binary(pm, 128), personClose)), personFeather)
}

// shading returns a per-pixel gain from the original clothes' luminance
// inside the old garment region (feathered to 1 outside): the large-scale
// lighting (local mean over the region's mean), and with detail also the
// folds and shadows (luminance over its local mean), so that they carry
// over to the new garment.
func shading(b *body, old *image.Gray, detail bool) []float32 {
	w, h := b.w, b.h
	y := make([]float32, w*h)
	for i := range y {
		p := b.img.Pix[i*4:]
		y[i] = 0.299*float32(p[0]) + 0.587*float32(p[1]) + 0.114*float32(p[2])
	}
	om := mask.Float(old)
	yw := make([]float32, w*h)
	var sum, n float64
	for i := range y {
		yw[i] = y[i] * om[i]
		if om[i] > 0.5 {
			sum += float64(y[i])
			n++
		}
	}
	if n == 0 {
		return nil
	}
	regionMean := float32(sum / n)
	// Normalised convolutions: means over the region only.
	mean := func(sig float64) []float32 {
		num := mask.GaussBlur(yw, w, h, sig)
		den := mask.GaussBlur(om, w, h, sig)
		for i := range num {
			if den[i] > 0.02 {
				num[i] /= den[i]
			} else {
				num[i] = regionMean
			}
		}
		return num
	}
	large := mean(math.Max(0.18*b.sw, 8))
	var small []float32
	if detail {
		small = mean(math.Max(0.05*b.sw, 4))
	}
	soft := mask.GaussBlur(mask.Float(mask.Erode(old, 3)), w, h, 2)
	out := make([]float32, w*h)
	for i := range out {
		out[i] = 1
		if soft[i] <= 0 {
			continue
		}
		r := (large[i] + 10) / (regionMean + 10)
		if detail {
			r *= (y[i] + 10) / (small[i] + 10)
		}
		r = min(max(r, 0.5), 1.3)
		out[i] = 1 + (r-1)*soft[i]
	}
	return out
}

// extendColours propagates the garment's colours outward by rings pixels
// (alpha 255 over the garment and the rings), so that a warp can be
// extended past the garment's edge with garment-like colour.
func extendColours(c *image.NRGBA, rings int) *image.NRGBA {
	w, h := c.Rect.Dx(), c.Rect.Dy()
	out := image.NewNRGBA(c.Rect)
	copy(out.Pix, c.Pix)
	known := make([]bool, w*h)
	var front []int
	for i := 0; i < w*h; i++ {
		if c.Pix[i*4+3] >= 250 {
			known[i] = true
			front = append(front, i)
		} else {
			out.Pix[i*4+3] = 0
		}
	}
	for range rings {
		var next []int
		for _, i := range front {
			x, y := i%w, i/w
			for _, d := range [4][2]int{{-1, 0}, {1, 0}, {0, -1}, {0, 1}} {
				nx, ny := x+d[0], y+d[1]
				if nx < 0 || ny < 0 || nx >= w || ny >= h {
					continue
				}
				j := ny*w + nx
				if known[j] {
					continue
				}
				known[j] = true
				copy(out.Pix[j*4:j*4+3], out.Pix[i*4:i*4+3])
				out.Pix[j*4+3] = 255
				next = append(next, j)
			}
		}
		front = next
	}
	// Smooth the propagated ring (ring copying leaves streaks).
	ring := make([]bool, w*h)
	for i := range known {
		if known[i] {
			ring[i] = c.Pix[i*4+3] < 250
			out.Pix[i*4+3] = 255
		}
	}
	for ch := 0; ch < 3; ch++ {
		f := make([]float32, w*h)
		for i := range f {
			f[i] = float32(out.Pix[i*4+ch])
		}
		bl := mask.BoxBlur(f, w, h, 4)
		for i, r := range ring {
			if r {
				out.Pix[i*4+ch] = uint8(min(max(bl[i], 0), 255))
			}
		}
	}
	return out
}

// extendInto fills the pixels of region (the old garment) within reach of
// the layer's coverage and not covered by others with the extended warp,
// so that no fringe of the old garment is left beside the new one.
func extendInto(lay, ext *layer, region, allow *image.Gray, others []*layer, reach float64) {
	w, h := lay.w, lay.h
	cov := image.NewGray(image.Rect(0, 0, w, h))
	for i := 0; i < w*h; i++ {
		if lay.pix[i*4+3] >= 0.5 {
			cov.Pix[i] = 255
		}
	}
	near := mask.Dilate(cov, reach)
	for i := 0; i < w*h; i++ {
		if near.Pix[i] < 128 || region.Pix[i] < 128 || (allow != nil && allow.Pix[i] < 128) {
			continue
		}
		covered := false
		for _, o := range others {
			if o.pix[i*4+3] >= 0.5 {
				covered = true
			}
		}
		ea := ext.pix[i*4+3]
		if covered || ea < 0.5 {
			continue
		}
		k := (1 - lay.pix[i*4+3]) / ea
		for c := 0; c < 4; c++ {
			lay.pix[i*4+c] += ext.pix[i*4+c] * k
		}
	}
}

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

// AnalyzeGarment runs garment.Analyze and turns "no garment" into a job
// error naming the input.
func AnalyzeGarment(ctx context.Context, p perception.Perception, img image.Image) (*garment.Garment, error) {
	g, err := garment.Analyze(ctx, p, img)
	if errors.Is(err, garment.ErrNoGarment) {
		return nil, pipelines.Failf("garmentImage: %v", err)
	}
	return g, err
}
