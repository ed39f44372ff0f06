package style

import (
	"image"
	"math"

	"fashiond/pipelines/capability/raster"
)

// apply runs the look's stages in order on a copy of src:
//
//	linear light: white balance, exposure, flash gain
//	backdrop (with mask)
//	local tone (HDR compression, clarity)
//	tone curves, saturation/vibrance, split toning
//	bloom / halation
//	chromatic aberration
//	unsharp mask
//	grain, sensor noise, vignette, quantisation
//
// It also returns the backdrop matte (1 = person kept, 0 = backdrop), nil
// when no backdrop was painted.
func (l *look) apply(src *image.RGBA, o Options) (*image.RGBA, []float32) {
	initLUTs()
	w, h := src.Rect.Dx(), src.Rect.Dy()
	diag := math.Hypot(float64(w), float64(h))

	var mask *raster.Plane
	if o.PersonMask != nil && (l.backdrop != nil || l.flash > 0) {
		mask = raster.MaskPlane(o.PersonMask, w, h)
		if mask != nil {
			raster.Blur(mask, raster.NewPlane(w, h), 0.6+diag*0.0008)
		}
	}

	R, G, B := raster.NewPlane(w, h), raster.NewPlane(w, h), raster.NewPlane(w, h)
	gain := l.gains(src)
	var fl *raster.Plane
	if l.flash > 0 {
		fl = flashGain(w, h, mask, l.flash, diag)
	}
	raster.ParallelRows(h, func(y0, y1 int) {
		for y := y0; y < y1; y++ {
			row := src.Pix[y*src.Stride:]
			for x := 0; x < w; x++ {
				i := y*w + x
				gr, gg, gb := gain[0], gain[1], gain[2]
				if fl != nil {
					f := fl.P[i]
					gr, gg, gb = gr*f, gg*f, gb*f
				}
				R.P[i] = encode(toLinear8[row[x*4]] * gr)
				G.P[i] = encode(toLinear8[row[x*4+1]] * gg)
				B.P[i] = encode(toLinear8[row[x*4+2]] * gb)
			}
		}
	})

	var matte []float32
	if l.backdrop != nil && mask != nil && !o.NoBackdrop {
		m := refineMatte(R, G, B, mask, diag)
		clearTransparent(m, src)
		l.backdrop.paint(R, G, B, m, diag)
		matte = m.P
	}
	if l.hdr > 0 || l.clarity > 0 {
		l.localTone(R, G, B, diag)
	}
	l.grade(R, G, B)
	if l.bloom > 0 {
		l.glow(R, G, B, diag)
	}
	if l.ca > 0 {
		R, B = aberrate(R, B, float32(l.ca*float32(diag)))
	}
	if l.sharpen > 0 {
		sharpen(R, G, B, l.sharpen, l.sharpenSigma)
	}
	return l.finish(R, G, B, o.Seed), matte
}

// gains returns the linear-light per-channel gains from grey-world white
// balance, temperature, tint and exposure. Luminance is kept except for the
// exposure term.
func (l *look) gains(src *image.RGBA) [3]float32 {
	g := [3]float64{1, 1, 1}
	if l.autoWB > 0 {
		var s [3]float64
		n := 0
		w, h := src.Rect.Dx(), src.Rect.Dy()
		for y := 0; y < h; y += 3 {
			row := src.Pix[y*src.Stride:]
			for x := 0; x < w; x += 3 {
				r := float64(toLinear8[row[x*4]])
				gg := float64(toLinear8[row[x*4+1]])
				b := float64(toLinear8[row[x*4+2]])
				lum := 0.2126*r + 0.7152*gg + 0.0722*b
				mx, mn := max(r, gg, b), min(r, gg, b)
				if lum < 0.02 || mx > 0.95 || (mx-mn) > 0.35*mx {
					continue // only near-neutral, unclipped pixels vote (grey world on greys)
				}
				s[0] += r
				s[1] += gg
				s[2] += b
				n++
			}
		}
		if n > 0 && s[0] > 0 && s[1] > 0 && s[2] > 0 {
			m := (s[0] + s[1] + s[2]) / 3
			for c := range g {
				k := 1 + (m/s[c]-1)*float64(l.autoWB)
				g[c] = min(max(k, 0.88), 1.14)
			}
		}
	}
	g[0] *= 1 + 0.25*float64(l.temp)
	g[2] *= 1 - 0.25*float64(l.temp)
	g[1] *= 1 - 0.15*float64(l.tint)
	norm := 0.2126*g[0] + 0.7152*g[1] + 0.0722*g[2]
	e := math.Exp2(float64(l.exposure)) / norm
	return [3]float32{float32(g[0] * e), float32(g[1] * e), float32(g[2] * e)}
}

