package body

import (
	"image"
	"image/draw"
	"math"

	"fashiond/pipelines/capability/mask"
	"fashiond/pipelines/capability/raster"
)

// EditAlpha is how much of an edited image may show at each pixel: 255 on
// the subject's region, falling linearly to 0 across the blend band (Band
// pixels wide) around it, and 0 everywhere else, where the input must stay
// pixel-identical; 0 on every other person's region too (where it is not
// also the subject's: an assumed body box may overlap her), so that the
// band never reaches into a neighbour the subject touches.
func (a *Analysis) EditAlpha() *image.Gray {
	own := a.SubjectPerson().Region
	alpha := BandAlpha(own, a.Band())
	if a.Several() {
		for i, v := range a.OthersMask().Pix {
			if v != 0 && own.Pix[i] == 0 {
				alpha.Pix[i] = 0
			}
		}
	}
	return alpha
}

// BandAlpha is 255 on the on-pixels of region, linear to 0 at band pixels
// from them, 0 beyond.
func BandAlpha(region *image.Gray, band float64) *image.Gray {
	w, h := region.Rect.Dx(), region.Rect.Dy()
	d := mask.SqDist(w, h, func(i int) bool { return region.Pix[i] >= MaskThreshold })
	out := image.NewGray(image.Rect(0, 0, w, h))
	for i, v := range d {
		if dd := math.Sqrt(v); dd < band {
			out.Pix[i] = uint8(255*(1-dd/band) + 0.5)
		}
	}
	return out
}

// OthersMask is the union of every person's region except the subject's
// (image-sized, 255 on).
func (a *Analysis) OthersMask() *image.Gray {
	g := image.NewGray(image.Rect(0, 0, a.W, a.H))
	for i := range a.People {
		if i != a.Subject {
			orMask(g, a.People[i].Region)
		}
	}
	return g
}

// CropRect is the working crop around the subject: its region's bounding
// box grown by the blend band and CropMarginFrac of its larger side,
// clamped to the image.
func (a *Analysis) CropRect() image.Rectangle {
	b := a.SubjectPerson().Box
	m := int(a.Band() + CropMarginFrac*float64(max(b.Dx(), b.Dy())))
	return b.Inset(-m).Intersect(image.Rect(0, 0, a.W, a.H))
}

// Crop returns the pixels of img inside r as a new *image.RGBA with origin
// (0,0).
func Crop(img image.Image, r image.Rectangle) *image.RGBA {
	out := image.NewRGBA(image.Rect(0, 0, r.Dx(), r.Dy()))
	draw.Draw(out, out.Rect, img, img.Bounds().Min.Add(r.Min), draw.Src)
	return out
}

// Confine returns orig with edited (same size) blended in by alpha:
// orig*(1-alpha) + edited*alpha per channel, and exactly orig where alpha
// is 0.
func Confine(orig, edited image.Image, alpha *image.Gray) *image.RGBA {
	o, e := raster.RGBA(orig), raster.RGBA(edited)
	out := image.NewRGBA(o.Rect)
	copy(out.Pix, o.Pix)
	w, h := o.Rect.Dx(), o.Rect.Dy()
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			av := alpha.Pix[y*alpha.Stride+x]
			if av == 0 {
				continue
			}
			oi, ei := y*o.Stride+x*4, y*e.Stride+x*4
			for c := 0; c < 4; c++ {
				ov, ev := int(o.Pix[oi+c]), int(e.Pix[ei+c])
				out.Pix[oi+c] = uint8((ov*(255-int(av)) + ev*int(av) + 127) / 255)
			}
		}
	}
	return out
}

// ConfineCrop places editedCrop (the result of working on Crop(orig, r))
// back at r and confines it with alpha (image-sized, as EditAlpha).
func ConfineCrop(orig image.Image, editedCrop image.Image, r image.Rectangle, alpha *image.Gray) *image.RGBA {
	full := image.NewRGBA(image.Rect(0, 0, orig.Bounds().Dx(), orig.Bounds().Dy()))
	draw.Draw(full, full.Rect, orig, orig.Bounds().Min, draw.Src)
	draw.Draw(full, r, editedCrop, editedCrop.Bounds().Min, draw.Src)
	return Confine(orig, full, alpha)
}

