package transfer

import (
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"math"
	"math/rand/v2"
	"slices"

	"fashiond/cv"
	"fashiond/models"
	"fashiond/pipelines"
	"fashiond/pipelines/garment"
	"fashiond/pipelines/mask"
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
	Targets map[string]models.Point
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
func Transfer(ctx context.Context, p models.Perception, person image.Image, g *garment.Garment, o Options) (*image.RGBA, *TransferInfo, error) {
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
	img := toRGBA(person)
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
	info := &TransferInfo{Kind: g.Kind, Targets: map[string]models.Point{}}
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

func toRGBA(img image.Image) *image.RGBA {
	b := img.Bounds()
	out := image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.Draw(out, out.Rect, img, b.Min, draw.Src)
	return out
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
func sideOf(a, b, p models.Point) float64 {
	v := (b.X-a.X)*(p.Y-a.Y) - (b.Y-a.Y)*(p.X-a.X)
	if v < 0 {
		return -1
	}
	return 1
}

// splitMask returns the garment pixels on p's side of the line a->b (the
// line extended both ways).
func splitMask(m *image.Gray, a, b, p models.Point) *image.Gray {
	out := image.NewGray(m.Rect)
	s := sideOf(a, b, p)
	w := m.Rect.Dx()
	for i, v := range m.Pix {
		if v < 128 {
			continue
		}
		q := models.Point{X: float64(i%w) + 0.5, Y: float64(i/w) + 0.5}
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
func extent(m *image.Gray, c, dir models.Point, limit float64) float64 {
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
	L := g.Landmarks
	need := []string{"left_shoulder", "right_shoulder", "left_underarm", "right_underarm", "left_hem", "right_hem", "collar_center", "hem_center", "left_sleeve_end", "right_sleeve_end"}
	for _, n := range need {
		if _, ok := L[n]; !ok {
			return nil, fmt.Errorf("tryon: garment landmark %s missing", n)
		}
	}
	gsL, gsR := L["left_shoulder"], L["right_shoulder"]
	gSW := dist(gsL, gsR)
	if gSW < 4 {
		return nil, fmt.Errorf("tryon: garment shoulders coincide")
	}
	// Shoulder seams on the body: above each shoulder joint at the top of
	// the old top (or of the person), slightly outward.
	seam := func(j models.Point, out float64) models.Point {
		t := extent(b.upper, j, b.up, 0.45*b.sw)
		if t < 0.05*b.sw {
			t = extent(b.pm, j, b.up, 0.4*b.sw)
		}
		if t < 0.05*b.sw {
			t = 0.15 * b.sw
		}
		return add(add(j, mul(b.up, 0.92*t)), mul(b.right, out*0.03*b.sw))
	}
	seamL, seamR := seam(b.shL, -1), seam(b.shR, 1)
	s := dist(seamL, seamR) / gSW
	T := Similarity(gsL, gsR, seamL, seamR)
	// Torso width from the old top: widest lateral extent over the lower
	// torso, around its centre.
	mSeam := mid(seamL, seamR)
	mh := mid(b.hipL, b.hipR)
	gLen := L["hem_center"].Y - mid(gsL, gsR).Y
	ratio := gLen / gSW
	raise := dot(sub(mSeam, mid(b.shL, b.shR)), b.up)
	// A regular tee (1.55 shoulder widths long) ends just above the hips.
	hemDist := (b.torsoLen + raise) * (ratio / 1.55) * f.length
	// A top a little shorter than the old one would leave a band of the
	// old top to inpaint (a visible smear over the waistband): within
	// 0.3 of the torso length the hem comes down to the old top's (the
	// garment's lower band stretches); a cropped top stays cropped.
	if f.length >= 1 {
		var lows []float64
		for _, t := range []float64{-0.2, 0, 0.2} {
			c := add(mSeam, mul(b.right, t*b.sw))
			lows = append(lows, extent(b.upper, c, mul(b.up, -1), 2*b.torsoLen))
		}
		if oldLen := med(lows); oldLen > hemDist && oldLen-hemDist < 0.3*b.torsoLen {
			hemDist = oldLen
		}
	}
	// The old top's width and centre low on the torso (median over three
	// levels, so that sleeves or a gap do not dominate).
	var ws, cs []float64
	for _, t := range []float64{0.7, 0.8, 0.9} {
		c := add(mSeam, mul(b.up, -t*math.Min(hemDist, b.torsoLen+raise)))
		el := extent(b.upper, c, mul(b.right, -1), 1.2*b.sw)
		er := extent(b.upper, c, b.right, 1.2*b.sw)
		if el+er > 0.3*b.sw && el+er < 1.8*b.sw {
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
	half := math.Max(bestW/2*1.04, gHemW/2*s*0.9) * f.width
	hemL := add(hemC, mul(b.right, -half))
	hemR := add(hemC, mul(b.right, half))
	// Let the hem corners follow the drape a little lower on one side.
	hemL = add(hemL, mul(b.up, -f.drape*0.5*b.sw))
	hemR = add(hemR, mul(b.up, f.drape*0.5*b.sw))
	wScale := func(p models.Point) models.Point {
		// widen the upper torso points about the centre line with the fit
		c := mSeam
		d := dot(sub(p, c), b.right)
		return add(p, mul(b.right, d*(f.width-1)))
	}
	// Underarms: below each shoulder joint along the torso by the garment's
	// underarm depth (in shoulder widths), slightly inward.
	underT := func(gu, gs, j models.Point, in float64) models.Point {
		// The body's armpit lies about 0.4 shoulder widths below the
		// joint; a dropped-shoulder or ghost-mannequin garment's deeper
		// underarm would widen the sleeve root and push the cuff down
		// the arm, so the depth is held near the body's.
		depth := math.Min(math.Max((gu.Y-gs.Y)/gSW, 0.3), 0.5)
		return wScale(add(add(j, mul(b.up, -depth*b.sw)), mul(b.right, in*0.06*b.sw)))
	}
	src := []models.Point{gsL, gsR, L["collar_center"], L["left_underarm"], L["right_underarm"], L["left_hem"], L["right_hem"], L["hem_center"]}
	dst := []models.Point{seamL, seamR, T.Apply(L["collar_center"]), underT(L["left_underarm"], gsL, b.shL, 1), underT(L["right_underarm"], gsR, b.shR, -1), hemL, hemR, add(mid(hemL, hemR), mul(b.up, -(L["hem_center"].Y-mid(L["left_hem"], L["right_hem"]).Y)*s))}
	for _, n := range []string{"left_neck", "right_neck"} {
		if q, ok := L[n]; ok {
			src = append(src, q)
			dst = append(dst, T.Apply(q))
		}
	}
	// Mid-side points keep the sides straight.
	src = append(src, mid(L["left_underarm"], L["left_hem"]), mid(L["right_underarm"], L["right_hem"]))
	dst = append(dst, mid(dst[3], hemL), mid(dst[4], hemR))
	names := []string{"left_shoulder", "right_shoulder", "collar_center", "left_underarm", "right_underarm", "left_hem", "right_hem", "hem_center"}
	for i, n := range names {
		info.Targets[n] = dst[i]
	}
	var m Mapping
	if acc == AccuracyStandard {
		a, err := FitAffine(dst, src)
		if err != nil {
			return nil, err
		}
		m = a
	} else {
		t, err := FitTPS(dst, src, 1e-3)
		if err != nil {
			return nil, err
		}
		m = t
	}
	// Garment parts: sleeves lie outside the shoulder-underarm lines.
	var sleeveL, sleeveR *image.Gray
	bodyM := g.Mask
	if g.Sleeves {
		sleeveL = splitMask(g.Mask, gsL, L["left_underarm"], L["left_sleeve_end"])
		sleeveR = splitMask(g.Mask, gsR, L["right_underarm"], L["right_sleeve_end"])
		bodyM = subMask(subMask(g.Mask, sleeveL), sleeveR)
		// Parts overlap by a few pixels so that no seam opens between them.
		sleeveL = overlap(sleeveL, g.Mask)
		sleeveR = overlap(sleeveR, g.Mask)
		bodyM = overlap(bodyM, g.Mask)
	}
	step, ss := workParams(acc)
	full := image.Rect(0, 0, b.w, b.h)
	// The torso may extend a little past the person's outline, sleeves a
	// little more.
	personOr := func(r float64) *image.Gray {
		m := mask.Binary(b.pm, 128)
		for i, v := range b.upper.Pix {
			m.Pix[i] = max(m.Pix[i], v)
		}
		return mask.Dilate(m, r)
	}
	bodyAllow := personOr(0.04 * b.sw)
	sleeveAllow := personOr(0.1 * b.sw)
	parts := []part{{name: "body", allow: bodyAllow, lay: warpLayer(&sampler{img: cut, part: bodyM, w: cut.Rect.Dx(), h: cut.Rect.Dy()}, m, b.w, b.h, full, step, ss)}}
	extImg := extendColours(cut, max(cut.Rect.Dx(), cut.Rect.Dy())/12)
	extend := func(parts []part) {
		ext := warpLayer(&sampler{img: extImg, w: cut.Rect.Dx(), h: cut.Rect.Dy()}, m, b.w, b.h, full, step, 1)
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
		extendInto(parts[0].lay, ext, mask.Dilate(region, 3), bodyAllow, others, 0.15*b.sw)
	}
	if !g.Sleeves {
		extend(parts)
		return parts, nil
	}
	var sleeveMaps []*polyClip
	var sleeveBoxes []image.Rectangle
	for _, sd := range []struct {
		name             string
		gs, gu, gEnd     models.Point
		gco, gci         models.Point
		sh, el, wr, seam models.Point
		under            models.Point
		pm               *image.Gray
	}{
		{"left_sleeve", gsL, L["left_underarm"], L["left_sleeve_end"], L["left_cuff_outer"], L["left_cuff_inner"], b.shL, b.elL, b.wrL, seamL, dst[3], sleeveL},
		{"right_sleeve", gsR, L["right_underarm"], L["right_sleeve_end"], L["right_cuff_outer"], L["right_cuff_inner"], b.shR, b.elR, b.wrR, seamR, dst[4], sleeveR},
	} {
		lay, clip, bb, err := placeSleeve(b, cut, sd.pm, acc, f, s, gSW, sd.gs, sd.gu, sd.gEnd, sd.gco, sd.gci, sd.sh, sd.el, sd.wr, sd.seam, sd.under, info, sd.name)
		if err != nil {
			return nil, err
		}
		parts = append(parts, part{name: sd.name, front: true, lay: lay, allow: sleeveAllow})
		sleeveMaps = append(sleeveMaps, clip)
		sleeveBoxes = append(sleeveBoxes, bb)
	}
	extend(parts)
	// Each sleeve also covers the old sleeve beside it (within a short
	// reach of its own outline) with its extended warp.
	region := mask.Dilate(b.upper, 3)
	for k := range sleeveMaps {
		wide := &polyClip{m: sleeveMaps[k].m, poly: sleeveMaps[k].poly, margin: 0.16 * b.sw}
		bb := sleeveBoxes[k].Inset(-int(0.1 * b.sw))
		ext := warpLayer(&sampler{img: extImg, w: cut.Rect.Dx(), h: cut.Rect.Dy()}, wide, b.w, b.h, bb, 2, 1)
		var others []*layer
		for j, q := range parts {
			if j != k+1 {
				others = append(others, q.lay)
			}
		}
		extendInto(parts[k+1].lay, ext, region, sleeveAllow, others, 0.12*b.sw)
	}
	return parts, nil
}

// polyAt returns the point at arc length t along the polyline and the unit
// direction of its segment there.
func polyAt(poly []models.Point, t float64) (models.Point, models.Point) {
	for i := 1; i < len(poly); i++ {
		l := dist(poly[i-1], poly[i])
		if t <= l || i == len(poly)-1 {
			return lerp(poly[i-1], poly[i], t/math.Max(l, 1e-9)), unit(sub(poly[i], poly[i-1]))
		}
		t -= l
	}
	return poly[0], models.Point{X: 0, Y: 1}
}

func polyLen(poly []models.Point) float64 {
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
	gs, gu, gEnd, gco, gci, sh, el, wr, seam, under models.Point, info *TransferInfo, name string) (*layer, *polyClip, image.Rectangle, error) {
	g0 := mid(gs, gu)
	if gco == (models.Point{}) || gci == (models.Point{}) {
		ax := unit(sub(gEnd, g0))
		n := models.Point{X: -ax.Y, Y: ax.X}
		half := 0.35 * dist(gs, gu)
		gco, gci = add(gEnd, mul(n, half)), sub(gEnd, mul(n, half))
		if dist(gco, gs) > dist(gci, gs) {
			gco, gci = gci, gco
		}
	}
	// Sleeve length from the shoulder seam to the cuff, in shoulder widths:
	// 1.2 covers the whole arm.
	gl := dist(gs, gEnd)
	frac := math.Min(math.Max(gl/gSW/1.2*f.sleeve, 0.12), 1.0)
	poly := []models.Point{sh, el, wr}
	want := frac * polyLen(poly)
	// The cuff lies past the underarm.
	if u := unit(sub(el, sh)); dot(sub(under, sh), u)+0.1*b.sw > want {
		want = math.Min(dot(sub(under, sh), u)+0.1*b.sw, polyLen(poly))
	}
	// A short sleeve (a ghost mannequin's dropped shoulder makes it look
	// longer than it is) ends above the elbow.
	if gl/gSW < 0.75 || gl < 1.3*dist(gs, gu) {
		want = math.Min(want, 0.85*dist(sh, el))
	}
	// Truncate the arm polyline at the sleeve's length.
	var arm []models.Point
	acc2 := 0.0
	arm = append(arm, sh)
	for i := 1; i < len(poly); i++ {
		l := dist(poly[i-1], poly[i])
		if acc2+l >= want || i == len(poly)-1 {
			arm = append(arm, lerp(poly[i-1], poly[i], math.Min((want-acc2)/math.Max(l, 1), 1)))
			break
		}
		arm = append(arm, poly[i])
		acc2 += l
	}
	want = polyLen(arm)
	ws := s * f.width
	armW := 0.3 * b.sw
	// Orientation: the outer (seam) side of the arm.
	_, u0 := polyAt(arm, 0)
	n0 := models.Point{X: -u0.Y, Y: u0.X}
	o := 1.0
	if dot(sub(seam, sh), n0) < 0 {
		o = -1
	}
	normal := func(t float64) models.Point {
		_, u := polyAt(arm, t)
		return mul(models.Point{X: -u.Y, Y: u.X}, o)
	}
	rootHalf := dist(seam, under) / 2
	cuffHalf := math.Max(dist(gco, gci)/2*ws, 0.5*armW*1.15)
	// The sleeve follows the arm's silhouette: its half width at the cuff
	// is at most a loose fit around the arm (outer reach of the person
	// halfway along the sleeve, which includes the old sleeve).
	if c, _ := polyAt(arm, want/2); true {
		armOut := extent(b.pm, c, normal(want/2), 0.4*b.sw)
		limit := math.Max(armOut*1.35, 0.5*armW*1.15)
		if armOut > 0.05*b.sw && cuffHalf > limit {
			cuffHalf = limit
		}
	}
	// Cover the old sleeve on the outer side of the arm (the inner side
	// runs into the torso): at least its reach halfway along the sleeve.
	if c, _ := polyAt(arm, want/2); true {
		out := extent(b.upper, c, normal(want/2), 0.4*b.sw)
		if hw := (rootHalf + cuffHalf) / 2; out*1.04 > hw && out < 0.38*b.sw {
			cuffHalf += 2 * (out*1.04 - hw)
		}
	}
	end, _ := polyAt(arm, want)
	ne := normal(want)
	src := []models.Point{gs, gu, gco, gci, gEnd}
	dst := []models.Point{seam, under, add(end, mul(ne, cuffHalf)), sub(end, mul(ne, cuffHalf)), end}
	// Edge points along the sleeve (and at the elbow when the sleeve
	// reaches past it).
	ts := []float64{0.35, 0.7}
	if e := dist(sh, el); acc != AccuracyStandard && e < want*0.95 && e > want*0.05 {
		ts = append(ts, e/want)
		slices.Sort(ts)
	}
	for _, t := range ts {
		c, _ := polyAt(arm, t*want)
		n := normal(t * want)
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
		pw, err := pieceAffine(arm, seam, under, dst[2], dst[3], gs, gu, gco, gci, want, normal, rootHalf, cuffHalf)
		if err != nil {
			return nil, nil, image.Rectangle{}, err
		}
		m = pw
	} else {
		t, err := FitTPS(dst, src, 1e-2)
		if err != nil {
			return nil, nil, image.Rectangle{}, err
		}
		m = t
	}
	// Only inside the sleeve's body outline (root, edges, cuff), with a
	// margin.
	outline := []models.Point{seam}
	for i := 5; i < len(dst); i += 2 {
		outline = append(outline, dst[i])
	}
	outline = append(outline, dst[2], dst[3])
	for i := len(dst) - 1; i >= 6; i -= 2 {
		outline = append(outline, dst[i])
	}
	outline = append(outline, under)
	clip := &polyClip{m: m, poly: outline, margin: 0.06 * b.sw}
	var bb image.Rectangle
	for _, q := range dst {
		bb = bb.Union(image.Rect(int(q.X), int(q.Y), int(q.X)+1, int(q.Y)+1))
	}
	bb = bb.Inset(-int(0.1*b.sw + 4))
	step, ss := workParams(acc)
	return warpLayer(&sampler{img: cut, part: pm, w: cut.Rect.Dx(), h: cut.Rect.Dy()}, clip, b.w, b.h, bb, min(step, 2), ss), clip, bb, nil
}

// pieceAffine is the standard sleeve map: one affine map for the upper
// arm and, when the sleeve reaches past the elbow, a second for the
// forearm, split at the elbow's cross line.
type pieceAffineMap struct {
	a, b     Affine
	split    bool
	e0, e1   models.Point // elbow cross line
	cuffSide float64
}

func pieceAffine(arm []models.Point, seam, under, co, ci, gs, gu, gco, gci models.Point, want float64,
	normal func(float64) models.Point, rootHalf, cuffHalf float64) (*pieceAffineMap, error) {
	if len(arm) < 3 {
		a, err := FitAffine([]models.Point{seam, under, co, ci}, []models.Point{gs, gu, gco, gci})
		return &pieceAffineMap{a: a}, err
	}
	el := arm[1]
	t := dist(arm[0], el) / want
	// Elbow cross-section on the body and on the garment.
	n := mul(add(normal(dist(arm[0], el)-1), normal(dist(arm[0], el)+1)), 0.5)
	hw := rootHalf + (cuffHalf-rootHalf)*t
	e0, e1 := add(el, mul(n, hw)), sub(el, mul(n, hw))
	g0, g1 := lerp(gs, gco, t), lerp(gu, gci, t)
	a, err := FitAffine([]models.Point{seam, under, e0, e1}, []models.Point{gs, gu, g0, g1})
	if err != nil {
		return nil, err
	}
	b, err := FitAffine([]models.Point{e0, e1, co, ci}, []models.Point{g0, g1, gco, gci})
	if err != nil {
		return nil, err
	}
	return &pieceAffineMap{a: a, b: b, split: true, e0: e0, e1: e1, cuffSide: sideOf(e0, e1, mid(co, ci))}, nil
}

func (p *pieceAffineMap) Map(x, y float64) (float64, float64, bool) {
	if p.split && sideOf(p.e0, p.e1, models.Point{X: x, Y: y}) == p.cuffSide {
		return p.b.Map(x, y)
	}
	return p.a.Map(x, y)
}

// polyClip limits a mapping to a polygon (plus a margin).
type polyClip struct {
	m      Mapping
	poly   []models.Point
	margin float64
}

func (c *polyClip) Map(x, y float64) (float64, float64, bool) {
	p := models.Point{X: x, Y: y}
	if !inPoly(c.poly, p) && distPoly(c.poly, p) > c.margin {
		return 0, 0, false
	}
	return c.m.Map(x, y)
}

func inPoly(poly []models.Point, p models.Point) bool {
	in := false
	for i, j := 0, len(poly)-1; i < len(poly); j, i = i, i+1 {
		a, b := poly[i], poly[j]
		if (a.Y > p.Y) != (b.Y > p.Y) && p.X < (b.X-a.X)*(p.Y-a.Y)/(b.Y-a.Y)+a.X {
			in = !in
		}
	}
	return in
}

func distPoly(poly []models.Point, p models.Point) float64 {
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
	full := image.Rect(0, 0, b.w, b.h)
	raise := 0.2 * b.torsoLen
	waistL := add(b.hipL, mul(b.up, raise))
	waistR := add(b.hipR, mul(b.up, raise))
	gwL, gwR, gwC := L["left_waist"], L["right_waist"], L["waist_center"]
	gWaist := dist(gwL, gwR)
	if gWaist < 4 {
		return nil, fmt.Errorf("tryon: garment waist too narrow")
	}
	// Body waist width from the old bottoms (or the hips).
	mw := mid(waistL, waistR)
	el := extent(b.lower, mw, mul(b.right, -1), 1.2*b.sw)
	er := extent(b.lower, mw, b.right, 1.2*b.sw)
	bodyW := math.Max(el+er, 1.3*dist(b.hipL, b.hipR))
	if bodyW > 1.6*b.sw || bodyW < 0.3*b.sw {
		bodyW = 0.9 * b.sw
	}
	s := bodyW / gWaist * f.width
	if !g.Trousers {
		// Skirt: waist corners to the waist, hem corners down the legs.
		hemLen := (L["hem_center"].Y - gwC.Y) * s * f.length
		down := mul(b.up, -1)
		wl := add(mw, mul(b.right, -bodyW/2))
		wr := add(mw, mul(b.right, bodyW/2))
		hw := dist(L["left_hem"], L["right_hem"]) * s / 2
		hc := add(add(mw, mul(down, hemLen)), mul(b.right, f.drape*b.sw))
		src := []models.Point{gwL, gwR, L["left_hem"], L["right_hem"], L["hem_center"], gwC}
		dst := []models.Point{wl, wr, add(hc, mul(b.right, -hw)), add(hc, mul(b.right, hw)), hc, mw}
		var m Mapping
		var err error
		if acc == AccuracyStandard {
			m, err = FitAffine(dst, src)
		} else {
			m, err = FitTPS(dst, src, 1e-3)
		}
		if err != nil {
			return nil, err
		}
		info.Targets["waist_center"] = mw
		return []part{{name: "skirt", lay: warpLayer(&sampler{img: cut, part: g.Mask, w: cut.Rect.Dx(), h: cut.Rect.Dy()}, m, b.w, b.h, full, step, ss)}}, nil
	}
	crotch := L["crotch"]
	var parts []part
	var bones []*Bone
	var boxes []image.Rectangle
	// Trousers stay on the old trousers' region (a little wider), behind
	// the top, arms and hands.
	// Past the old trousers only within the person's silhouette, so that
	// the leg edges follow the legs rather than the warp's outline.
	legAllow := mask.Dilate(b.lower, 0.05*b.sw)
	inPerson := mask.Dilate(mask.Binary(b.pm, 96), 0.03*b.sw)
	for i, v := range b.upper.Pix {
		if v >= 128 || (inPerson.Pix[i] < 128 && b.lower.Pix[i] < 128) {
			legAllow.Pix[i] = 0
		}
	}
	for _, sd := range []struct {
		name               string
		gw, gHem           models.Point
		waist, hip, kn, an models.Point
	}{
		{"left_leg", gwL, L["left_hem_center"], waistL, b.hipL, b.kneeL, b.ankL},
		{"right_leg", gwR, L["right_hem_center"], waistR, b.hipR, b.kneeR, b.ankR},
	} {
		g0 := mid(sd.gw, gwC)
		gl := dist(g0, sd.gHem)
		frac := math.Min(math.Max(gl/gWaist/2.45*f.length, 0.2), 1.04)
		poly := []models.Point{sd.waist, sd.hip, sd.kn, sd.an}
		total := dist(sd.waist, sd.hip) + dist(sd.hip, sd.kn) + dist(sd.kn, sd.an)
		want := frac * total
		var cutPoly []models.Point
		acc2 := 0.0
		cutPoly = append(cutPoly, poly[0])
		for i := 1; i < len(poly); i++ {
			l := dist(poly[i-1], poly[i])
			if acc2+l >= want || i == len(poly)-1 {
				t := math.Min((want-acc2)/math.Max(l, 1), 1.15)
				cutPoly = append(cutPoly, lerp(poly[i-1], poly[i], t))
				break
			}
			cutPoly = append(cutPoly, poly[i])
			acc2 += l
		}
		if acc == AccuracyStandard && len(cutPoly) > 2 {
			// Two straight pieces, waist to knee and knee to hem (no bend
			// at the hip).
			cutPoly = append([]models.Point{sd.waist}, cutPoly[2:]...)
		}
		legM := overlap(splitMask(g.Mask, crotch, gwC, sd.gHem), g.Mask)
		// Leg width profile: the old trousers' width across the leg over the
		// garment's width at the same fraction of its length.
		ug := unit(sub(sd.gHem, g0))
		ng := models.Point{X: -ug.Y, Y: ug.X}
		bl := polyLen(cutPoly)
		const k = 8
		widths := make([]float64, k)
		var valid []float64
		reach := 0.0
		for i := range widths {
			fr := (float64(i) + 0.5) / k
			c, u := polyAt(cutPoly, fr*bl)
			n := models.Point{X: -u.Y, Y: u.X}
			wb := extent(b.lower, c, n, 0.7*b.sw) + extent(b.lower, c, mul(n, -1), 0.7*b.sw)
			gc := lerp(g0, sd.gHem, fr)
			wg := extent(legM, gc, ng, gWaist) + extent(legM, gc, mul(ng, -1), gWaist)
			widths[i] = math.NaN()
			if wb > 0.12*b.sw && wb < 1.1*b.sw && wg > 4 {
				widths[i] = wb / wg * 1.04 * f.width
				valid = append(valid, widths[i])
			}
			reach = math.Max(reach, wg)
		}
		def := s
		if len(valid) > 0 {
			def = med(valid)
		}
		for i, v := range widths {
			if math.IsNaN(v) {
				widths[i] = def
			}
			widths[i] = math.Min(math.Max(widths[i], 0.5*def), 2*def)
		}
		outerG := dot(sub(sd.gw, g0), ng) > 0
		ub := unit(sub(cutPoly[1], cutPoly[0]))
		nb := models.Point{X: -ub.Y, Y: ub.X}
		outerB := dot(sub(sd.waist, mid(waistL, waistR)), nb) > 0
		maxW := 0.0
		for _, v := range widths {
			maxW = math.Max(maxW, v)
		}
		bone := &Bone{Body: cutPoly, G0: g0, G1: sd.gHem, Width: def, Widths: widths, Flip: outerG != outerB, Reach: reach * maxW * 0.7}
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
	extImg := extendColours(cut, max(cut.Rect.Dx(), cut.Rect.Dy())/12)
	for i := range parts {
		ext := warpLayer(&sampler{img: extImg, w: cut.Rect.Dx(), h: cut.Rect.Dy()}, bones[i], b.w, b.h, boxes[i], min(step, 2), 1)
		extendInto(parts[i].lay, ext, mask.Dilate(b.lower, 3), legAllow, []*layer{parts[1-i].lay}, 0.3*b.sw)
	}
	return parts, nil
}

// composite removes the old garment, fills what the new one leaves
// visible, and lays the new garment behind arms, hands, hair and face
// (sleeves over the arms, behind the hands).
func composite(b *body, kind string, parts []part, acc string, info *TransferInfo, recolour *color.RGBA) (*image.RGBA, error) {
	w, h := b.w, b.h
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
	// What lies in front (arms, hands, face, hair) is never removed.
	old = subMask(old, b.front)
	// Coverage of the new garment.
	alpha := make([]float32, w*h)
	for _, pt := range parts {
		for i := 0; i < w*h; i++ {
			a := pt.lay.pix[i*4+3]
			if pt.allow != nil && pt.allow.Pix[i] < 128 {
				a = 0
			}
			alpha[i] = 1 - (1-alpha[i])*(1-a)
		}
	}
	front := mask.Float(b.front)
	hands := mask.Float(b.hands)
	sig := 1.0
	if acc == AccuracyHyper {
		sig = 1.6
	}
	front = mask.GaussBlur(front, w, h, sig)
	hands = mask.GaussBlur(hands, w, h, sig)
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
		inp, err := cv.Inpaint(b.img, fill, 5)
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
		// The same lighting as the garment layer beside it, so that the
		// recoloured remnants do not stand out as darker patches.
		folds := shade
		if folds == nil {
			folds = make([]float32, w*h)
			for i := range folds {
				folds[i] = 1
			}
		}
		soft := mask.GaussBlur(mask.Float(fill), w, h, 1.5)
		rc := [3]float32{float32(recolour.R), float32(recolour.G), float32(recolour.B)}
		// The warped garment's own mean colour over the old region (the
		// dominant colour of the whole photo can lean to its shadows or
		// background), so that the remnants match the garment beside them.
		var sum [3]float64
		var n float64
		for _, pt := range parts {
			for i := 0; i < w*h; i += 3 {
				a := pt.lay.pix[i*4+3]
				if a < 0.95 || old.Pix[i] < 128 {
					continue
				}
				for c := 0; c < 3; c++ {
					sum[c] += float64(pt.lay.pix[i*4+c] / a * 255)
				}
				n++
			}
		}
		if n > 100 {
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
	layerA := make([]float32, w*h)
	allow := map[string][]float32{}
	for _, pt := range parts {
		if pt.allow != nil {
			allow[pt.name] = mask.GaussBlur(mask.Float(pt.allow), w, h, sig)
		}
	}
	// Sleeves lie over the torso only around the arm; elsewhere (their
	// inner side, flattened against the chest) the torso covers them.
	armCap := mask.GaussBlur(mask.Float(b.armCap), w, h, 2)
	var bodyA []float32
	if len(parts) > 0 && !parts[0].front {
		bodyA = make([]float32, w*h)
		for i := range bodyA {
			bodyA[i] = parts[0].lay.pix[i*4+3]
		}
	}
	// Pieces of a part cut off from it by an arm in front (a hem corner
	// peeking out beyond a forearm) are dropped.
	islands := map[string][]float32{}
	for _, pt := range parts {
		keep := front
		if pt.front {
			keep = hands
		}
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
		any := false
		for i, l := range lab {
			if l != 0 && sizes[l] < big/25 {
				drop.Pix[i] = 255
				any = true
			}
		}
		if any {
			islands[pt.name] = mask.Float(mask.Dilate(drop, 2))
		}
	}
	for _, pt := range parts {
		keep := front
		if pt.front {
			keep = hands
		}
		isl := islands[pt.name]
		for i := 0; i < w*h; i++ {
			a := pt.lay.pix[i*4+3]
			if a <= 0.002 {
				continue
			}
			a *= 1 - keep[i]
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
			inv := 1 / pt.lay.pix[i*4+3]
			k := float32(1)
			if shade != nil {
				k = shade[i]
			}
			for c := 0; c < 3; c++ {
				gc := pt.lay.pix[i*4+c] * inv * k * 255
				gc = min(max(gc, 0), 255)
				o := float32(out.Pix[i*4+c])
				out.Pix[i*4+c] = uint8(o + (gc-o)*a + 0.5)
			}
			layerA[i] = 1 - (1-layerA[i])*(1-a)
		}
	}
	// Old clothes kept in front (never); restore pixels in front that lie
	// outside the old region from the original (the fill only touched the
	// old region).
	info.Layer = mask.FromFloat(layerA, w, h)
	info.Replaced = old
	// The person with the new garment: the person model's mask, the
	// parsing's skin, clothes and hair near it, and the garment layer.
	pm := image.NewGray(b.pm.Rect)
	near := mask.Dilate(mask.Binary(b.pm, 96), 0.08*b.sw)
	for i := range pm.Pix {
		v := max(b.pm.Pix[i], info.Layer.Pix[i])
		if near.Pix[i] >= 128 {
			v = max(v, b.parse.Skin.Pix[i], b.parse.Clothes.Pix[i], b.parse.Hair.Pix[i])
		}
		pm.Pix[i] = v
	}
	info.PersonMask = mask.Feather(mask.FillHoles(mask.Close(mask.Binary(pm, 128), 4)), 1.5)
	return out, nil
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
func AnalyzeGarment(ctx context.Context, p models.Perception, img image.Image) (*garment.Garment, error) {
	g, err := garment.Analyze(ctx, p, img)
	if errors.Is(err, garment.ErrNoGarment) {
		return nil, pipelines.Failf("garmentImage: %v", err)
	}
	return g, err
}
