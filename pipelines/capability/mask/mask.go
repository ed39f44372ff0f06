// Package mask holds binary and soft mask operations in pure Go used by the
// garment, try-on and scene pipelines: exact Euclidean distance transforms, disc
// morphology built on them, connected components, hole filling and
// separable blurs. Masks are *image.Gray with origin (0,0); a pixel is "on"
// when its value is >= 128 unless a threshold says otherwise.
package mask

import (
	"fashiond/pipelines/capability/raster"
	"image"
	"math"
)

const inf = 1e20

// edt1 is the 1-D squared distance transform of Felzenszwalb and
// Huttenlocher over f (0 for sites, inf elsewhere), written into d.
func edt1(f, d []float64, v []int, z []float64) {
	n := len(f)
	k := 0
	v[0] = 0
	z[0] = -inf
	z[1] = inf
	for q := 1; q < n; q++ {
		if f[q] >= inf {
			continue
		}
		if f[v[k]] >= inf {
			v[k] = q
			continue
		}
		s := ((f[q] + float64(q*q)) - (f[v[k]] + float64(v[k]*v[k]))) / float64(2*q-2*v[k])
		for s <= z[k] {
			k--
			if k < 0 {
				break
			}
			s = ((f[q] + float64(q*q)) - (f[v[k]] + float64(v[k]*v[k]))) / float64(2*q-2*v[k])
		}
		k++
		v[k] = q
		z[k] = s
		z[k+1] = inf
	}
	k = 0
	for q := 0; q < n; q++ {
		for z[k+1] < float64(q) {
			k++
		}
		dq := float64(q - v[k])
		if f[v[k]] >= inf {
			d[q] = inf
		} else {
			d[q] = dq*dq + f[v[k]]
		}
	}
}

// SqDist returns, for every pixel, the squared Euclidean distance to the
// nearest pixel where site(x, y) is true (inf when there is none).
func SqDist(w, h int, site func(i int) bool) []float64 {
	g := make([]float64, w*h)
	for i := range g {
		if site(i) {
			g[i] = 0
		} else {
			g[i] = inf
		}
	}
	n := max(w, h)
	f := make([]float64, n)
	d := make([]float64, n)
	v := make([]int, n)
	z := make([]float64, n+1)
	for x := 0; x < w; x++ {
		for y := 0; y < h; y++ {
			f[y] = g[y*w+x]
		}
		edt1(f[:h], d[:h], v, z)
		for y := 0; y < h; y++ {
			g[y*w+x] = d[y]
		}
	}
	for y := 0; y < h; y++ {
		copy(f[:w], g[y*w:(y+1)*w])
		edt1(f[:w], d[:w], v, z)
		copy(g[y*w:(y+1)*w], d[:w])
	}
	return g
}

// Binary returns a copy of m with values >= thr set to 255 and others 0.
func Binary(m *image.Gray, thr uint8) *image.Gray {
	out := image.NewGray(m.Rect)
	for i, v := range m.Pix {
		if v >= thr {
			out.Pix[i] = 255
		}
	}
	return out
}

func on(m *image.Gray) func(int) bool  { return func(i int) bool { return m.Pix[i] >= 128 } }
func off(m *image.Gray) func(int) bool { return func(i int) bool { return m.Pix[i] < 128 } }

// Dilate grows the on-region of m by a disc of radius r pixels.
func Dilate(m *image.Gray, r float64) *image.Gray {
	w, h := m.Rect.Dx(), m.Rect.Dy()
	d := SqDist(w, h, on(m))
	out := image.NewGray(m.Rect)
	r2 := r * r
	for i, v := range d {
		if v <= r2 {
			out.Pix[i] = 255
		}
	}
	return out
}

// Erode shrinks the on-region of m by a disc of radius r pixels (the image
// border does not erode).
func Erode(m *image.Gray, r float64) *image.Gray {
	w, h := m.Rect.Dx(), m.Rect.Dy()
	d := SqDist(w, h, off(m))
	out := image.NewGray(m.Rect)
	r2 := r * r
	for i, v := range d {
		if v > r2 {
			out.Pix[i] = 255
		}
	}
	return out
}

// Close is Dilate then Erode: it bridges gaps narrower than 2r.
func Close(m *image.Gray, r float64) *image.Gray { return Erode(Dilate(m, r), r) }

// Open is Erode then Dilate: it removes parts thinner than 2r.
func Open(m *image.Gray, r float64) *image.Gray { return Dilate(Erode(m, r), r) }

// Components labels 4-connected on-regions; labels start at 1, 0 is off.
// It returns the labels and each label's pixel count (index 0 unused).
func Components(m *image.Gray) ([]int32, []int) {
	w, h := m.Rect.Dx(), m.Rect.Dy()
	lab := make([]int32, w*h)
	sizes := []int{0}
	stack := make([]int, 0, 1024)
	for i := range lab {
		if lab[i] != 0 || m.Pix[i] < 128 {
			continue
		}
		id := int32(len(sizes))
		n := 0
		lab[i] = id
		stack = append(stack[:0], i)
		for len(stack) > 0 {
			p := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			n++
			x, y := p%w, p/w
			try := func(q int) {
				if lab[q] == 0 && m.Pix[q] >= 128 {
					lab[q] = id
					stack = append(stack, q)
				}
			}
			if x > 0 {
				try(p - 1)
			}
			if x < w-1 {
				try(p + 1)
			}
			if y > 0 {
				try(p - w)
			}
			if y < h-1 {
				try(p + w)
			}
		}
		sizes = append(sizes, n)
	}
	return lab, sizes
}

