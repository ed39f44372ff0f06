package anglegeneration

import (
	"image"
	"math"

	"fashiond/perception"
	"fashiond/pipelines/capability/scene"
)

// cleanFront is the front view's clean-up: a gentle auto-levels (half
// strength, per channel 0.1..99.9 percentiles) and a light unsharp mask.
func cleanFront(img *image.RGBA) *image.RGBA {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	var hist [3][256]int
	for i := 0; i < len(img.Pix); i += 4 {
		hist[0][img.Pix[i]]++
		hist[1][img.Pix[i+1]]++
		hist[2][img.Pix[i+2]]++
	}
	var lut [3][256]uint8
	n := w * h
	for c := 0; c < 3; c++ {
		lo, hi, acc := 0, 255, 0
		for v := 0; v < 256; v++ {
			acc += hist[c][v]
			if acc > n/1000 {
				lo = v
				break
			}
		}
		acc = 0
		for v := 255; v >= 0; v-- {
			acc += hist[c][v]
			if acc > n/1000 {
				hi = v
				break
			}
		}
		if hi-lo < 32 {
			lo, hi = 0, 255
		}
		for v := 0; v < 256; v++ {
			s := (float64(v) - float64(lo)) * 255 / float64(hi-lo)
			lut[c][v] = uint8(math.Max(0, math.Min(255, 0.7*float64(v)+0.3*s)) + 0.5)
		}
	}
	blurred := scene.Feather(grayOf(img), 2) // luma blur for the unsharp mask
	out := image.NewRGBA(img.Rect)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			i := y*img.Stride + x*4
			l := 0.299*float64(img.Pix[i]) + 0.587*float64(img.Pix[i+1]) + 0.114*float64(img.Pix[i+2])
			d := 0.3 * (l - float64(blurred.Pix[y*blurred.Stride+x]))
			for c := 0; c < 3; c++ {
				out.Pix[i+c] = uint8(math.Max(0, math.Min(255, float64(lut[c][img.Pix[i+c]])+d)) + 0.5)
			}
			out.Pix[i+3] = 255
		}
	}
	return out
}

func grayOf(img *image.RGBA) *image.Gray {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	g := image.NewGray(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			i := y*img.Stride + x*4
			g.Pix[y*g.Stride+x] = uint8((299*int(img.Pix[i]) + 587*int(img.Pix[i+1]) + 114*int(img.Pix[i+2])) / 1000)
		}
	}
	return g
}

// mirror flips an image left to right.
func mirror(img *image.RGBA) *image.RGBA {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	out := image.NewRGBA(img.Rect)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			copy(out.Pix[y*out.Stride+(w-1-x)*4:][:4], img.Pix[y*img.Stride+x*4:][:4])
		}
	}
	return out
}

func mirrorGray(g *image.Gray) *image.Gray {
	w, h := g.Rect.Dx(), g.Rect.Dy()
	out := image.NewGray(g.Rect)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			out.Pix[y*out.Stride+w-1-x] = g.Pix[y*g.Stride+x]
		}
	}
	return out
}

// headBox is the face region (from the face detector, else from the pose's
// head keypoints), expanded to cover the ears and hairline.
func headBox(p *perception.Pose, faces []perception.Face, w, h int) (image.Rectangle, bool) {
	var x0, y0, x1, y1 float64
	switch {
	case len(faces) > 0 && faces[0].Score > 0.5:
		f := faces[0].Box
		x0, y0, x1, y1 = f[0], f[1], f[2], f[3]
	case p != nil && p.Keypoints[perception.KpLeftEar].Visibility > 0.5 && p.Keypoints[perception.KpRightEar].Visibility > 0.5:
		l, r, n := p.Keypoints[perception.KpLeftEar], p.Keypoints[perception.KpRightEar], p.Keypoints[perception.KpNose]
		x0, x1 = math.Min(l.X, r.X), math.Max(l.X, r.X)
		ew := x1 - x0
		y0, y1 = n.Y-ew*0.9, n.Y+ew*0.6
	default:
		return image.Rectangle{}, false
	}
	bw, bh := x1-x0, y1-y0
	r := image.Rect(int(x0-0.12*bw), int(y0-0.1*bh), int(x1+0.12*bw), int(y1+0.05*bh)).Intersect(image.Rect(0, 0, w, h))
	return r, r.Dx() > 4 && r.Dy() > 4
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}
