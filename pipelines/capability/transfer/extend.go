package transfer

import (
	"image"
	"math"

	"fashiond/pipelines/capability/mask"
)

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
