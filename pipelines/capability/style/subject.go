package style

import (
	"context"
	"fmt"
	"image"

	"fashiond/perception"
	"fashiond/pipelines/capability/mask"
	"fashiond/pipelines/capability/raster"
)

// SubjectMask is the person mask Options.PersonMask expects, fused from
// three models: the selfie segmentation (good on heads and torsos, soft
// on legs), the pose model's own mask (good on limbs, noisy on busy
// backgrounds, blind in patches of dark trousers) and the human parser's
// skin, clothes and hair (fuseMasks), its holes that the selfie mask sees
// as person filled (fillHeldHoles). The mask has img's size (origin 0,0).
func SubjectMask(ctx context.Context, p perception.Perception, img image.Image) (*image.Gray, error) {
	m, _, err := subjectMask(ctx, p, img)
	return m, err
}

// subjectMask is SubjectMask and the pose it ran.
func subjectMask(ctx context.Context, p perception.Perception, img image.Image) (*image.Gray, *perception.Pose, error) {
	sel, err := p.PersonMask(ctx, img)
	if err != nil {
		return nil, nil, fmt.Errorf("person mask: %w", err)
	}
	pose, err := p.Pose(ctx, img)
	if err != nil {
		return nil, nil, fmt.Errorf("pose: %w", err)
	}
	par, err := p.Parse(ctx, img)
	if err != nil {
		return nil, nil, fmt.Errorf("parse: %w", err)
	}
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	m := fuseMasks(w, h, sel, pose.Mask, parsedPerson(par))
	fillHeldHoles(m, raster.MaskPlane(sel, w, h), transparent(img))
	return m, pose, nil
}

// parsedPerson is the human parser's person: the probability that a
// pixel is skin, clothes or hair, 1-(1-skin)(1-clothes)(1-hair) (the
// parser's three outputs are independent sigmoids; where skin meets
// clothes each may be below one half while their union is not). Nil
// without a parsing.
func parsedPerson(par *perception.Parsing) *image.Gray {
	if par == nil || par.Skin == nil || par.Clothes == nil || par.Hair == nil {
		return nil
	}
	out := image.NewGray(par.Skin.Rect)
	for i := range out.Pix {
		none := (255 - int(par.Skin.Pix[i])) * (255 - int(par.Clothes.Pix[i])) * (255 - int(par.Hair.Pix[i]))
		out.Pix[i] = uint8(255 - (none+255*255/2)/(255*255))
	}
	return out
}

// fuseMasks fuses the available masks (resampled to w x h; nil ones left
// out) and applies smoothstep(0.3, 0.7): with three, their median, so that
// where one model misses the person (the pose mask's holes in black
// trousers) or sees one that is not there (the parser's skin on a
// carpet) the other two decide; with fewer, their average, so that what
// both agree on is solid and what only one weakly sees is dropped. An
// average of two models that disagree is about one half: a half-painted
// backdrop over the person, the reason for the third.
func fuseMasks(w, h int, masks ...*image.Gray) *image.Gray {
	var ps []*raster.Plane
	for _, m := range masks {
		if p := raster.MaskPlane(m, w, h); p != nil {
			ps = append(ps, p)
		}
	}
	out := image.NewGray(image.Rect(0, 0, w, h))
	for i := range out.Pix {
		var v float32
		switch len(ps) {
		case 3:
			a, b, c := ps[0].P[i], ps[1].P[i], ps[2].P[i]
			v = max(min(a, b), min(max(a, b), c))
		case 2:
			v = (ps[0].P[i] + ps[1].P[i]) / 2
		case 1:
			v = ps[0].P[i]
		}
		out.Pix[i] = uint8(raster.Smoothstep(0.3, 0.7, v)*255 + 0.5)
	}
	return out
}

// heldSolid is the fused-mask value (0..255) from which fillHeldHoles
// takes a pixel for solid person: a hole's soft rim, which the backdrop
// would tint, is part of the hole.
const heldSolid = 250

// fillHeldHoles sets to person (255) every hole of the fused mask m that
// the selfie mask sel (m's size, 0..1; nil: none) holds as person: a
// 4-connected region of m below heldSolid none of whose pixels sel puts
// below one half or clear (nil: none) marks as a transparent pixel of a
// cut-out. Such a region is enclosed by the person, or by the person and
// the frame where the person runs out of it, and the selfie model, which
// sees it, is the one of the three that does not lose dark clothes: on
// fashn_garment.webp the pose model and the parser both lose the black
// trousers beside the hand at the frame's bottom edge, and the backdrop
// painted grey blotches there. A gap between an arm and the body, which
// the selfie model sees as background, and anything the person holds or
// stands beside that reaches the open background (a dog, a helmet) stay
// as they are.
func fillHeldHoles(m *image.Gray, sel *raster.Plane, clear func(i int) bool) {
	if sel == nil {
		return
	}
	off := image.NewGray(m.Rect)
	for i, v := range m.Pix {
		if v < heldSolid {
			off.Pix[i] = 255
		}
	}
	lab, sizes := mask.Components(off)
	open := make([]bool, len(sizes))
	for i, l := range lab {
		if l != 0 && (sel.P[i] < 0.5 || (clear != nil && clear(i))) {
			open[l] = true
		}
	}
	for i, l := range lab {
		if l != 0 && !open[l] {
			m.Pix[i] = 255
		}
	}
}

// transparent reports the fully transparent pixels of img (index y*w+x
// from its origin), which are never the person: a cut-out's transparent
// background is black in premultiplied colour, and the selfie model and
// the parser take a dark gap between the legs for trousers. Nil for an
// opaque image.
func transparent(img image.Image) func(i int) bool {
	if o, ok := img.(interface{ Opaque() bool }); ok && o.Opaque() {
		return nil
	}
	rgba := raster.RGBA(img)
	return func(i int) bool { return rgba.Pix[i*4+3] == 0 }
}
