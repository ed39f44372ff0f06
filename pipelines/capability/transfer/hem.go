package transfer

import (
	"image"

	"fashiond/pipelines/capability/mask"
)

// Below-hem fill tuning.
const (
	// hemTopRows is how many rows at the top of the old lower garment give
	// each column's colour (averaged) and the body's span.
	hemTopRows = 6
	// hemSpanGrow widens the lower garment's span, in pixels, to reach the
	// body's edge where the waist is a little wider than the garment's top.
	hemSpanGrow = 2
	// hemSpanFrac is the lower garment's top band, as a fraction of its
	// height, whose widest extent is the body's span at the waist.
	hemSpanFrac = 0.08
	// hemCoveredAlpha: a column holds the new garment from this alpha.
	hemCoveredAlpha = 0.5
)

// fillBelowHem repaints the part of the old top the new one leaves
// uncovered below its hem (fill, in out): a longer old top (a hoodie under
// a cropped tee) is neither kept nor smeared by the inpainting over the
// boundary of skin, garment and background. Within the span of the lower
// garment's top rows the lower garment continues upwards (each column
// takes the mean colour of its top hemTopRows rows); beside it the
// background of the same row is mirrored in from outside the person mask
// (grass stays grass, a wall stays a wall). It reports the pixels it
// repainted (nil when the photo shows no lower garment or nothing is
// uncovered below the hem).
func fillBelowHem(out *image.RGBA, b *body, fill *image.Gray, alpha []float32) *image.Gray {
	w, h := b.w, b.h
	lower := b.lower
	lb := mask.BBox(lower)
	if lb.Empty() {
		return nil
	}
	hem := make([]int, w) // per column: the last row the new garment covers
	lowest := -1
	for x := range w {
		hem[x] = -1
		for y := h - 1; y >= 0; y-- {
			if alpha[y*w+x] >= hemCoveredAlpha {
				hem[x] = y
				break
			}
		}
		lowest = max(lowest, hem[x])
	}
	if lowest < 0 {
		return nil
	}
	for x := range w { // a column without the garment: below its lowest hem
		if hem[x] < 0 {
			hem[x] = lowest
		}
	}
	top, x0, x1 := lowerTop(out, lower, lb)
	done := image.NewGray(image.Rect(0, 0, w, h))
	n := 0
	for y := 0; y < lb.Max.Y; y++ {
		for x := range w {
			i := y*w + x
			if fill.Pix[i] < 128 || y <= hem[x] {
				continue
			}
			if x >= x0-hemSpanGrow && x <= x1+hemSpanGrow {
				c := top[min(max(x, x0), x1)]
				copy(out.Pix[i*4:i*4+3], c[:])
			} else if !mirrorBackground(out, b, fill, x, y, x < (x0+x1)/2) {
				continue
			}
			done.Pix[i] = 255
			n++
		}
	}
	if n == 0 {
		return nil
	}
	return done
}

// lowerTop is, for each column of the lower garment's top band (its top
// hemSpanFrac of its height, at least hemTopRows rows), the mean colour of
// the column's first hemTopRows garment pixels, and the columns that hold
// the garment in that band (x0..x1: the body's span at the waist).
func lowerTop(img *image.RGBA, lower *image.Gray, lb image.Rectangle) (map[int][3]uint8, int, int) {
	w := lower.Rect.Dx()
	band := max(hemTopRows, int(hemSpanFrac*float64(lb.Dy())))
	cols := map[int][3]uint8{}
	x0, x1 := w, -1
	for x := lb.Min.X; x < lb.Max.X; x++ {
		var s [3]int
		n := 0
		for y := lb.Min.Y; y < min(lb.Max.Y, lb.Min.Y+band) && n < hemTopRows; y++ {
			if lower.Pix[y*lower.Stride+x] < 128 {
				continue
			}
			i := y*img.Stride + 4*x
			s[0], s[1], s[2] = s[0]+int(img.Pix[i]), s[1]+int(img.Pix[i+1]), s[2]+int(img.Pix[i+2])
			n++
		}
		if n == 0 {
			continue
		}
		cols[x] = [3]uint8{uint8(s[0] / n), uint8(s[1] / n), uint8(s[2] / n)}
		x0, x1 = min(x0, x), max(x1, x)
	}
	for x := x0; x <= x1; x++ { // gaps inside the span take their left neighbour
		if _, ok := cols[x]; !ok {
			cols[x] = cols[x-1]
		}
	}
	return cols, x0, x1
}

// mirrorBackground sets pixel (x, y) of out to the background pixel of the
// same row mirrored across the outer edge of the run of person and fill
// pixels it lies in (outward: left when left); false when that pixel is
// outside the image.
func mirrorBackground(out *image.RGBA, b *body, fill *image.Gray, x, y int, left bool) bool {
	w := b.w
	step := 1
	if left {
		step = -1
	}
	edge := x
	for e := x; e >= 0 && e < w; e += step {
		i := y*w + e
		if fill.Pix[i] < 128 && b.pm.Pix[i] < 128 {
			edge = e
			break
		}
		edge = -1
	}
	if edge < 0 {
		return false
	}
	src := edge + (edge - x)
	if src < 0 || src >= w || fill.Pix[y*w+src] >= 128 || b.pm.Pix[y*w+src] >= 128 {
		src = edge
	}
	copy(out.Pix[(y*w+x)*4:(y*w+x)*4+3], out.Pix[(y*w+src)*4:(y*w+src)*4+3])
	return true
}
