package diffusion

import (
	"image"
	"image/color"
	"image/draw"
	"math"

	"github.com/disintegration/imaging"
)

// featherPx is how far inside the mask the inpainting composite ramps from
// the input's pixels to the generated ones; outside the mask the result is
// the input's own pixels.
const featherPx = 3

// fitted returns img at exactly w×h (resized with Lanczos when it differs).
func fitted(img image.Image, w, h int) *image.NRGBA {
	b := img.Bounds()
	if b.Dx() == w && b.Dy() == h {
		out := image.NewNRGBA(image.Rect(0, 0, w, h))
		draw.Draw(out, out.Bounds(), img, b.Min, draw.Src)
		return out
	}
	return imaging.Resize(img, w, h, imaging.Lanczos)
}

// imageToPlanes converts to [3][H][W] in [-1, 1] (x/127.5 − 1).
func imageToPlanes(img image.Image, w, h int) []float32 {
	src := fitted(img, w, h)
	out := make([]float32, 3*w*h)
	for y := range h {
		for x := range w {
			o := src.PixOffset(x, y)
			for c := range 3 {
				out[c*w*h+y*w+x] = float32(src.Pix[o+c])/127.5 - 1
			}
		}
	}
	return out
}

// maskPlane is the mask at w×h, binarised at half grey (1 = repaint).
func maskPlane(img image.Image, w, h int) []float32 {
	src := fitted(img, w, h)
	out := make([]float32, w*h)
	for y := range h {
		for x := range w {
			g := color.GrayModel.Convert(src.NRGBAAt(x, y)).(color.Gray)
			if g.Y >= 128 {
				out[y*w+x] = 1
			}
		}
	}
	return out
}

// downsampleNearest picks pixel (floor(i·H/h), floor(j·W/w)) as PyTorch's
// nearest interpolation does.
func downsampleNearest(p []float32, W, H, w, h int) []float32 {
	out := make([]float32, w*h)
	for i := range h {
		for j := range w {
			out[i*w+j] = p[(i*H/h)*W+j*W/w]
		}
	}
	return out
}

// toUnit maps planes in [-1, 1] to [0, 1].
func toUnit(p []float32) []float32 {
	out := make([]float32, len(p))
	for i, v := range p {
		out[i] = v/2 + 0.5
	}
	return out
}

// composite blends the generated planes into the original inside the mask,
// ramping over featherPx pixels from the mask's edge inward.
func composite(gen, orig, mask []float32, w, h int) []float32 {
	alpha := insideDistance(mask, w, h)
	out := make([]float32, len(gen))
	for c := range 3 {
		for p, d := range alpha {
			a := float32(math.Min(1, d/featherPx))
			i := c*w*h + p
			out[i] = a*gen[i] + (1-a)*orig[i]
		}
	}
	return out
}

// insideDistance is, per pixel, the chamfer distance to the nearest pixel
// outside the mask (0 outside; the image border counts as inside).
func insideDistance(mask []float32, w, h int) []float64 {
	const diag = math.Sqrt2
	inf := float64(w + h)
	d := make([]float64, w*h)
	for p, m := range mask {
		if m >= 0.5 {
			d[p] = inf
		}
	}
	relax := func(x, y, dx, dy int, cost float64) {
		nx, ny := x+dx, y+dy
		if nx < 0 || ny < 0 || nx >= w || ny >= h {
			return
		}
		if v := d[ny*w+nx] + cost; v < d[y*w+x] {
			d[y*w+x] = v
		}
	}
	for y := range h {
		for x := range w {
			relax(x, y, -1, 0, 1)
			relax(x, y, 0, -1, 1)
			relax(x, y, -1, -1, diag)
			relax(x, y, 1, -1, diag)
		}
	}
	for y := h - 1; y >= 0; y-- {
		for x := w - 1; x >= 0; x-- {
			relax(x, y, 1, 0, 1)
			relax(x, y, 0, 1, 1)
			relax(x, y, 1, 1, diag)
			relax(x, y, -1, 1, diag)
		}
	}
	return d
}

// planesToImage quantises [3][H][W] in [0, 1] to an image.
func planesToImage(p []float32, w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			o := img.PixOffset(x, y)
			for c := range 3 {
				v := math.Round(float64(p[c*w*h+y*w+x]) * 255)
				img.Pix[o+c] = uint8(math.Max(0, math.Min(255, v)))
			}
			img.Pix[o+3] = 255
		}
	}
	return img
}