// flashGain is a linear-light gain map for a hard on-camera flash: the
// subject (mask, or a centred ellipse without one) is lit strongly, the
// background gets inverse-square-like falloff from the subject's centre, and
// with a mask the person casts a hard shadow offset down and right (flash
// above and left of the lens axis, as on a phone or a hot-shoe).
func flashGain(w, h int, mask *raster.Plane, strength float32, diag float64) *raster.Plane {
	out := raster.NewPlane(w, h)
	cx, cy := float32(w)*0.5, float32(h)*0.42
	var shadow *raster.Plane
	if mask != nil {
		var sx, sy, sm float64
		for y := 0; y < h; y += 2 {
			for x := 0; x < w; x += 2 {
				m := float64(mask.P[y*w+x])
				sx += m * float64(x)
				sy += m * float64(y)
				sm += m
			}
		}
		if sm > 0 {
			cx, cy = float32(sx/sm), float32(sy/sm)
		}
		// Shifted silhouette, slightly softened: the hard flash shadow.
		dx, dy := int(diag*0.014), int(diag*0.02)
		shadow = raster.NewPlane(w, h)
		raster.ParallelRows(h, func(y0, y1 int) {
			for y := max(y0, dy); y < y1; y++ {
				if dx < w {
					copy(shadow.P[y*w+dx:(y+1)*w], mask.P[(y-dy)*w:(y-dy+1)*w-dx])
				}
			}
		})

		raster.Blur(shadow, raster.NewPlane(w, h), diag*0.004)
	}
	half := float32(diag * 0.5)
	const ambient = 0.22
	raster.ParallelRows(h, func(y0, y1 int) {
		for y := y0; y < y1; y++ {
			for x := 0; x < w; x++ {
				i := y*w + x
				dx, dy := (float32(x)-cx)/half, (float32(y)-cy)/half
				rn2 := dx*dx + dy*dy
				radial := 1 / (1 + 2.5*rn2)
				var m, sh float32
				if mask != nil {
					m = mask.P[i]
					sh = shadow.P[i]
				} else {
					ex := (float32(x) - cx) / (0.28 * float32(w))
					ey := (float32(y) - cy) / (0.48 * float32(h))
					m = raster.Smoothstep(1.3, 0.7, ex*ex+ey*ey)
				}
				subject := 1.25 * (0.75 + 0.25*radial)
				bg := 0.45 * radial * radial * (1 - 0.85*sh)
				out.P[i] = ambient + strength*(m*subject+(1-m)*bg) + (1-strength)*(1-ambient)
			}
		}
	})

	return out
}