// ChangedOutside is the share (0..1) of the pixels where alpha is 0 whose
// colour differs from orig by more than tol levels in any channel. orig and
// out must have the same size; a size mismatch counts as fully changed.
func ChangedOutside(orig, out image.Image, alpha *image.Gray, tol uint8) float64 {
	o, e := raster.RGBA(orig), raster.RGBA(out)
	if o.Rect.Size() != e.Rect.Size() || alpha.Rect.Size() != o.Rect.Size() {
		return 1
	}
	w, h := o.Rect.Dx(), o.Rect.Dy()
	n, changed := 0, 0
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			if alpha.Pix[y*alpha.Stride+x] != 0 {
				continue
			}
			n++
			oi, ei := y*o.Stride+x*4, y*e.Stride+x*4
			for c := 0; c < 3; c++ {
				if absDiff(o.Pix[oi+c], e.Pix[ei+c]) > tol {
					changed++
					break
				}
			}
		}
	}
	if n == 0 {
		return 0
	}
	return float64(changed) / float64(n)
}

func absDiff(a, b uint8) uint8 {
	if a > b {
		return a - b
	}
	return b - a
}

// Several reports whether the photo shows more than one person: then an
// edit that moves or re-renders the person (re-posing, a new view) works
// on the subject alone and is confined with ConfineMoved.
func (a *Analysis) Several() bool { return len(a.People) > 1 }

// ConfineMoved confines an edit that moved the subject: edited keeps its
// pixels on the union of the subject's old region and moved (the
// re-rendered person's coverage, image-sized, nil for none) and across the
// blend band around it, and is exactly orig elsewhere and on every other
// person's region (the others stay pixel-identical even where the moved
// subject would overlap them). It returns the result and the alpha used.
func (a *Analysis) ConfineMoved(orig, edited image.Image, moved *image.Gray) (*image.RGBA, *image.Gray) {
	region := image.NewGray(image.Rect(0, 0, a.W, a.H))
	copy(region.Pix, a.SubjectPerson().Region.Pix)
	if moved != nil {
		for i, v := range moved.Pix {
			if v >= MaskThreshold {
				region.Pix[i] = 255
			}
		}
	}
	alpha := BandAlpha(region, a.Band())
	for i, v := range a.OthersMask().Pix {
		if v != 0 {
			alpha.Pix[i] = 0
		}
	}
	return Confine(orig, edited, alpha), alpha
}

// HideOthers returns a copy of crop (the pixels of the photo inside r,
// origin (0,0)) with every other person's region painted in the mean
// colour of the crop's pixels that are nobody's, so that the perception a
// stage runs on the subject's crop (pose, garment parsing) sees the
// subject alone. The painted pixels never reach an output: EditAlpha is 0
// on other people's regions.
func (a *Analysis) HideOthers(crop *image.RGBA, r image.Rectangle) *image.RGBA {
	out := image.NewRGBA(crop.Rect)
	copy(out.Pix, crop.Pix)
	if !a.Several() {
		return out
	}
	others := a.OthersMask()
	var sum [3]float64
	n := 0
	for y := 0; y < r.Dy(); y++ {
		for x := 0; x < r.Dx(); x++ {
			k := (y+r.Min.Y)*a.W + x + r.Min.X
			if others.Pix[k] == 0 && a.SubjectPerson().Region.Pix[k] == 0 {
				i := y*out.Stride + x*4
				for c := range 3 {
					sum[c] += float64(out.Pix[i+c])
				}
				n++
			}
		}
	}
	if n == 0 {
		return out
	}
	for y := 0; y < r.Dy(); y++ {
		for x := 0; x < r.Dx(); x++ {
			if others.Pix[(y+r.Min.Y)*a.W+x+r.Min.X] != 0 {
				i := y*out.Stride + x*4
				for c := range 3 {
					out.Pix[i+c] = uint8(sum[c]/float64(n) + 0.5)
				}
			}
		}
	}
	return out
}
