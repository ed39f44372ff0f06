package transfer

import (
	"image"
	"math"

	"fashiond/perception"
)

// Upper-arm fill tuning (lengths in the body's shoulder widths, b.sw).
const (
	// armFillReach is how far across the shoulder-to-elbow line the arm's
	// skin is looked for (the pose's joints lie off the arm's middle: on
	// fashn_garment.webp the upper arm's outer edge is 0.26 shoulder widths
	// from the line).
	armFillReach = 0.4
	// armFillFrom: the fill starts this share of the way from the shoulder
	// to the elbow (nearer the shoulder the old top is the torso's).
	armFillFrom = 0.25
	// armFillMinSamples is the fewest skin pixels a 1-pixel offset from the
	// line needs to count as arm there.
	armFillMinSamples = 3
	// armFillBeyond: with the forearm in line with the upper arm (within
	// armFillStraight radians) the skin is also sampled this share of the
	// upper arm's length beyond the elbow (an old sleeve reaching near the
	// elbow leaves little upper-arm skin to see).
	armFillBeyond   = 0.4
	armFillStraight = 0.5
)

// fillArms repaints, on each upper arm, the part of the old top that the
// new one leaves showing (fill, under the drawn garment layer's alpha
// layerA) with the arm's own skin instead of the inpainted base: a flared
// or longer old sleeve is neither kept nor inpainted from the background
// beside the arm (a wall-coloured gap that cut each arm from its sleeve on
// fashn_garment.webp). The arm is where the parsing sees skin along the
// same line below the old sleeve, at the same offset from the
// shoulder-to-elbow line; each pixel takes the mean colour of that skin
// (the arm's shading across it), under the garment's alpha:
// out += (skin - base) * (1 - layerA). It returns the number of pixels
// repainted.
func fillArms(out, base *image.RGBA, b *body, fill *image.Gray, layerA []float32) int {
	n := 0
	for _, arm := range [][3]perception.Point{{b.shL, b.elL, b.wrL}, {b.shR, b.elR, b.wrR}} {
		n += fillArm(out, base, b, fill, layerA, arm[0], arm[1], arm[2])
	}
	return n
}

// fillArm is fillArms for the arm from shoulder sh to elbow el.
func fillArm(out, base *image.RGBA, b *body, fill *image.Gray, layerA []float32, sh, el, wr perception.Point) int {
	dx, dy := el.X-sh.X, el.Y-sh.Y
	l := math.Hypot(dx, dy)
	reach := armFillReach * b.sw
	if l < 2 || reach < 1 {
		return 0
	}
	ux, uy := dx/l, dy/l
	upTo := 1.0 // how far along the line skin is sampled
	if fx, fy := wr.X-el.X, wr.Y-el.Y; math.Hypot(fx, fy) > 0 && math.Acos(min(max((fx*ux+fy*uy)/math.Hypot(fx, fy), -1), 1)) < armFillStraight {
		upTo += armFillBeyond
	}
	bins := int(math.Ceil(reach))
	sum := make([][3]float64, 2*bins+1)
	cnt := make([]int, 2*bins+1)
	// at maps pixel (x, y) to its offset bin across the line (-1: outside
	// the band).
	at := func(x, y int) int {
		qx, qy := float64(x)+0.5-sh.X, float64(y)+0.5-sh.Y
		t := (qx*ux + qy*uy) / l
		s := qx*-uy + qy*ux
		if t < armFillFrom || t > upTo || math.Abs(s) > reach {
			return -1
		}
		return int(math.Round(s)) + bins
	}
	far := perception.Point{X: sh.X + upTo*dx, Y: sh.Y + upTo*dy}
	x0, x1 := max(int(math.Min(sh.X, far.X)-reach), 0), min(int(math.Max(sh.X, far.X)+reach)+1, b.w)
	y0, y1 := max(int(math.Min(sh.Y, far.Y)-reach), 0), min(int(math.Max(sh.Y, far.Y)+reach)+1, b.h)
	par := b.parse
	for y := y0; y < y1; y++ {
		for x := x0; x < x1; x++ {
			i := y*b.w + x
			k := at(x, y)
			if k < 0 || fill.Pix[i] >= 128 || b.pm.Pix[i] < 128 || par.Skin.Pix[i] < 128 || par.Skin.Pix[i] < par.Clothes.Pix[i] {
				continue
			}
			for c := range 3 {
				sum[k][c] += float64(b.img.Pix[i*4+c])
			}
			cnt[k]++
		}
	}
	n := 0
	for y := y0; y < y1; y++ {
		for x := x0; x < x1; x++ {
			i := y*b.w + x
			k := at(x, y)
			if k < 0 || cnt[k] < armFillMinSamples || fill.Pix[i] < 128 || layerA[i] >= 1 {
				continue
			}
			for c := range 3 {
				skin := sum[k][c] / float64(cnt[k])
				v := float64(out.Pix[i*4+c]) + (skin-float64(base.Pix[i*4+c]))*float64(1-layerA[i])
				out.Pix[i*4+c] = uint8(min(max(v, 0), 255) + 0.5)
			}
			n++
		}
	}
	return n
}