// Largest keeps only the largest 4-connected on-region of m.
func Largest(m *image.Gray) *image.Gray {
	lab, sizes := Components(m)
	best := 0
	for i := 1; i < len(sizes); i++ {
		if best == 0 || sizes[i] > sizes[best] {
			best = i
		}
	}
	out := image.NewGray(m.Rect)
	if best == 0 {
		return out
	}
	for i, l := range lab {
		if int(l) == best {
			out.Pix[i] = 255
		}
	}
	return out
}

// RemoveSmall drops on-regions smaller than minArea pixels.
func RemoveSmall(m *image.Gray, minArea int) *image.Gray {
	lab, sizes := Components(m)
	out := image.NewGray(m.Rect)
	for i, l := range lab {
		if l != 0 && sizes[l] >= minArea {
			out.Pix[i] = 255
		}
	}
	return out
}

// FillHoles turns on every off-region that does not touch the image border.
func FillHoles(m *image.Gray) *image.Gray {
	w, h := m.Rect.Dx(), m.Rect.Dy()
	inv := image.NewGray(m.Rect)
	for i, v := range m.Pix {
		if v < 128 {
			inv.Pix[i] = 255
		}
	}
	lab, _ := Components(inv)
	border := map[int32]bool{}
	for x := 0; x < w; x++ {
		border[lab[x]] = true
		border[lab[(h-1)*w+x]] = true
	}
	for y := 0; y < h; y++ {
		border[lab[y*w]] = true
		border[lab[y*w+w-1]] = true
	}
	out := image.NewGray(m.Rect)
	for i, l := range lab {
		if l == 0 || !border[l] {
			out.Pix[i] = 255
		}
	}
	return out
}

// Count returns the number of on pixels.
func Count(m *image.Gray) int {
	n := 0
	for _, v := range m.Pix {
		if v >= 128 {
			n++
		}
	}
	return n
}

// BBox returns the bounding box of the on pixels (empty when none).
func BBox(m *image.Gray) image.Rectangle {
	w, h := m.Rect.Dx(), m.Rect.Dy()
	x0, y0, x1, y1 := w, h, -1, -1
	for y := 0; y < h; y++ {
		row := m.Pix[y*m.Stride : y*m.Stride+w]
		for x, v := range row {
			if v >= 128 {
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

// BoxBlur blurs a float field of w x h with one box of radius r
// (separable, clamped at the borders: raster.BoxBlurH and BoxBlurV) into a
// new slice.
func BoxBlur(src []float32, w, h, r int) []float32 {
	out := append([]float32(nil), src...)
	if r <= 0 {
		return out
	}
	in := &raster.Plane{W: w, H: h, P: out}
	tmp := raster.NewPlane(w, h)
	raster.BoxBlurH(tmp, in, r)
	raster.BoxBlurV(in, tmp, r)
	return out
}

// minGaussSigma: a blur narrower than this leaves the field as it is.
const minGaussSigma = 0.3

// GaussBlur approximates a Gaussian of standard deviation sigma with three
// box blurs (raster.BoxBlur3) into a new slice.
func GaussBlur(src []float32, w, h int, sigma float64) []float32 {
	out := append([]float32(nil), src...)
	if sigma <= minGaussSigma {
		return out
	}
	// Box radius giving the same variance over three passes.
	r := int(math.Round((math.Sqrt(4*sigma*sigma+1) - 1) / 2))
	raster.BoxBlur3(out, w, h, max(r, 1))
	return out
}

// Float converts a mask to 0..1 floats.
func Float(m *image.Gray) []float32 {
	w, h := m.Rect.Dx(), m.Rect.Dy()
	out := make([]float32, w*h)
	for y := 0; y < h; y++ {
		row := m.Pix[y*m.Stride : y*m.Stride+w]
		for x, v := range row {
			out[y*w+x] = float32(v) / 255
		}
	}
	return out
}

// FromFloat converts 0..1 floats to a mask of w x h.
func FromFloat(f []float32, w, h int) *image.Gray {
	out := image.NewGray(image.Rect(0, 0, w, h))
	for i, v := range f {
		out.Pix[i] = uint8(min(max(v*255+0.5, 0), 255))
	}
	return out
}

// Feather softens a binary mask's edge with a Gaussian of sigma pixels.
func Feather(m *image.Gray, sigma float64) *image.Gray {
	w, h := m.Rect.Dx(), m.Rect.Dy()
	return FromFloat(GaussBlur(Float(m), w, h, sigma), w, h)
}
