package recolour

import (
	"image"
	"image/draw"
	"math"
	"slices"

	"fashiond/pipelines/capability/mask"
)

// The garment mask a generative stage repaints: the spec's garment
// regions, grown to the silhouette the requested garment needs.
const (
	// growFrac grows the garment region by this share of the crop's
	// diagonal, so a garment can be a little wider or longer than the old.
	growFrac = 0.02
	// faceMarginFrac keeps this share of the face box's size around the
	// face out of the mask.
	faceMarginFrac = 0.15
	// legsStopFrac: a dress covers the legs down to this share of the
	// person's height below the waist (the feet stay).
	legsStopFrac = 0.85
)

// sleeveNouns add the arms; dressNouns add the legs below the waist.
var (
	sleeveNouns = []string{"jacket", "blazer", "coat", "cardigan", "sweater", "jumper", "hoodie", "sweatshirt", "parka",
		"raincoat", "trench", "puffer", "bomber", "anorak", "windbreaker", "turtleneck", "pullover", "kimono", "shacket"}
	dressNouns = []string{"dress", "gown", "sundress", "maxi", "kaftan", "robe", "jumpsuit", "boilersuit", "coveralls"}
)

// GarmentMask is the region a generative stage repaints on the crop:
// the spec's garment regions, grown, plus the arms for sleeved garments
// and the legs for dresses, within the person (dilated), never the face
// nor the hair (HairMask: hair over a shoulder stays in front of the new
// garment).
func GarmentMask(r *Regions, spec Spec, face *image.Rectangle) *image.Gray {
	w, h := r.w, r.h
	m := image.NewGray(image.Rect(0, 0, w, h))
	for _, g := range spec.Garments {
		alpha := map[string][]float32{RegionTop: r.top.P, RegionBottom: r.bottom.P, RegionFull: r.full.P}[g.Region]
		for i, a := range alpha {
			if a >= 0.5 {
				m.Pix[i] = 255
			}
		}
		addShape(m, r, g.Noun)
	}
	grow := growFrac * math.Hypot(float64(w), float64(h))
	m = mask.Dilate(m, grow)
	person := mask.Dilate(mask.Binary(mask.FromFloat(r.person.P, w, h), 128), grow)
	for i := range m.Pix {
		m.Pix[i] &= person.Pix[i]
	}
	if face != nil {
		d := int(faceMarginFrac * float64(max(face.Dx(), face.Dy())))
		draw.Draw(m, face.Inset(-d), image.Black, image.Point{}, draw.Src)
	}
	if r.hair != nil {
		for i, v := range r.hair.P {
			if v >= hairSeed {
				m.Pix[i] = 0
			}
		}
	}
	return m
}

// addShape adds the arms (sleeved garments: person pixels between the
// shoulders' height and the waist) or the legs (dresses) to m.
func addShape(m *image.Gray, r *Regions, noun string) {
	w, h := r.w, r.h
	waist := int(r.waistY)
	var y0, y1 int
	switch {
	case slices.Contains(sleeveNouns, noun):
		y0, y1 = int(r.waistY+r.upY*r.torso), waist
	case slices.Contains(dressNouns, noun):
		bottom := waist
		for y := h - 1; y > waist; y-- {
			if rowHasPerson(r, y) {
				bottom = y
				break
			}
		}
		y0, y1 = waist, waist+int(legsStopFrac*float64(bottom-waist))
	default:
		return
	}
	for y := max(0, y0); y < min(h, y1); y++ {
		for x := range w {
			if r.person.P[y*w+x] >= 0.5 {
				m.Pix[y*w+x] = 255
			}
		}
	}
}

func rowHasPerson(r *Regions, y int) bool {
	return slices.ContainsFunc(r.person.P[y*r.w:(y+1)*r.w], func(v float32) bool { return v >= 0.5 })
}
