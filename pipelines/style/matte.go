package style

// refineMatte sharpens a soft person mask near its outline with the
// photo's colours, so that a backdrop replacement leaves no half-
// transparent remnants of the old background (ghosted legs, dark halos).
// Within a band around the outline (about 1.2% of the diagonal each way)
// every pixel is unknown; the local person and background colours are the
// normalised-convolution means of the sure pixels on either side, and the
// pixel's alpha is its projection onto the background->person colour
// line. Where the two colours are close the colour says little and the
// model mask is kept (confidence |F-B|^2/(|F-B|^2+k)). The result is then
// pushed through a steep smooth step so that the backdrop is either
// clearly background or clearly person, with a one- to two-pixel edge.
func refineMatte(R, G, B, mask *plane, diag float64) *plane {
	w, h := mask.w, mask.h
	tmp := newPlane(w, h)
	r := max(2, int(diag*0.012))
	// Band: where a box average of the mask is neither 0 nor 1.
	band := newPlane(w, h)
	copy(band.p, mask.p)
	boxBlurH(tmp, band, r)
	boxBlurV(band, tmp, r)
	// Sure-person and sure-background weights and their colour sums.
	sig := diag * 0.015
	planes := make([]*plane, 8)
	for k := range planes {
		planes[k] = newPlane(w, h)
	}
	fw, bw := planes[0], planes[1]
	fr, fg, fb := planes[2], planes[3], planes[4]
	br, bg, bb := planes[5], planes[6], planes[7]
	parallelRows(h, func(y0, y1 int) {
		for i := y0 * w; i < y1*w; i++ {
			wf := smoothstep(0.9, 0.99, band.p[i]) * smoothstep(0.9, 1, mask.p[i])
			wb := (1 - smoothstep(0.01, 0.1, band.p[i])) * (1 - smoothstep(0, 0.1, mask.p[i]))
			fw.p[i], bw.p[i] = wf, wb
			fr.p[i], fg.p[i], fb.p[i] = wf*R.p[i], wf*G.p[i], wf*B.p[i]
			br.p[i], bg.p[i], bb.p[i] = wb*R.p[i], wb*G.p[i], wb*B.p[i]
		}
	})
	for k := range planes {
		planes[k] = wideBlur(planes[k], sig)
	}
	fw, bw = planes[0], planes[1]
	fr, fg, fb = planes[2], planes[3], planes[4]
	br, bg, bb = planes[5], planes[6], planes[7]
	out := newPlane(w, h)
	parallelRows(h, func(y0, y1 int) {
		for i := y0 * w; i < y1*w; i++ {
			m := mask.p[i]
			bd := band.p[i]
			if bd <= 0.001 || bd >= 0.999 || fw.p[i] < 1e-3 || bw.p[i] < 1e-3 {
				out.p[i] = m
				continue
			}
			F := [3]float32{fr.p[i] / fw.p[i], fg.p[i] / fw.p[i], fb.p[i] / fw.p[i]}
			Bk := [3]float32{br.p[i] / bw.p[i], bg.p[i] / bw.p[i], bb.p[i] / bw.p[i]}
			I := [3]float32{R.p[i], G.p[i], B.p[i]}
			var num, d2 float32
			for c := range 3 {
				d := F[c] - Bk[c]
				num += (I[c] - Bk[c]) * d
				d2 += d * d
			}
			a := clamp01(num / max(d2, 1e-6))
			conf := d2 / (d2 + 0.04)
			v := conf*a + (1-conf)*m
			// The colour may take away what the model saw (a halo of
			// the old background) but add only where the model leaned to
			// person: background that merely resembles the person (rust
			// beside skin) stays background.
			v = min(v, max(0, 2.5*m-0.5))
			// Harden: clearly background or clearly person.
			out.p[i] = smoothstep(0.3, 0.7, v)
		}
	})
	blur(out, tmp, 0.8)
	return out
}
