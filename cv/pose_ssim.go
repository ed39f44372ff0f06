package cv

import (
	"errors"
	"image"
	"math"
)

// SSIM is the mean structural similarity of two images of one size on their
// luma, with 7x7 box windows (C1=(0.01*255)^2, C2=(0.03*255)^2). Pixels where
// mask is given and zero are left out of the mean; mask may be nil.
func SSIM(a, b image.Image, mask *image.Gray) (float64, error) {
	ra, rb := toRGBA(a), toRGBA(b)
	w, h := ra.Rect.Dx(), ra.Rect.Dy()
	if rb.Rect.Dx() != w || rb.Rect.Dy() != h {
		return 0, errors.New("cv: SSIM of images of different sizes")
	}
	if mask != nil && (mask.Rect.Dx() != w || mask.Rect.Dy() != h) {
		return 0, errors.New("cv: SSIM mask size differs")
	}
	const r = 3
	if w <= 2*r || h <= 2*r {
		return 0, errors.New("cv: SSIM of an image smaller than the window")
	}
	luma := func(im *image.RGBA) []float64 {
		out := make([]float64, w*h)
		for y := 0; y < h; y++ {
			row := im.Pix[y*im.Stride:]
			for x := 0; x < w; x++ {
				out[y*w+x] = 0.299*float64(row[x*4]) + 0.587*float64(row[x*4+1]) + 0.114*float64(row[x*4+2])
			}
		}
		return out
	}
	la, lb := luma(ra), luma(rb)
	// Integral images of a, b, a^2, b^2, ab.
	W := w + 1
	ia := make([]float64, W*(h+1))
	ib := make([]float64, W*(h+1))
	iaa := make([]float64, W*(h+1))
	ibb := make([]float64, W*(h+1))
	iab := make([]float64, W*(h+1))
	for y := 0; y < h; y++ {
		var sa, sb, saa, sbb, sab float64
		for x := 0; x < w; x++ {
			va, vb := la[y*w+x], lb[y*w+x]
			sa += va
			sb += vb
			saa += va * va
			sbb += vb * vb
			sab += va * vb
			k := (y+1)*W + x + 1
			ia[k] = ia[k-W] + sa
			ib[k] = ib[k-W] + sb
			iaa[k] = iaa[k-W] + saa
			ibb[k] = ibb[k-W] + sbb
			iab[k] = iab[k-W] + sab
		}
	}
	box := func(t []float64, x0, y0, x1, y1 int) float64 {
		return t[y1*W+x1] - t[y0*W+x1] - t[y1*W+x0] + t[y0*W+x0]
	}
	const c1, c2 = (0.01 * 255) * (0.01 * 255), (0.03 * 255) * (0.03 * 255)
	var sum float64
	var n int
	for y := r; y < h-r; y++ {
		for x := r; x < w-r; x++ {
			if mask != nil && mask.Pix[y*mask.Stride+x] == 0 {
				continue
			}
			x0, y0, x1, y1 := x-r, y-r, x+r+1, y+r+1
			np := float64((2*r + 1) * (2*r + 1))
			ma := box(ia, x0, y0, x1, y1) / np
			mb := box(ib, x0, y0, x1, y1) / np
			va := box(iaa, x0, y0, x1, y1)/np - ma*ma
			vb := box(ibb, x0, y0, x1, y1)/np - mb*mb
			cov := box(iab, x0, y0, x1, y1)/np - ma*mb
			sum += ((2*ma*mb + c1) * (2*cov + c2)) / ((ma*ma + mb*mb + c1) * (va + vb + c2))
			n++
		}
	}
	if n == 0 {
		return 0, errors.New("cv: SSIM mask leaves no pixels")
	}
	return sum / float64(n), nil
}

