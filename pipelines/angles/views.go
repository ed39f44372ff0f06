package angles

import (
	"image"
	"math"
	"math/rand/v2"
	"sort"

	"fashiond/cv"
	"fashiond/models"
	"fashiond/pipelines/scene"
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

// backView synthesises the back from the front texture: front prints and
// logos on the top are inpainted away (the back of a printed tee is usually
// plain), the face is replaced by hair continuing the hair colour, and the
// result is mirrored (left and right swap when seen from behind). It
// returns the person layer, its alpha and what was done.
func backView(s *scene.Scene, parse *models.Parsing, faces []models.Face) (*image.RGBA, *image.Gray, []string, error) {
	w, h := s.Image.Rect.Dx(), s.Image.Rect.Dy()
	img := image.NewRGBA(s.Image.Rect)
	copy(img.Pix, s.Image.Pix)
	var did []string

	// 1. Prints: pixels of the top that deviate strongly from its median
	// luma, when they are a minority (a logo, not an all-over pattern).
	if parse != nil && parse.Clothes != nil {
		hipY := h
		if p := s.Pose; p != nil {
			l, r := p.Keypoints[models.KpLeftHip], p.Keypoints[models.KpRightHip]
			if l.Visibility > 0.5 && r.Visibility > 0.5 {
				hipY = int((l.Y + r.Y) / 2)
			}
		}
		cl := scene.ResizeGray(parse.Clothes, w, h)
		var lum []int
		idx := make([]int, 0, 1024)
		for y := 0; y < min(hipY, h); y++ {
			for x := 0; x < w; x++ {
				if cl.Pix[y*cl.Stride+x] > 128 && s.PersonMask.Pix[y*s.PersonMask.Stride+x] > 200 {
					i := y*img.Stride + x*4
					lum = append(lum, (299*int(img.Pix[i])+587*int(img.Pix[i+1])+114*int(img.Pix[i+2]))/1000)
					idx = append(idx, y*w+x)
				}
			}
		}
		if len(lum) > 500 {
			sorted := append([]int(nil), lum...)
			sort.Ints(sorted)
			med := sorted[len(sorted)/2]
			printMask := image.NewGray(image.Rect(0, 0, w, h))
			cnt := 0
			for k, l := range lum {
				if abs(l-med) > 45 {
					printMask.Pix[idx[k]] = 255
					cnt++
				}
			}
			if cnt > 50 && cnt < len(lum)/4 {
				printMask = scene.Dilate(printMask, 2)
				if filled, err := cv.Inpaint(img, printMask, 5); err == nil {
					img = filled
					did = append(did, "front print removed by inpainting")
				} else {
					return nil, nil, nil, err
				}
			}
		}
	}

	// 2. The face becomes the back of the head.
	box, ok := headBox(s.Pose, faces, w, h)
	if ok {
		hairC := [3]float64{55, 42, 35}
		contrast := 0.15
		if parse != nil && parse.Hair != nil {
			hg := scene.ResizeGray(parse.Hair, w, h)
			// hair pixels around the head, upper half first (the parsing
			// can spill onto dark collars and shadows below the face); the
			// colour is the mean of the 30..90 luma percentiles
			type px struct{ l, r, g, b float64 }
			collect := func(r image.Rectangle) []px {
				var v []px
				for y := r.Min.Y; y < r.Max.Y; y++ {
					for x := r.Min.X; x < r.Max.X; x++ {
						if hg.Pix[y*hg.Stride+x] > 160 && s.PersonMask.Pix[y*s.PersonMask.Stride+x] > 200 {
							i := y*img.Stride + x*4
							r, g, b := float64(img.Pix[i]), float64(img.Pix[i+1]), float64(img.Pix[i+2])
							v = append(v, px{0.299*r + 0.587*g + 0.114*b, r, g, b})
						}
					}
				}
				return v
			}
			big := box.Inset(-box.Dx() / 2).Intersect(img.Rect)
			upper := big
			upper.Max.Y = box.Min.Y + box.Dy()/2
			v := collect(upper)
			if len(v) < 100 {
				v = collect(big)
			}
			if len(v) > 100 {
				sort.Slice(v, func(i, j int) bool { return v[i].l < v[j].l })
				v = v[len(v)*3/10 : len(v)*9/10]
				var sum [3]float64
				var sl, sl2 float64
				for _, p := range v {
					sum[0] += p.r
					sum[1] += p.g
					sum[2] += p.b
					sl += p.l
					sl2 += p.l * p.l
				}
				n := float64(len(v))
				for c := range hairC {
					hairC[c] = sum[c] / n
				}
				m := sl / n
				if sd := math.Sqrt(math.Max(0, sl2/n-m*m)); m > 1 {
					contrast = math.Max(0.1, math.Min(0.35, 1.5*sd/m))
				}
			}
		}
		// A rounded hair mass: strands fall radially from the crown (a 1-D
		// noise over the angle around the crown, slowly varying along the
		// radius), shaded as a sphere lit from above with a soft sheen band,
		// darker towards the nape. It covers the face's skin and the visible
		// hair inside the head ellipse (hats and garments stay).
		rng := rand.New(rand.NewPCG(uint64(w), uint64(h)))
		bw, bh := box.Dx(), box.Dy()
		const nb = 720
		var strand [2][nb]float64
		for l := range strand {
			for i := range strand[l] {
				strand[l][i] = rng.NormFloat64()
			}
			for pass := 0; pass < 2; pass++ { // light smoothing: strand width
				prev := strand[l][nb-1]
				for i := range strand[l] {
					cur := strand[l][i]
					strand[l][i] = 0.25*prev + 0.5*cur + 0.25*strand[l][(i+1)%nb]
					prev = cur
				}
			}
		}
		noiseAt := func(l int, t float64) float64 {
			t = math.Mod(t, nb)
			if t < 0 {
				t += nb
			}
			i := int(t)
			f := t - float64(i)
			return strand[l][i]*(1-f) + strand[l][(i+1)%nb]*f
		}
		var keep *image.Gray // face skin and hair: what may turn into hair
		if parse != nil && parse.Skin != nil {
			sk := scene.ResizeGray(parse.Skin, w, h)
			keep = image.NewGray(sk.Rect)
			copy(keep.Pix, sk.Pix)
			if parse.Hair != nil {
				hg := scene.ResizeGray(parse.Hair, w, h)
				for i, v := range hg.Pix {
					keep.Pix[i] = max(keep.Pix[i], v)
				}
			}
			keep = scene.Feather(keep, max(1, bw/30))
		}
		cx, cy := float64(box.Min.X+box.Max.X)/2, float64(box.Min.Y)+float64(bh)*0.45
		rx, ry := float64(bw)*0.52, float64(bh)*0.58
		crx, cry := cx+0.08*rx, cy-1.6*ry // the crown, above the visible mass
		area := box.Inset(-max(bw, bh) / 5).Intersect(img.Rect)
		for y := area.Min.Y; y < area.Max.Y; y++ {
			for x := area.Min.X; x < area.Max.X; x++ {
				if s.PersonMask.Pix[y*s.PersonMask.Stride+x] < 60 {
					continue
				}
				dx, dy := (float64(x)-cx)/rx, (float64(y)-cy)/ry
				e := math.Sqrt(dx*dx + dy*dy)
				a := math.Max(0, math.Min(1, (1.08-e)/0.22))
				// fade out towards the neck
				fy := (float64(y) - float64(box.Min.Y)) / float64(bh)
				// the nape line curves up towards the ears
				a *= math.Max(0, math.Min(1, (1.02-0.15*dx*dx-fy)/0.12))
				if a <= 0 {
					continue
				}
				if keep != nil {
					a *= math.Min(1, float64(keep.Pix[y*keep.Stride+x])/160)
				}
				if a <= 0 {
					continue
				}
				// strands: angle around the crown, two layers drifting
				// with the radius so they are not perfectly straight
				ang := math.Atan2(float64(x)-crx, float64(y)-cry) / math.Pi * nb / 2
				rad := math.Hypot(float64(x)-crx, float64(y)-cry) / float64(bh)
				st := 0.65*noiseAt(0, ang*1.0+6*math.Sin(rad*5)) + 0.45*noiseAt(1, ang*2.3+9*rad)
				nz := math.Sqrt(math.Max(0, 1-math.Min(1, e*e)))
				shade := 0.6 + 0.45*nz - 0.22*math.Max(0, fy-0.5)
				sx, sy := dx+0.1, dy+0.45 // sheen band across the upper back
				shade += 0.18 * math.Exp(-(sy*sy)/0.02) * math.Exp(-(sx*sx)/0.5)
				g := shade * (1 + 1.4*contrast*st)
				i := y*img.Stride + x*4
				for c := 0; c < 3; c++ {
					v := hairC[c] * g
					img.Pix[i+c] = uint8(math.Max(0, math.Min(255, float64(img.Pix[i+c])*(1-a)+v*a)) + 0.5)
				}
			}
		}
		did = append(did, "face and front hair replaced by a shaded hair mass (strands from the crown) in the visible hair colour")
	}
	return mirror(img), mirrorGray(s.PersonMask), did, nil
}

// headBox is the face region (from the face detector, else from the pose's
// head keypoints), expanded to cover the ears and hairline.
func headBox(p *models.Pose, faces []models.Face, w, h int) (image.Rectangle, bool) {
	var x0, y0, x1, y1 float64
	switch {
	case len(faces) > 0 && faces[0].Score > 0.5:
		f := faces[0].Box
		x0, y0, x1, y1 = f[0], f[1], f[2], f[3]
	case p != nil && p.Keypoints[models.KpLeftEar].Visibility > 0.5 && p.Keypoints[models.KpRightEar].Visibility > 0.5:
		l, r, n := p.Keypoints[models.KpLeftEar], p.Keypoints[models.KpRightEar], p.Keypoints[models.KpNose]
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