// paint replaces the background (mask 0) with a seamless paper sweep: a
// wall lit behind the subject that falls off toward the top corners, a floor
// that begins near the person's feet (or below the frame when the feet are
// cut off), and a soft occlusion shadow around the person that is strongest
// on the floor.
func (bd *backdrop) paint(R, G, B, mask *raster.Plane, diag float64) {
	w, h := R.W, R.H
	// Person extent from the mask rows.
	top, bottom := -1, -1
	var sx, sm float64
	for y := 0; y < h; y++ {
		var mass float64
		row := mask.P[y*w : (y+1)*w]
		for x, m := range row {
			mass += float64(m)
			sx += float64(m) * float64(x)
		}
		sm += mass
		if mass > 0.01*float64(w) {
			if top < 0 {
				top = y
			}
			bottom = y
		}
	}
	if top < 0 { // no person found: backdrop everywhere, lit from the centre
		top, bottom = h/4, h*3/4
	}
	cx := float32(w) / 2
	if sm > 0 {
		cx = float32(sx / sm)
	}
	fh := float32(h)
	yf := float32(bottom) - 0.01*fh // floor line at the feet
	if float32(bottom) > 0.97*fh {
		yf = 1.08 * fh // feet cut off: the sweep lies below the frame
	}
	lx, ly := cx, float32(top)+0.35*float32(bottom-top)
	occ := raster.WideBlur(mask, diag*0.03)
	raster.ParallelRows(h, func(y0, y1 int) {
		for y := y0; y < y1; y++ {
			fy := float32(y)
			t := raster.Smoothstep(yf-0.18*fh, yf+0.02*fh, fy)
			for x := 0; x < w; x++ {
				i := y*w + x
				m := mask.P[i]
				if m >= 0.999 {
					continue
				}
				fx := float32(x)
				dx, dy := (fx-lx)/(0.9*float32(w)), (fy-ly)/(0.9*fh)
				wallF := max(1.04-bd.falloff*(dx*dx+dy*dy)*2, 0.55)
				sideF := 1 - 0.5*bd.falloff*((fx-cx)/float32(w))*((fx-cx)/float32(w))

				shade := 1 - bd.shadow*occ.P[i]*t*t
				r, g, b := R.P[i], G.P[i], B.P[i]
				lo := luma(r, g, b)
				orig := 0.55 + 0.45*lo
				var c [3]float32
				for k := range 3 {
					paper := bd.wall[k]*wallF*(1-t) + bd.floor[k]*sideF*t
					c[k] = (paper*(1-bd.keep) + orig*paper*bd.keep/0.8) * shade
				}
				R.P[i] = m*r + (1-m)*c[0]
				G.P[i] = m*g + (1-m)*c[1]
				B.P[i] = m*b + (1-m)*c[2]
			}
		}
	})

}

// localTone applies smartphone-style local tone mapping (compress the
// low-frequency base toward mid-grey, keep the detail) and/or clarity
// (boost local contrast in the mid-tones).
func (l *look) localTone(R, G, B *raster.Plane, diag float64) {
	w, h := R.W, R.H
	L := lumaPlane(R, G, B)
	sigma := diag * 0.015
	if l.hdr > 0 {
		sigma = diag * 0.03
	}
	base := raster.WideBlur(L, sigma)
	hdr, cl := l.hdr, l.clarity
	raster.ParallelRows(h, func(y0, y1 int) {
		for i := y0 * w; i < y1*w; i++ {
			lv, bv := L.P[i], base.P[i]
			detail := lv - bv
			var nl float32
			if hdr > 0 {
				nb := 0.5 + (bv-0.5)*(1-0.5*hdr)
				nl = nb + detail*(1+cl)
			} else {
				mid := 1 - (2*lv-1)*(2*lv-1)
				nl = lv + cl*detail*mid*1.5
			}
			d := nl - lv
			R.P[i] += d
			G.P[i] += d
			B.P[i] += d
		}
	})

}

// grade applies the tone curves, saturation/vibrance and split toning.
func (l *look) grade(R, G, B *raster.Plane) {
	master := newCurve(l.curve...)
	var ch [3]*curve
	for c := range ch {
		if l.chanCurve[c] != nil {
			ch[c] = newCurve(l.chanCurve[c]...)
		}
	}
	sat := l.sat
	if sat == 0 {
		sat = 1
	}
	vib := l.vib
	ts, th := toneTint(float64(l.shadowHue)), toneTint(float64(l.highHue))
	sa, ha := l.shadowAmt, l.highAmt
	w := R.W
	raster.ParallelRows(R.H, func(y0, y1 int) {
		for i := y0 * w; i < y1*w; i++ {
			r, g, b := master.at(R.P[i]), master.at(G.P[i]), master.at(B.P[i])
			if ch[0] != nil {
				r = ch[0].at(r)
			}
			if ch[1] != nil {
				g = ch[1].at(g)
			}
			if ch[2] != nil {
				b = ch[2].at(b)
			}
			lv := luma(r, g, b)
			if sat != 1 || vib != 0 {
				s := max(r, g, b) - min(r, g, b)
				f := sat * (1 + vib*(1-s))
				r = lv + (r-lv)*f
				g = lv + (g-lv)*f
				b = lv + (b-lv)*f
			}
			if sa != 0 || ha != 0 {
				lc := raster.Clamp01(lv)
				ws := (1 - lc) * (1 - lc) * sa
				wh := lc * lc * ha
				r += ws*ts[0] + wh*th[0]
				g += ws*ts[1] + wh*th[1]
				b += ws*ts[2] + wh*th[2]
			}
			R.P[i], G.P[i], B.P[i] = r, g, b
		}
	})

}

