package scene

import (
	"image"

	"fashiond/pipelines/capability/raster"
)

// pushPull fills the pixels where hole is true with a smooth membrane from
// the known pixels: a weighted image pyramid is built down to 1x1 (push)
// and coarser levels fill in what finer levels lack (pull). The result has
// no streaks (unlike a diffusion along the boundary normal) and reads as an
// out-of-focus continuation of the surroundings.
func pushPull(img *image.RGBA, hole []bool) *image.RGBA {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	type level struct {
		w, h int
		c    []float32 // premultiplied r,g,b
		wt   []float32
	}
	l0 := level{w: w, h: h, c: make([]float32, w*h*3), wt: make([]float32, w*h)}
	for i := 0; i < w*h; i++ {
		if hole[i] {
			continue
		}
		l0.wt[i] = 1
		for k := 0; k < 3; k++ {
			l0.c[i*3+k] = float32(img.Pix[i*4+k])
		}
	}
	levels := []level{l0}
	for {
		p := levels[len(levels)-1]
		if p.w == 1 && p.h == 1 {
			break
		}
		nw, nh := max(1, (p.w+1)/2), max(1, (p.h+1)/2)
		n := level{w: nw, h: nh, c: make([]float32, nw*nh*3), wt: make([]float32, nw*nh)}
		for y := 0; y < p.h; y++ {
			for x := 0; x < p.w; x++ {
				i, j := y*p.w+x, (y/2)*nw+x/2
				n.wt[j] += p.wt[i]
				for k := 0; k < 3; k++ {
					n.c[j*3+k] += p.c[i*3+k]
				}
			}
		}
		// normalise to weights in 0..1 (a full 2x2 block gives 1)
		for j := range n.wt {
			if n.wt[j] > 0 {
				s := min(n.wt[j], 1) / n.wt[j]
				n.wt[j] *= s
				for k := 0; k < 3; k++ {
					n.c[j*3+k] *= s
				}
			}
		}
		levels = append(levels, n)
	}
	// pull: fill each level's missing weight from the (bilinear) coarser one
	for li := len(levels) - 2; li >= 0; li-- {
		f, c := levels[li], levels[li+1]
		for y := 0; y < f.h; y++ {
			cy := (float32(y)+0.5)/2 - 0.5
			for x := 0; x < f.w; x++ {
				i := y*f.w + x
				if f.wt[i] >= 1 {
					continue
				}
				cx := (float32(x)+0.5)/2 - 0.5
				wt := raster.SampleFloat(c.wt, c.w, c.h, cx, cy)
				if wt <= 0 {
					continue
				}
				a := 1 - f.wt[i]
				for k := 0; k < 3; k++ {
					f.c[i*3+k] += a * sampleCh(c.c, c.w, c.h, k, cx, cy) / wt
				}
				f.wt[i] += a
			}
		}
	}
	out := image.NewRGBA(img.Rect)
	for i := 0; i < w*h; i++ {
		wt := levels[0].wt[i]
		for k := 0; k < 3; k++ {
			v := float32(0)
			if wt > 0 {
				v = levels[0].c[i*3+k] / wt
			}
			out.Pix[i*4+k] = uint8(min(max(v, 0), 255) + 0.5)
		}
		out.Pix[i*4+3] = 255
	}
	return out
}

// sampleCh samples channel k of an interleaved 3-channel float plane.
func sampleCh(p []float32, w, h, k int, fx, fy float32) float32 {
	fx = min(max(fx, 0), float32(w-1))
	fy = min(max(fy, 0), float32(h-1))
	x0, y0 := int(fx), int(fy)
	x1, y1 := min(x0+1, w-1), min(y0+1, h-1)
	ax, ay := fx-float32(x0), fy-float32(y0)
	v00, v01 := p[(y0*w+x0)*3+k], p[(y0*w+x1)*3+k]
	v10, v11 := p[(y1*w+x0)*3+k], p[(y1*w+x1)*3+k]
	return (v00*(1-ax)+v01*ax)*(1-ay) + (v10*(1-ax)+v11*ax)*ay
}