// AlignedSSIM compares img with ref over ref's box after aligning img to
// ref: m (img to ref pixels, 2x3) is the starting similarity, typically fitted
// to landmarks; it is refined by a local search over translation (±8 px),
// rotation (±6°) and scale (±6%) that maximises the SSIM. It returns the best
// SSIM and the refined map.
func AlignedSSIM(ref, img image.Image, box image.Rectangle, m [6]float64) (float64, [6]float64, error) {
	r := toRGBA(ref)
	box = box.Intersect(r.Rect)
	if box.Dx() <= 8 || box.Dy() <= 8 {
		return 0, m, errors.New("cv: aligned SSIM box too small")
	}
	crop := image.NewRGBA(image.Rect(0, 0, box.Dx(), box.Dy()))
	for y := 0; y < box.Dy(); y++ {
		copy(crop.Pix[y*crop.Stride:(y+1)*crop.Stride], r.Pix[(box.Min.Y+y)*r.Stride+box.Min.X*4:])
	}
	src := toRGBA(img)
	sw, sh := src.Rect.Dx(), src.Rect.Dy()
	cx, cy := float64(box.Min.X+box.Max.X)/2, float64(box.Min.Y+box.Max.Y)/2
	// The map img->ref is m; sample img at m^-1(p) for p in the box.
	warp := func(m [6]float64) *image.RGBA {
		det := m[0]*m[4] - m[1]*m[3]
		out := image.NewRGBA(crop.Rect)
		if math.Abs(det) < 1e-12 {
			return out
		}
		ia, ib, id, ie := m[4]/det, -m[1]/det, -m[3]/det, m[0]/det
		for y := 0; y < box.Dy(); y++ {
			for x := 0; x < box.Dx(); x++ {
				px, py := float64(box.Min.X+x)-m[2], float64(box.Min.Y+y)-m[5]
				fx, fy := ia*px+ib*py, id*px+ie*py
				fx = math.Max(0, math.Min(fx, float64(sw-1)))
				fy = math.Max(0, math.Min(fy, float64(sh-1)))
				x0, y0 := int(fx), int(fy)
				x1, y1 := min(x0+1, sw-1), min(y0+1, sh-1)
				ax, ay := fx-float64(x0), fy-float64(y0)
				o := y*out.Stride + x*4
				for c := 0; c < 3; c++ {
					v := float64(src.Pix[y0*src.Stride+x0*4+c])*(1-ax)*(1-ay) + float64(src.Pix[y0*src.Stride+x1*4+c])*ax*(1-ay) +
						float64(src.Pix[y1*src.Stride+x0*4+c])*(1-ax)*ay + float64(src.Pix[y1*src.Stride+x1*4+c])*ax*ay
					out.Pix[o+c] = uint8(v + 0.5)
				}
				out.Pix[o+3] = 255
			}
		}
		return out
	}
	// perturb composes a similarity about the box centre after m.
	perturb := func(m [6]float64, dx, dy, th, s float64) [6]float64 {
		c, sn := s*math.Cos(th), s*math.Sin(th)
		// q = R*(p - c) + c + d, applied after m.
		p := [6]float64{c, -sn, cx - c*cx + sn*cy + dx, sn, c, cy - sn*cx - c*cy + dy}
		return [6]float64{
			p[0]*m[0] + p[1]*m[3], p[0]*m[1] + p[1]*m[4], p[0]*m[2] + p[1]*m[5] + p[2],
			p[3]*m[0] + p[4]*m[3], p[3]*m[1] + p[4]*m[4], p[3]*m[2] + p[4]*m[5] + p[5],
		}
	}
	score := func(m [6]float64) float64 {
		s, err := SSIM(crop, warp(m), nil)
		if err != nil {
			return -1
		}
		return s
	}
	best, bestS := m, score(m)
	steps := []struct{ t, a, s float64 }{{4, 3 * math.Pi / 180, 0.03}, {2, 1.5 * math.Pi / 180, 0.015}, {1, 0.75 * math.Pi / 180, 0.0075}, {0.5, 0.35 * math.Pi / 180, 0.004}}
	for _, st := range steps {
		for improved, it := true, 0; improved && it < 12; it++ {
			improved = false
			for _, d := range [][4]float64{{st.t, 0, 0, 1}, {-st.t, 0, 0, 1}, {0, st.t, 0, 1}, {0, -st.t, 0, 1},
				{0, 0, st.a, 1}, {0, 0, -st.a, 1}, {0, 0, 0, 1 + st.s}, {0, 0, 0, 1 - st.s}} {
				c := perturb(best, d[0], d[1], d[2], d[3])
				if s := score(c); s > bestS {
					best, bestS, improved = c, s, true
				}
			}
		}
	}
	return bestS, best, nil
}
