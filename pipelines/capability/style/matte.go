package style

import (
	"image"

	"fashiond/pipelines/capability/raster"
)

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
func refineMatte(R, G, B, mask *raster.Plane, diag float64) *raster.Plane {
	w, h := mask.W, mask.H
	tmp := raster.NewPlane(w, h)
	r := max(2, int(diag*0.012))
	// Band: where a box average of the mask is neither 0 nor 1.
	band := raster.NewPlane(w, h)
	copy(band.P, mask.P)
	raster.BoxBlurH(tmp, band, r)
	raster.BoxBlurV(band, tmp, r)
	// Sure-person and sure-background weights and their colour sums.
	sig := diag * 0.015
	planes := make([]*raster.Plane, 8)
	for k := range planes {
		planes[k] = raster.NewPlane(w, h)
	}
	fw, bw := planes[0], planes[1]
	fr, fg, fb := planes[2], planes[3], planes[4]
	br, bg, bb := planes[5], planes[6], planes[7]
	raster.ParallelRows(h, func(y0, y1 int) {
		for i := y0 * w; i < y1*w; i++ {
			wf := raster.Smoothstep(0.9, 0.99, band.P[i]) * raster.Smoothstep(0.9, 1, mask.P[i])
			wb := (1 - raster.Smoothstep(0.01, 0.1, band.P[i])) * (1 - raster.Smoothstep(0, 0.1, mask.P[i]))
			fw.P[i], bw.P[i] = wf, wb
			fr.P[i], fg.P[i], fb.P[i] = wf*R.P[i], wf*G.P[i], wf*B.P[i]
			br.P[i], bg.P[i], bb.P[i] = wb*R.P[i], wb*G.P[i], wb*B.P[i]
		}
	})

	for k := range planes {
		planes[k] = raster.WideBlur(planes[k], sig)
	}
	fw, bw = planes[0], planes[1]
	fr, fg, fb = planes[2], planes[3], planes[4]
	br, bg, bb = planes[5], planes[6], planes[7]
	out := raster.NewPlane(w, h)
	raster.ParallelRows(h, func(y0, y1 int) {
		for i := y0 * w; i < y1*w; i++ {
			m := mask.P[i]
			bd := band.P[i]
			if bd <= 0.001 || bd >= 0.999 || fw.P[i] < 1e-3 || bw.P[i] < 1e-3 {
				out.P[i] = m
				continue
			}
			F := [3]float32{fr.P[i] / fw.P[i], fg.P[i] / fw.P[i], fb.P[i] / fw.P[i]}
			Bk := [3]float32{br.P[i] / bw.P[i], bg.P[i] / bw.P[i], bb.P[i] / bw.P[i]}
			I := [3]float32{R.P[i], G.P[i], B.P[i]}
			var num, d2 float32
			for c := range 3 {
				d := F[c] - Bk[c]
				num += (I[c] - Bk[c]) * d
				d2 += d * d
			}
			a := raster.Clamp01(num / max(d2, 1e-6))
			conf := d2 / (d2 + 0.04)
			v := conf*a + (1-conf)*m

			v = min(v, max(0, 2.5*m-0.5))

			out.P[i] = raster.Smoothstep(0.3, 0.7, v)
		}
	})

	raster.Blur(out, tmp, 0.8)
	return out
}

// clearTransparent sets the matte to 0 (background) wherever src is fully
// transparent: a cut-out photo's transparent background is never the
// person, though its premultiplied pixels are black and the person mask
// and the colour refinement may take dark gaps (between the legs, above
// the head of codait_man_tpose_cutout.png) for the person; the backdrop
// then left them black.
func clearTransparent(m *raster.Plane, src *image.RGBA) {
	if src.Opaque() {
		return
	}
	for i := range m.P {
		if src.Pix[(i/m.W)*src.Stride+(i%m.W)*4+3] == 0 {
			m.P[i] = 0
		}
	}
}
