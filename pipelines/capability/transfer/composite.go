package transfer

import (
	"image"
	"image/color"

	"fashiond/cv"
	"fashiond/pipelines/capability/garment"
	"fashiond/pipelines/capability/mask"
)

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
		if kind == garment.KindTop {
			fillBelowHem(base, b, fill, alpha)
		}

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
	if kind != garment.KindBottom && covN < oldN && recolour == nil {
		fillArms(out, base, b, fill, layerA)
	}
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
