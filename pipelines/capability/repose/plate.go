package repose

import (
	"image"
	"math"

	"fashiond/pipelines/capability/raster"
	"fashiond/pipelines/capability/scene"
)

// The background plate's fill (scene: inpainted at a reduced size) takes
// its colour from up to a few dozen pixels round the hole, and a light
// object near the hole's edge tints it: on model-create's seated preset
// (fashn_model) the light pillar beside the hat's brim made a tan patch
// in the fill, which "looking left" uncovers as a lighter patch with a
// hard edge on the dark background behind the hat. matchPlate offsets the
// fill's colour to the photo just outside the hole, feathered inward.

// Plate matching tuning, in shares of the image's longer side (at least
// a pixel or two).
const (
	// plateBandFrom, plateBandTo: the band of the hole, measured from its
	// edge, where the fill is compared with the photo outside it (past
	// the fill's own blend into the photo at the edge).
	plateBandFrom = 0.002
	plateBandTo   = 0.004
	// plateOutsideR is the radius over which the photo's colour outside
	// the hole is averaged.
	plateOutsideR = 0.003
	// plateSpreadR is the radius over which the band's offsets spread
	// into the hole.
	plateSpreadR = 0.05
	// plateFillBlend is the width, in pixels, over which scene blends
	// its fill into the photo at the hole's edge (its fillBlendPx).
	plateFillBlend = 3
	// plateMinSupport: where the band's blurred weight is under this, the
	// offset fades out (deep inside a large hole the fill is left as is).
	plateMinSupport = 0.15
)

// matchPlate returns plate with its hole (hole: 255 where the plate is
// filled; img elsewhere) offset in colour so that the fill meets the
// photo (img) outside it: each fill pixel in the hole's band gets the
// difference between the photo's mean colour outside the hole nearby and
// the fill, and these offsets are spread over the hole, fading inward.
func matchPlate(img, plate *image.RGBA, hole *image.Gray) *image.RGBA {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	out := raster.CopyRGBA(plate)
	if hole == nil || hole.Rect.Dx() != w || hole.Rect.Dy() != h || !any255(hole.Pix) {
		return out
	}
	long := float64(max(w, h))
	px := func(f float64, least int) int { return max(least, int(math.Round(f*long))) }
	outside := make([]float32, w*h)
	for y := range h {
		for x := range w {
			if hole.Pix[y*hole.Stride+x] == 0 {
				outside[y*w+x] = 1
			}
		}
	}
	// The band: hole pixels between plateBandFrom and plateBandTo from
	// the outside; the photo's colour outside the hole near each pixel
	// (normalised convolution over plateOutsideR).
	outMask := image.NewGray(image.Rect(0, 0, w, h))
	for i, v := range outside {
		outMask.Pix[i] = uint8(v * 255)
	}
	from, to := scene.Dilate(outMask, float64(px(plateBandFrom, 2))), scene.Dilate(outMask, float64(px(plateBandTo, 5)))
	band := make([]float32, w*h)
	for i := range band {
		if from.Pix[i] == 0 && to.Pix[i] != 0 {
			band[i] = 1
		}
	}
	wOut := append([]float32(nil), outside...)
	raster.BoxBlur3(wOut, w, h, px(plateOutsideR, 3))
	// The fill's share at each hole pixel: scene blends it into the photo
	// over the hole's outer plateFillBlend pixels (a smoothstep).
	fill := make([]float32, w*h)
	for i := range fill {
		fill[i] = 1
	}
	for k := plateFillBlend - 1; k >= 1; k-- {
		t := float32(k) / plateFillBlend
		m := scene.Dilate(outMask, float64(k))
		for i, v := range m.Pix {
			if v != 0 {
				fill[i] = t * t * (3 - 2*t)
			}
		}
	}
	off := make([][]float32, 3)
	for c := range off {
		col := make([]float32, w*h)
		for i := range col {
			col[i] = float32(img.Pix[i*4+c]) * outside[i]
		}
		raster.BoxBlur3(col, w, h, px(plateOutsideR, 3))
		off[c] = make([]float32, w*h)
		for i := range col {
			if band[i] != 0 && wOut[i] > 1e-3 {
				off[c][i] = col[i]/wOut[i] - float32(plate.Pix[i*4+c])
			}
		}
	}
	d := spreadOffsets(off, band, w, h, []int{px(plateSpreadR/8, 2), px(plateSpreadR/4, 4), px(plateSpreadR/2, 6), px(plateSpreadR, 8)})
	for i := range band {
		if outside[i] != 0 {
			continue
		}
		for c := range 3 {
			v := float32(out.Pix[i*4+c]) + d[c][i]*fill[i]
			out.Pix[i*4+c] = uint8(min(max(v, 0), 255) + 0.5)
		}
	}
	return out
}

// spreadOffsets interpolates the offsets off (per channel, set where
// band is 1) over the image, nearest first: each radius, largest first,
// takes the band's mean offset within it (normalised convolution) where
// it sees enough of the band (its weight over plateMinSupport), over the
// larger radii's; past the largest radius's reach the offset fades to 0.
func spreadOffsets(off [][]float32, band []float32, w, h int, radii []int) [][]float32 {
	out := make([][]float32, len(off))
	for c := range out {
		out[c] = make([]float32, w*h)
	}
	for k := len(radii) - 1; k >= 0; k-- {
		sup := append([]float32(nil), band...)
		raster.BoxBlur3(sup, w, h, radii[k])
		for c := range off {
			m := append([]float32(nil), off[c]...)
			raster.BoxBlur3(m, w, h, radii[k])
			for i, s := range sup {
				a := min(s/plateMinSupport, 1)
				out[c][i] = out[c][i]*(1-a) + m[i]/max(s, 1e-6)*a
			}
		}
	}
	return out
}
