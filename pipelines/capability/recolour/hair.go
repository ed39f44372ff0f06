package recolour

import (
	"image"
	"math"

	"fashiond/pipelines/capability/mask"
	"fashiond/pipelines/capability/raster"
)

// Hair the parser calls clothes. Long hair hanging over a shoulder, lit
// from behind, is labelled clothes by the skin/clothes/hair model below
// the point where it leaves the head's outline: the strands and the glow
// between them are light, like a light top. The strands keep the hair's
// colour, though, and run on unbroken from the hair the parser does see;
// the hanging hair is those strands and the gaps between them.
const (
	// hairSeed: parser hair above this is hair, and seeds the colour model
	// (hairModelSeed) and the strands' flood.
	hairSeed      = 0.5
	hairModelSeed = 0.8
	// strandNear: a strand pixel's chromaticity is within this mean
	// squared z-distance of the hair's colour model ...
	strandNear = 4
	// strandMargin: ... and nearer to it than to the garment's by this.
	strandMargin = 1
	// minHairGarmentZ2: the hair's and the garment's chromaticities must be
	// this far apart (mean squared z) for strands to be told from cloth;
	// dark hair over a dark top, blonde hair over a camel one are left to
	// the parser.
	minHairGarmentZ2 = 4
	// strandReach: strands this many pixels apart are connected (the thin
	// tips break up into dashes).
	strandReach = 2
	// strandClose: the gaps between connected strands narrower than twice
	// this share of the image diagonal are hair too.
	strandClose = 0.015
	// strandFeather: the hanging hair's edge is blurred over this share.
	strandFeather = 0.002
)

// chromaDist is the mean squared z-distance of a pixel's chromaticity
// (a, b: rg chromaticity x100) from the model's.
func (m *labModel) chromaDist(a, b float32) float32 {
	z1 := (float64(a) - m.mean[1]) / m.std[1]
	z2 := (float64(b) - m.mean[2]) / m.std[2]
	return float32((z1*z1 + z2*z2) / 2)
}

// hangingHair returns the hair the parser labels clothes (0..1, zero
// almost everywhere): pixels of the person that are no skin, whose
// chromaticity is the hair's rather than the nearer garment's, connected
// to the parser's hair through such pixels, with the gaps between them
// closed. Nil when there is no hair, no garment model, or the hair's and
// the garment's colours are too alike to tell strands from cloth. Only
// hair of a clear hue (chroma > 20: red, auburn, golden or backlit hair)
// is followed: a strand of near-grey hair (black, brown, ash) has the
// chromaticity of every white, grey or black garment.
func (r *Regions) hangingHair(wk *regionWork) *raster.Plane {
	var n int
	hm := fitModel(wk.hair, wk.L, wk.A, wk.B, wk.Cp, wk.Hp, func(i int) bool { return wk.hair.P[i] > hairModelSeed }, &n)
	if hm == nil || !hm.chromatic {
		return nil
	}
	var garments []*labModel
	for _, g := range []*labModel{r.topModel, r.botModel} {
		if g != nil && chromaApart(hm, g) > minHairGarmentZ2 {
			garments = append(garments, g)
		}
	}
	if len(garments) == 0 {
		return nil
	}
	w, h := r.w, r.h
	cand := image.NewGray(image.Rect(0, 0, w, h))
	for i := range cand.Pix {
		if wk.hair.P[i] > hairSeed {
			cand.Pix[i] = 255
			continue
		}
		if wk.skin.P[i] > hairSeed || wk.pg.P[i] < 0.5 {
			continue
		}
		dh := hm.chromaDist(wk.A.P[i], wk.B.P[i])
		dg := float32(math.Inf(1))
		for _, g := range garments {
			dg = min(dg, g.chromaDist(wk.A.P[i], wk.B.P[i]))
		}
		if dh < strandNear && dh+strandMargin < dg && hm.offHue(wk.Cp.P[i], wk.Hp.P[i]) < 0.5 {
			cand.Pix[i] = 255
		}
	}
	return strandsFrom(cand, wk.hair, wk.diag)
}

// strandsFrom keeps the candidate pixels connected (8-neighbours) to the
// parser's hair, closes the gaps between them and returns them, less the
// parser's hair itself, feathered.
func strandsFrom(cand *image.Gray, hair *raster.Plane, diag float64) *raster.Plane {
	w, h := hair.W, hair.H
	lab, _ := mask.Components(mask.Dilate(cand, strandReach))
	seeded := map[int32]bool{}
	for i, v := range hair.P {
		if v > hairSeed && lab[i] != 0 {
			seeded[lab[i]] = true
		}
	}
	kept := image.NewGray(cand.Rect)
	found := false
	for i, v := range cand.Pix {
		if v != 0 && seeded[lab[i]] && hair.P[i] <= hairSeed {
			kept.Pix[i] = 255
			found = true
		}
	}
	if !found {
		return nil
	}
	closed := mask.Close(kept, strandClose*diag)
	out := raster.NewPlane(w, h)
	for i, v := range closed.Pix {
		if v != 0 {
			out.P[i] = 1
		}
	}
	raster.Blur(out, raster.NewPlane(w, h), strandFeather*diag)
	return out
}

// chromaApart is the mean squared z-distance between two models'
// chromaticities (the spread averaged).
func chromaApart(a, b *labModel) float64 {
	var d float64
	for c := 1; c < 3; c++ {
		s := (a.std[c] + b.std[c]) / 2
		z := (a.mean[c] - b.mean[c]) / s
		d += z * z
	}
	return d / 2
}

// noFillNearHangingHair clears the nearness to the clothes (near) that
// lets colour alone add garment pixels, within the fill's own reach of the
// hanging hair: the glow seen through backlit hair has a light top's
// colour, and only the parser's clothes count there.
func (r *Regions) noFillNearHangingHair(near *raster.Plane, diag float64) {
	if r.hanging == nil {
		return
	}
	nh := raster.WideBlur(r.hanging, diag*nearBlur)
	for i, v := range nh.P {
		near.P[i] *= 1 - raster.Smoothstep(0.01, 0.08, v)
	}
}

// HairMask is the subject's hair on the crop (255, origin 0,0): the
// parser's hair and the hanging hair it labelled clothes, at alpha 0.5.
// No garment edit may change it.
func (r *Regions) HairMask() *image.Gray {
	m := image.NewGray(image.Rect(0, 0, r.w, r.h))
	if r.hair == nil {
		return m
	}
	for i, v := range r.hair.P {
		if v >= hairSeed {
			m.Pix[i] = 255
		}
	}
	return m
}
