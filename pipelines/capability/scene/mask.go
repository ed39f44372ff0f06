package scene

import (
	"image"
	"math"

	"fashiond/pipelines/capability/mask"
	"fashiond/pipelines/capability/raster"
)

// distanceTransform returns, for every pixel, the approximate Euclidean
// distance (3-4 chamfer, in pixels) to the nearest pixel where in[i] is
// true. Pixels that are set get 0.
func distanceTransform(in []bool, w, h int) []float32 {
	const inf = float32(1e9)
	const a, b = float32(1), float32(1.4142135)
	d := make([]float32, w*h)
	for i, v := range in {
		if v {
			d[i] = 0
		} else {
			d[i] = inf
		}
	}
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			i := y*w + x
			v := d[i]
			if v == 0 {
				continue
			}
			if x > 0 {
				v = min(v, d[i-1]+a)
			}
			if y > 0 {
				v = min(v, d[i-w]+a)
				if x > 0 {
					v = min(v, d[i-w-1]+b)
				}
				if x < w-1 {
					v = min(v, d[i-w+1]+b)
				}
			}
			d[i] = v
		}
	}
	for y := h - 1; y >= 0; y-- {
		for x := w - 1; x >= 0; x-- {
			i := y*w + x
			v := d[i]
			if v == 0 {
				continue
			}
			if x < w-1 {
				v = min(v, d[i+1]+a)
			}
			if y < h-1 {
				v = min(v, d[i+w]+a)
				if x < w-1 {
					v = min(v, d[i+w+1]+b)
				}
				if x > 0 {
					v = min(v, d[i+w-1]+b)
				}
			}
			d[i] = v
		}
	}
	return d
}

// threshold returns the pixels of g above t.
func threshold(g *image.Gray, t uint8) []bool {
	w, h := g.Rect.Dx(), g.Rect.Dy()
	out := make([]bool, w*h)
	for y := 0; y < h; y++ {
		row := g.Pix[y*g.Stride : y*g.Stride+w]
		for x, v := range row {
			out[y*w+x] = v > t
		}
	}
	return out
}

// dilate grows a binary mask by radius r pixels (Euclidean-ish disc).
func dilate(in []bool, w, h int, r float32) []bool {
	d := distanceTransform(in, w, h)
	out := make([]bool, len(in))
	for i, v := range d {
		out[i] = v <= r
	}
	return out
}

// Dilate grows the pixels of m above level 0 by r pixels and returns a
// binary (0/255) mask.
func Dilate(m *image.Gray, r float64) *image.Gray {
	w, h := m.Rect.Dx(), m.Rect.Dy()
	b := dilate(threshold(m, 0), w, h, float32(r))
	return boolToGray(b, w, h)
}

func boolToGray(b []bool, w, h int) *image.Gray {
	out := image.NewGray(image.Rect(0, 0, w, h))
	for i, v := range b {
		if v {
			out.Pix[i] = 255
		}
	}
	return out
}

// keepLargeComponents removes 8-connected components smaller than frac of
// the largest one.
func keepLargeComponents(in []bool, w, h int, frac float64) []bool {
	label := make([]int32, w*h)
	var sizes []int
	stack := make([]int, 0, 1024)
	for i, v := range in {
		if !v || label[i] != 0 {
			continue
		}
		id := int32(len(sizes) + 1)
		n := 0
		stack = append(stack[:0], i)
		label[i] = id
		for len(stack) > 0 {
			p := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			n++
			px, py := p%w, p/w
			for dy := -1; dy <= 1; dy++ {
				for dx := -1; dx <= 1; dx++ {
					qx, qy := px+dx, py+dy
					if qx < 0 || qy < 0 || qx >= w || qy >= h {
						continue
					}
					q := qy*w + qx
					if in[q] && label[q] == 0 {
						label[q] = id
						stack = append(stack, q)
					}
				}
			}
		}
		sizes = append(sizes, n)
	}
	maxSize := 0
	for _, s := range sizes {
		maxSize = max(maxSize, s)
	}
	out := make([]bool, len(in))
	for i, l := range label {
		if l > 0 && float64(sizes[l-1]) >= frac*float64(maxSize) {
			out[i] = true
		}
	}
	return out
}

// fillHoles sets the background pixels not connected to the image border
// (holes enclosed by the mask, e.g. between an arm and the torso are NOT
// enclosed when they touch the border; small enclosed gaps are filled).
func fillHoles(in []bool, w, h int, maxArea int) []bool {
	out := append([]bool(nil), in...)
	seen := make([]bool, w*h)
	stack := make([]int, 0, 1024)
	region := make([]int, 0, 1024)
	for i := range in {
		if in[i] || seen[i] {
			continue
		}
		region = region[:0]
		touches := false
		stack = append(stack[:0], i)
		seen[i] = true
		for len(stack) > 0 {
			p := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			region = append(region, p)
			px, py := p%w, p/w
			if px == 0 || py == 0 || px == w-1 || py == h-1 {
				touches = true
			}
			for _, q := range [4]int{p - 1, p + 1, p - w, p + w} {
				if q < 0 || q >= w*h || (q == p-1 && px == 0) || (q == p+1 && px == w-1) {
					continue
				}
				if !in[q] && !seen[q] {
					seen[q] = true
					stack = append(stack, q)
				}
			}
		}
		if !touches && len(region) <= maxArea {
			for _, p := range region {
				out[p] = true
			}
		}
	}
	return out
}

// Feather softens a mask with a Gaussian-like blur of the given radius.
func Feather(m *image.Gray, r int) *image.Gray {
	w, h := m.Rect.Dx(), m.Rect.Dy()
	f := mask.Float(m)
	raster.BoxBlur3(f, w, h, r)
	return mask.FromFloat(f, w, h)
}

// MaskArea returns the sum of the mask's alpha divided by 255 (pixels).
func MaskArea(m *image.Gray) float64 {
	var s float64
	w, h := m.Rect.Dx(), m.Rect.Dy()
	for y := 0; y < h; y++ {
		for _, v := range m.Pix[y*m.Stride : y*m.Stride+w] {
			s += float64(v)
		}
	}
	return s / 255
}

// MaskBounds returns the bounding box of the pixels above t (empty when none).
func MaskBounds(m *image.Gray, t uint8) image.Rectangle {
	w, h := m.Rect.Dx(), m.Rect.Dy()
	x0, y0, x1, y1 := w, h, -1, -1
	for y := 0; y < h; y++ {
		row := m.Pix[y*m.Stride : y*m.Stride+w]
		for x, v := range row {
			if v > t {
				x0, x1 = min(x0, x), max(x1, x)
				y0, y1 = min(y0, y), max(y1, y)
			}
		}
	}
	if x1 < 0 {
		return image.Rectangle{}
	}
	return image.Rect(x0, y0, x1+1, y1+1)
}

// diag is the image diagonal in pixels.
func diag(w, h int) float64 { return math.Hypot(float64(w), float64(h)) }