// glow adds bloom (wide, white or tinted) or halation (narrow, red): the
// highlights above the threshold are blurred and screened back on.
func (l *look) glow(R, G, B *raster.Plane, diag float64) {
	w, h := R.W, R.H
	bright := raster.NewPlane(w, h)
	thr := l.bloomThr
	raster.ParallelRows(h, func(y0, y1 int) {
		for i := y0 * w; i < y1*w; i++ {
			lv := luma(R.P[i], G.P[i], B.P[i])
			if lv > thr {
				bright.P[i] = (lv - thr) / (1 - thr)
			}
		}
	})

	gl := raster.WideBlur(bright, diag*float64(l.bloomSigma))
	tint := l.bloomTint
	if tint == ([3]float32{}) {
		tint = [3]float32{1, 1, 1}
	}
	a := l.bloom
	raster.ParallelRows(h, func(y0, y1 int) {
		for i := y0 * w; i < y1*w; i++ {
			g := a * gl.P[i]
			if g == 0 {
				continue
			}
			R.P[i] = 1 - (1-raster.Clamp01(R.P[i]))*(1-g*tint[0])
			G.P[i] = 1 - (1-raster.Clamp01(G.P[i]))*(1-g*tint[1])
			B.P[i] = 1 - (1-raster.Clamp01(B.P[i]))*(1-g*tint[2])
		}
	})

}

// aberrate scales the red channel outward and the blue channel inward about
// the centre (lateral chromatic aberration); px is the shift at the corner.
func aberrate(R, B *raster.Plane, px float32) (*raster.Plane, *raster.Plane) {
	w, h := R.W, R.H
	half := float32(math.Hypot(float64(w), float64(h)) / 2)
	k := px / half
	return radialScale(R, 1/(1+k)), radialScale(B, 1/(1-k))
}

// radialScale samples src at centre + (p-centre)*s with bilinear filtering.
func radialScale(src *raster.Plane, s float32) *raster.Plane {
	w, h := src.W, src.H
	out := raster.NewPlane(w, h)
	cx, cy := float32(w-1)/2, float32(h-1)/2
	raster.ParallelRows(h, func(y0, y1 int) {
		for y := y0; y < y1; y++ {
			sy := cy + (float32(y)-cy)*s
			iy := int(sy)
			fy := sy - float32(iy)
			ya, yb := min(max(iy, 0), h-1), min(max(iy+1, 0), h-1)
			for x := 0; x < w; x++ {
				sx := cx + (float32(x)-cx)*s
				ix := int(sx)
				fx := sx - float32(ix)
				xa, xb := min(max(ix, 0), w-1), min(max(ix+1, 0), w-1)
				a := src.P[ya*w+xa] + (src.P[ya*w+xb]-src.P[ya*w+xa])*fx
				b := src.P[yb*w+xa] + (src.P[yb*w+xb]-src.P[yb*w+xa])*fx
				out.P[y*w+x] = a + (b-a)*fy
			}
		}
	})

	return out
}

// sharpen is an unsharp mask on luma, added equally to all channels so it
// does not create colour fringes.
func sharpen(R, G, B *raster.Plane, amount, sigma float32) {
	w, h := R.W, R.H
	if sigma <= 0 {
		sigma = 1
	}
	L := lumaPlane(R, G, B)
	bl := raster.NewPlane(w, h)
	copy(bl.P, L.P)
	raster.Blur(bl, raster.NewPlane(w, h), float64(sigma))
	raster.ParallelRows(h, func(y0, y1 int) {
		for i := y0 * w; i < y1*w; i++ {
			d := amount * (L.P[i] - bl.P[i])
			R.P[i] += d
			G.P[i] += d
			B.P[i] += d
		}
	})

}

