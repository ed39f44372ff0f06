package style

import (
	"image"
	"math"
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
func (l *look) apply(src *image.RGBA, o Options) *image.RGBA {
	initLUTs()
	w, h := src.Rect.Dx(), src.Rect.Dy()
	diag := math.Hypot(float64(w), float64(h))

	var mask *plane
	if o.PersonMask != nil && (l.backdrop != nil || l.flash > 0) {
		mask = maskPlane(o.PersonMask, w, h)
		if mask != nil {
			blur(mask, newPlane(w, h), 0.6+diag*0.0008)
		}
	}

	R, G, B := newPlane(w, h), newPlane(w, h), newPlane(w, h)
	gain := l.gains(src)
	var fl *plane
	if l.flash > 0 {
		fl = flashGain(w, h, mask, l.flash, diag)
	}
	parallelRows(h, func(y0, y1 int) {
		for y := y0; y < y1; y++ {
			row := src.Pix[y*src.Stride:]
			for x := 0; x < w; x++ {
				i := y*w + x
				gr, gg, gb := gain[0], gain[1], gain[2]
				if fl != nil {
					f := fl.p[i]
					gr, gg, gb = gr*f, gg*f, gb*f
				}
				R.p[i] = encode(toLinear8[row[x*4]] * gr)
				G.p[i] = encode(toLinear8[row[x*4+1]] * gg)
				B.p[i] = encode(toLinear8[row[x*4+2]] * gb)
			}
		}
	})

	if l.backdrop != nil && mask != nil {
		l.backdrop.paint(R, G, B, refineMatte(R, G, B, mask, diag), diag)
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
	return l.finish(R, G, B, o.Seed)
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
func flashGain(w, h int, mask *plane, strength float32, diag float64) *plane {
	out := newPlane(w, h)
	cx, cy := float32(w)*0.5, float32(h)*0.42
	var shadow *plane
	if mask != nil {
		var sx, sy, sm float64
		for y := 0; y < h; y += 2 {
			for x := 0; x < w; x += 2 {
				m := float64(mask.p[y*w+x])
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
		shadow = newPlane(w, h)
		parallelRows(h, func(y0, y1 int) {
			for y := max(y0, dy); y < y1; y++ {
				if dx < w {
					copy(shadow.p[y*w+dx:(y+1)*w], mask.p[(y-dy)*w:(y-dy+1)*w-dx])
				}
			}
		})
		blur(shadow, newPlane(w, h), diag*0.004)
	}
	half := float32(diag * 0.5)
	const ambient = 0.22
	parallelRows(h, func(y0, y1 int) {
		for y := y0; y < y1; y++ {
			for x := 0; x < w; x++ {
				i := y*w + x
				dx, dy := (float32(x)-cx)/half, (float32(y)-cy)/half
				rn2 := dx*dx + dy*dy
				radial := 1 / (1 + 2.5*rn2)
				var m, sh float32
				if mask != nil {
					m = mask.p[i]
					sh = shadow.p[i]
				} else {
					ex := (float32(x) - cx) / (0.28 * float32(w))
					ey := (float32(y) - cy) / (0.48 * float32(h))
					m = smoothstep(1.3, 0.7, ex*ex+ey*ey)
				}
				subject := 1.25 * (0.75 + 0.25*radial)
				bg := 0.45 * radial * radial * (1 - 0.85*sh)
				out.p[i] = ambient + strength*(m*subject+(1-m)*bg) + (1-strength)*(1-ambient)
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
func (bd *backdrop) paint(R, G, B, mask *plane, diag float64) {
	w, h := R.w, R.h
	// Person extent from the mask rows.
	top, bottom := -1, -1
	var sx, sm float64
	for y := 0; y < h; y++ {
		var mass float64
		row := mask.p[y*w : (y+1)*w]
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
	occ := wideBlur(mask, diag*0.03)
	parallelRows(h, func(y0, y1 int) {
		for y := y0; y < y1; y++ {
			fy := float32(y)
			t := smoothstep(yf-0.18*fh, yf+0.02*fh, fy) // wall -> floor
			for x := 0; x < w; x++ {
				i := y*w + x
				m := mask.p[i]
				if m >= 0.999 {
					continue
				}
				fx := float32(x)
				dx, dy := (fx-lx)/(0.9*float32(w)), (fy-ly)/(0.9*fh)
				wallF := max(1.04-bd.falloff*(dx*dx+dy*dy)*2, 0.55)
				sideF := 1 - 0.5*bd.falloff*((fx-cx)/float32(w))*((fx-cx)/float32(w))
				// Shadow only on the floor, where the body meets it (not
				// a dark halo around the whole figure on the wall).
				shade := 1 - bd.shadow*occ.p[i]*t*t
				r, g, b := R.p[i], G.p[i], B.p[i]
				lo := luma(r, g, b)
				orig := 0.55 + 0.45*lo // original background, desaturated and brightened
				var c [3]float32
				for k := range 3 {
					paper := bd.wall[k]*wallF*(1-t) + bd.floor[k]*sideF*t
					c[k] = (paper*(1-bd.keep) + orig*paper*bd.keep/0.8) * shade
				}
				R.p[i] = m*r + (1-m)*c[0]
				G.p[i] = m*g + (1-m)*c[1]
				B.p[i] = m*b + (1-m)*c[2]
			}
		}
	})
}

// localTone applies smartphone-style local tone mapping (compress the
// low-frequency base toward mid-grey, keep the detail) and/or clarity
// (boost local contrast in the mid-tones).
func (l *look) localTone(R, G, B *plane, diag float64) {
	w, h := R.w, R.h
	L := lumaPlane(R, G, B)
	sigma := diag * 0.015
	if l.hdr > 0 {
		sigma = diag * 0.03
	}
	base := wideBlur(L, sigma)
	hdr, cl := l.hdr, l.clarity
	parallelRows(h, func(y0, y1 int) {
		for i := y0 * w; i < y1*w; i++ {
			lv, bv := L.p[i], base.p[i]
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
			R.p[i] += d
			G.p[i] += d
			B.p[i] += d
		}
	})
}

// grade applies the tone curves, saturation/vibrance and split toning.
func (l *look) grade(R, G, B *plane) {
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
	w := R.w
	parallelRows(R.h, func(y0, y1 int) {
		for i := y0 * w; i < y1*w; i++ {
			r, g, b := master.at(R.p[i]), master.at(G.p[i]), master.at(B.p[i])
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
				lc := clamp01(lv)
				ws := (1 - lc) * (1 - lc) * sa
				wh := lc * lc * ha
				r += ws*ts[0] + wh*th[0]
				g += ws*ts[1] + wh*th[1]
				b += ws*ts[2] + wh*th[2]
			}
			R.p[i], G.p[i], B.p[i] = r, g, b
		}
	})
}

// glow adds bloom (wide, white or tinted) or halation (narrow, red): the
// highlights above the threshold are blurred and screened back on.
func (l *look) glow(R, G, B *plane, diag float64) {
	w, h := R.w, R.h
	bright := newPlane(w, h)
	thr := l.bloomThr
	parallelRows(h, func(y0, y1 int) {
		for i := y0 * w; i < y1*w; i++ {
			lv := luma(R.p[i], G.p[i], B.p[i])
			if lv > thr {
				bright.p[i] = (lv - thr) / (1 - thr)
			}
		}
	})
	gl := wideBlur(bright, diag*float64(l.bloomSigma))
	tint := l.bloomTint
	if tint == ([3]float32{}) {
		tint = [3]float32{1, 1, 1}
	}
	a := l.bloom
	parallelRows(h, func(y0, y1 int) {
		for i := y0 * w; i < y1*w; i++ {
			g := a * gl.p[i]
			if g == 0 {
				continue
			}
			R.p[i] = 1 - (1-clamp01(R.p[i]))*(1-g*tint[0])
			G.p[i] = 1 - (1-clamp01(G.p[i]))*(1-g*tint[1])
			B.p[i] = 1 - (1-clamp01(B.p[i]))*(1-g*tint[2])
		}
	})
}

// aberrate scales the red channel outward and the blue channel inward about
// the centre (lateral chromatic aberration); px is the shift at the corner.
func aberrate(R, B *plane, px float32) (*plane, *plane) {
	w, h := R.w, R.h
	half := float32(math.Hypot(float64(w), float64(h)) / 2)
	k := px / half
	return radialScale(R, 1/(1+k)), radialScale(B, 1/(1-k))
}

// radialScale samples src at centre + (p-centre)*s with bilinear filtering.
func radialScale(src *plane, s float32) *plane {
	w, h := src.w, src.h
	out := newPlane(w, h)
	cx, cy := float32(w-1)/2, float32(h-1)/2
	parallelRows(h, func(y0, y1 int) {
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
				a := src.p[ya*w+xa] + (src.p[ya*w+xb]-src.p[ya*w+xa])*fx
				b := src.p[yb*w+xa] + (src.p[yb*w+xb]-src.p[yb*w+xa])*fx
				out.p[y*w+x] = a + (b-a)*fy
			}
		}
	})
	return out
}

// sharpen is an unsharp mask on luma, added equally to all channels so it
// does not create colour fringes.
func sharpen(R, G, B *plane, amount, sigma float32) {
	w, h := R.w, R.h
	if sigma <= 0 {
		sigma = 1
	}
	L := lumaPlane(R, G, B)
	bl := newPlane(w, h)
	copy(bl.p, L.p)
	blur(bl, newPlane(w, h), float64(sigma))
	parallelRows(h, func(y0, y1 int) {
		for i := y0 * w; i < y1*w; i++ {
			d := amount * (L.p[i] - bl.p[i])
			R.p[i] += d
			G.p[i] += d
			B.p[i] += d
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
func lumaPlane(R, G, B *plane) *plane {
	L := newPlane(R.w, R.h)
	w := R.w
	parallelRows(R.h, func(y0, y1 int) {
		for i := y0 * w; i < y1*w; i++ {
			L.p[i] = luma(R.p[i], G.p[i], B.p[i])
		}
	})
	return L
}

// finish adds grain, sensor noise and the vignette and quantises to RGBA.
func (l *look) finish(R, G, B *plane, seed int64) *image.RGBA {
	w, h := R.w, R.h
	out := image.NewRGBA(image.Rect(0, 0, w, h))
	s := uint64(seed)
	var grain *plane
	if l.grain > 0 {
		grain = newPlane(w, h)
		parallelRows(h, func(y0, y1 int) {
			for i := y0 * w; i < y1*w; i++ {
				grain.p[i] = gauss(hash(s, 1, uint64(i)))
			}
		})
		if r := l.grainSize - 1; r > 0 {
			tmp := newPlane(w, h)
			boxBlurH(tmp, grain, r)
			boxBlurV(grain, tmp, r)
			k := float32(2*r + 1)
			for i := range grain.p {
				grain.p[i] *= k
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
		vlut[k] = 1 - vig*smoothstep(mid, 1.1, rn)
	}
	dx2 := make([]float32, w)
	for x := range dx2 {
		dx := (float32(x) - cx) / cx
		dx2[x] = dx * dx / 2
	}
	ga, cn := l.grain, l.chromaNoise
	parallelRows(h, func(y0, y1 int) {
		for y := y0; y < y1; y++ {
			dy := (float32(y) - cy) / cy
			dy2 := dy * dy / 2
			o := out.Pix[y*out.Stride:]
			for x := 0; x < w; x++ {
				i := y*w + x
				r, g, b := R.p[i], G.p[i], B.p[i]
				if grain != nil || cn > 0 {
					lv := clamp01(luma(r, g, b))
					wt := 0.25 + 3*lv*(1-lv) // strongest in the mid-tones
					var n float32
					if grain != nil {
						n = grain.p[i] * ga * wt
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
				o[x*4] = uint8(clamp01(r)*255 + 0.5)
				o[x*4+1] = uint8(clamp01(g)*255 + 0.5)
				o[x*4+2] = uint8(clamp01(b)*255 + 0.5)
				o[x*4+3] = 255
			}
		}
	})
	return out
}