// hash is a SplitMix64-style mix of the seed, a salt and a pixel position.
func hash(seed uint64, salt, i uint64) uint64 {
	z := seed ^ (salt * 0x9E3779B97F4A7C15) ^ (i * 0xC2B2AE3D27D4EB4F)
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

// gauss turns a 64-bit hash into an approximately normal value (mean 0,
// std 1) from the sum of four 16-bit uniforms.
func gauss(z uint64) float32 {
	s := float32(z&0xffff) + float32((z>>16)&0xffff) + float32((z>>32)&0xffff) + float32(z>>48)
	return (s/65535 - 2) * 1.7320508
}

// tri turns 21 random bits into a triangular-distributed value with std 1
// (sum of two 10-bit uniforms), cheap enough for per-channel noise.
func tri(z uint32) float32 {
	a := float32(z&0x3ff) / 1023
	b := float32((z>>10)&0x3ff) / 1023
	return (a + b - 1) * 2.4494897
}

// lumaPlane returns the luma of R, G, B.
func lumaPlane(R, G, B *raster.Plane) *raster.Plane {
	L := raster.NewPlane(R.W, R.H)
	w := R.W
	raster.ParallelRows(R.H, func(y0, y1 int) {
		for i := y0 * w; i < y1*w; i++ {
			L.P[i] = luma(R.P[i], G.P[i], B.P[i])
		}
	})

	return L
}

// finish adds grain, sensor noise and the vignette and quantises to RGBA.
func (l *look) finish(R, G, B *raster.Plane, seed int64) *image.RGBA {
	w, h := R.W, R.H
	out := image.NewRGBA(image.Rect(0, 0, w, h))
	s := uint64(seed)
	var grain *raster.Plane
	if l.grain > 0 {
		grain = raster.NewPlane(w, h)
		raster.ParallelRows(h, func(y0, y1 int) {
			for i := y0 * w; i < y1*w; i++ {
				grain.P[i] = gauss(hash(s, 1, uint64(i)))
			}
		})

		if r := l.grainSize - 1; r > 0 {
			tmp := raster.NewPlane(w, h)
			raster.BoxBlurH(tmp, grain, r)
			raster.BoxBlurV(grain, tmp, r)
			k := float32(2*r + 1)
			for i := range grain.P {
				grain.P[i] *= k
			}
		}
	}
	cx, cy := float32(w)/2, float32(h)/2
	vig, mid := l.vignette, l.vignetteMid
	// Vignette factor as a table over the squared normalised radius
	// rn2 = (dx^2+dy^2)/2 in 0..1 (corners at 1).
	var vlut [1025]float32
	for k := range vlut {
		rn := float32(math.Sqrt(float64(k) / 1024))
		vlut[k] = 1 - vig*raster.Smoothstep(mid, 1.1, rn)
	}
	dx2 := make([]float32, w)
	for x := range dx2 {
		dx := (float32(x) - cx) / cx
		dx2[x] = dx * dx / 2
	}
	ga, cn := l.grain, l.chromaNoise
	raster.ParallelRows(h, func(y0, y1 int) {
		for y := y0; y < y1; y++ {
			dy := (float32(y) - cy) / cy
			dy2 := dy * dy / 2
			o := out.Pix[y*out.Stride:]
			for x := 0; x < w; x++ {
				i := y*w + x
				r, g, b := R.P[i], G.P[i], B.P[i]
				if grain != nil || cn > 0 {
					lv := raster.Clamp01(luma(r, g, b))
					wt := 0.25 + 3*lv*(1-lv)
					var n float32
					if grain != nil {
						n = grain.P[i] * ga * wt
					}
					if cn > 0 {
						z := hash(s, 2, uint64(i))
						r += n + cn*wt*tri(uint32(z))
						g += n + cn*wt*tri(uint32(z>>21))
						b += n + cn*wt*tri(uint32(z>>42))
					} else {
						r, g, b = r+n, g+n, b+n
					}
				}
				if vig > 0 {
					k := int((dx2[x] + dy2) * 1024)
					v := vlut[min(k, 1024)]
					r, g, b = r*v, g*v, b*v
				}
				o[x*4] = uint8(raster.Clamp01(r)*255 + 0.5)
				o[x*4+1] = uint8(raster.Clamp01(g)*255 + 0.5)
				o[x*4+2] = uint8(raster.Clamp01(b)*255 + 0.5)
				o[x*4+3] = 255
			}
		}
	})

	return out
}
