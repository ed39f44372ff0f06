package video

import (
	"image"
	"math"
	"sort"

	"fashiond/models"
	"fashiond/pipelines/scene"
)

// worldMargin is how much larger than the output the world canvas is, so
// camera moves never reach its edge.
const worldMargin = 1.25

// depthDown is the reduction of the background depth map used per pixel
// (depth is smooth; a smaller map stays in cache).
const depthDown = 4

// renderer holds the precomputed layers in world coordinates; per frame it
// only warps and blends.
type renderer struct {
	W, H   int // output
	ww, wh int // world canvas
	bg     []uint8
	depth  []float32 // background depth at 1/depthDown
	dw, dh int
	// person layer: straight RGB with alpha in A, covering pbox (world)
	person []uint8
	pbox   image.Rectangle
	pivot  float32
	// person depth at 1/depthDown in world coordinates (the person's own
	// relief: feet at the depth of the ground they stand on)
	pdepth []float32
	pgrad  float32 // largest person depth gradient per world pixel
	motion *bodyMotion
	move   Move
	grid   []float32
	// Framing says how the source was fitted ("cover" or "contain").
	Framing string
}

// extender fills the world canvas of w x h around bg placed at at.
type extender func(bg *image.RGBA, w, h int, at image.Point) (*image.RGBA, error)

// classicalExtend mirrors and blurs the background plate beyond its edges.
func classicalExtend(bg *image.RGBA, w, h int, at image.Point) (*image.RGBA, error) {
	return scene.ExtendAt(bg, w, h, at), nil
}

// newRenderer lays the scene out on the world canvas for a w x h output.
func newRenderer(s *scene.Scene, mv Move, w, h int, extend extender) (*renderer, error) {
	r := &renderer{W: w, H: h, move: mv}
	r.ww = even(int(math.Round(float64(w) * worldMargin)))
	r.wh = even(int(math.Round(float64(h) * worldMargin)))
	sw, sh := s.Image.Rect.Dx(), s.Image.Rect.Dy()
	kc := math.Min(float64(w)/float64(sw), float64(h)/float64(sh))
	kv := math.Max(float64(w)/float64(sw), float64(h)/float64(sh))
	k := kc
	r.Framing = "contain+extend"
	if kv/kc <= 1.25 {
		k, r.Framing = kv, "cover"
	}
	cw, ch := max(1, int(math.Round(float64(sw)*k))), max(1, int(math.Round(float64(sh)*k)))
	ox, oy := (r.ww-cw)/2, (r.wh-ch)/2
	box := scene.MaskBounds(s.PersonMask, 128)
	if r.Framing == "cover" && !box.Empty() {
		// Centre the person horizontally while the content still covers
		// the view.
		pc := float64(box.Min.X+box.Max.X) / 2 * k
		ox = int(math.Round(float64(r.ww)/2 - pc))
		lo, hi := (r.ww+w)/2-cw, (r.ww-w)/2
		ox = min(max(ox, lo), hi)
	}
	bg := scene.Resize(s.Background, cw, ch)
	world, err := extend(bg, r.ww, r.wh, image.Pt(ox, oy))
	if err != nil {
		return nil, err
	}
	r.bg = world.Pix

	// Background depth at reduced resolution.
	r.dw, r.dh = (r.ww+depthDown-1)/depthDown, (r.wh+depthDown-1)/depthDown
	var bd *models.Depth
	if s.BackgroundDepth != nil {
		bd = scene.ResizeDepth(s.BackgroundDepth, max(1, cw/depthDown), max(1, ch/depthDown))
		r.depth = scene.ExtendDepthAt(bd, r.dw, r.dh, image.Pt(ox/depthDown, oy/depthDown)).Data
	} else {
		r.depth = make([]float32, r.dw*r.dh)
		for i := range r.depth {
			r.depth[i] = 0.3
		}
	}
	r.pivot = 0.6
	if !s.HasPerson || box.Empty() {
		return r, nil
	}
	// Person depth: the median of the depth under the confident mask.
	if s.Depth != nil {
		var v []float32
		for i, a := range s.PersonMask.Pix {
			if a > 200 && i%3 == 0 {
				v = append(v, s.Depth.Data[i])
			}
		}
		if len(v) > 0 {
			sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
			r.pivot = v[len(v)/2]
		}
	}
	// The person layer in world coordinates (bounding box plus a margin).
	img := scene.Resize(s.Image, cw, ch)
	alpha := scene.ResizeGray(s.PersonMask, cw, ch)
	pb := image.Rect(int(float64(box.Min.X)*k)+ox-2, int(float64(box.Min.Y)*k)+oy-2,
		int(math.Ceil(float64(box.Max.X)*k))+ox+2, int(math.Ceil(float64(box.Max.Y)*k))+oy+2)
	pb = pb.Intersect(image.Rect(ox, oy, ox+cw, oy+ch))
	r.pbox = pb
	r.person = make([]uint8, pb.Dx()*pb.Dy()*4)
	for y := pb.Min.Y; y < pb.Max.Y; y++ {
		for x := pb.Min.X; x < pb.Max.X; x++ {
			sx, sy := x-ox, y-oy
			si := sy*img.Stride + sx*4
			di := ((y-pb.Min.Y)*pb.Dx() + (x - pb.Min.X)) * 4
			a := alpha.Pix[sy*alpha.Stride+sx]
			r.person[di] = img.Pix[si]
			r.person[di+1] = img.Pix[si+1]
			r.person[di+2] = img.Pix[si+2]
			r.person[di+3] = a
		}
	}
	r.motion = newBodyMotion(s.Pose, k, float64(ox), float64(oy), pb, r.wh)
	if r.motion != nil && s.Parsing != nil && s.Parsing.Hair != nil {
		hg := scene.Feather(scene.ResizeGray(s.Parsing.Hair, cw, ch), max(1, ch/200))
		r.motion.setHair(func(x, y int) float32 {
			x, y = x-ox, y-oy
			if x < 0 || y < 0 || x >= cw || y >= ch {
				return 0
			}
			return float32(hg.Pix[y*hg.Stride+x]) / 255
		})
	}
	r.pdepth = make([]float32, r.dw*r.dh)
	for i := range r.pdepth {
		r.pdepth[i] = r.pivot
	}
	if s.Depth != nil {
		// Smooth the model's depth inside the person (normalised blur) so
		// the layer bends gently instead of tearing.
		sw4, sh4 := max(1, cw/depthDown), max(1, ch/depthDown)
		d4 := scene.ResizeDepth(s.Depth, sw4, sh4)
		m4 := scene.ResizeGray(s.PersonMask, sw4, sh4)
		num := make([]float32, sw4*sh4)
		den := make([]float32, sw4*sh4)
		for i := range num {
			a := float32(m4.Pix[i]) / 255
			num[i], den[i] = d4.Data[i]*a, a
		}
		rad := max(1, sh4/60)
		blur3(num, sw4, sh4, rad)
		blur3(den, sw4, sh4, rad)
		known := make([]bool, r.dw*r.dh)
		for y := 0; y < sh4; y++ {
			wy := y + oy/depthDown
			if wy < 0 || wy >= r.dh {
				continue
			}
			for x := 0; x < sw4; x++ {
				wx := x + ox/depthDown
				if wx < 0 || wx >= r.dw {
					continue
				}
				i := y*sw4 + x
				if den[i] > 0.02 {
					r.pdepth[wy*r.dw+wx] = num[i] / den[i]
					known[wy*r.dw+wx] = true
				}
			}
		}
		// Continue the person's depth smoothly outside the silhouette so the
		// mapping has no jump at the edge (a jump would cut the layer).
		growFill(r.pdepth, known, r.dw, r.dh)
		for y := 0; y+1 < r.dh; y++ {
			for x := 0; x+1 < r.dw; x++ {
				i := y*r.dw + x
				g := max(abs32(r.pdepth[i+1]-r.pdepth[i]), abs32(r.pdepth[i+r.dw]-r.pdepth[i])) / depthDown
				r.pgrad = max(r.pgrad, g)
			}
		}
	}
	return r, nil
}

func abs32(v float32) float32 {
	if v < 0 {
		return -v
	}
	return v
}

// growFill fills the unknown cells of a plane with the mean of their known
// 8-neighbours, ring by ring, until every cell is known.
func growFill(p []float32, known []bool, w, h int) {
	any := false
	for _, k := range known {
		if k {
			any = true
			break
		}
	}
	if !any {
		return
	}
	next := make([]bool, len(known))
	for {
		copy(next, known)
		changed := false
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				i := y*w + x
				if known[i] {
					continue
				}
				var s float32
				n := 0
				for dy := -1; dy <= 1; dy++ {
					for dx := -1; dx <= 1; dx++ {
						xx, yy := x+dx, y+dy
						if xx < 0 || yy < 0 || xx >= w || yy >= h || !known[yy*w+xx] {
							continue
						}
						s += p[yy*w+xx]
						n++
					}
				}
				if n > 0 {
					p[i] = s / float32(n)
					next[i] = true
					changed = true
				}
			}
		}
		copy(known, next)
		if !changed {
			return
		}
	}
}

// blur3 is a three-pass box blur of a float plane (radius r).
func blur3(p []float32, w, h, r int) {
	tmp := make([]float32, len(p))
	inv := 1 / float32(2*r+1)
	for pass := 0; pass < 3; pass++ {
		for y := 0; y < h; y++ {
			var s float32
			for k := -r; k <= r; k++ {
				s += p[y*w+min(max(k, 0), w-1)]
			}
			for x := 0; x < w; x++ {
				tmp[y*w+x] = s * inv
				s += p[y*w+min(x+r+1, w-1)] - p[y*w+max(x-r, 0)]
			}
		}
		for x := 0; x < w; x++ {
			var s float32
			for k := -r; k <= r; k++ {
				s += tmp[min(max(k, 0), h-1)*w+x]
			}
			for y := 0; y < h; y++ {
				p[y*w+x] = s * inv
				s += tmp[min(y+r+1, h-1)*w+x] - tmp[max(y-r, 0)*w+x]
			}
		}
	}
}

func even(v int) int { return v &^ 1 }

// gridStep is the spacing in output pixels of the per-frame mapping grid;
// both mappings are smooth, so they are computed exactly at grid nodes and
// interpolated bilinearly in between.
const gridStep = 8

// render draws frame t (0..1 of the clip) at time tau seconds into out
// (W x H, stride 4W).
func (r *renderer) render(out *image.RGBA, t, tau float64) {
	cam := cameraAt(r.move, t, r.W, r.H, worldMargin)
	if r.motion != nil {
		r.motion.update(tau)
	}
	csx, csy := float32(r.W)/2, float32(r.H)/2
	cwx, cwy := float32(r.ww)/2, float32(r.wh)/2
	zoom, par := float32(cam.Zoom), float32(cam.Parallax)
	shx, shy := float32(cam.ShiftX), float32(cam.ShiftY)
	trx, try := float32(cam.TruckX), float32(cam.TruckY)
	pivot := r.pivot
	invD := 1 / float32(depthDown)
	pbx, pby := float32(r.pbox.Min.X), float32(r.pbox.Min.Y)

	// The person's own relief moves its parts by different amounts; too
	// much relief for the move would fold the mapping (a tear), so it is
	// limited to keep the mapping's slope change under 0.6.
	relief := float32(1)
	if fold := r.pgrad * (abs32(trx) + abs32(try) + (zoom-1)*par*float32(max(r.W, r.H))/2); fold > 0.6 {
		relief = 0.6 / fold
	}

	// Mapping grids: background world position and person-layer position
	// for each node.
	gw, gh := r.W/gridStep+2, r.H/gridStep+2
	if len(r.grid) != gw*gh*4 {
		r.grid = make([]float32, gw*gh*4)
	}
	g := r.grid
	scene.ParallelRows(gh, func(j0, j1 int) {
		for j := j0; j < j1; j++ {
			sy := float32(j*gridStep) - csy - shy
			for i := 0; i < gw; i++ {
				sx := float32(i*gridStep) - csx - shx
				d := pivot - 0.3
				var wx, wy float32
				for it := 0; it < 4; it++ {
					dd := d - pivot
					s := 1 + (zoom-1)*(1+par*dd)
					wx = cwx + (sx-trx*dd)/s
					wy = cwy + (sy-try*dd)/s
					if it < 3 {
						d = scene.SampleFloat(r.depth, r.dw, r.dh, wx*invD, wy*invD)
					}
				}
				var px, py float32
				if r.pdepth != nil {
					dp := pivot
					for it := 0; it < 3; it++ {
						dd := (dp - pivot) * relief
						s := 1 + (zoom-1)*(1+par*dd)
						px = cwx + (sx-trx*dd)/s
						py = cwy + (sy-try*dd)/s
						if it < 2 {
							dp = scene.SampleFloat(r.pdepth, r.dw, r.dh, px*invD, py*invD)
						}
					}
				} else {
					px, py = cwx+sx/zoom, cwy+sy/zoom
				}
				if r.motion != nil {
					dx, dy := r.motion.at(px, py)
					px -= dx
					py -= dy
				}
				k := (j*gw + i) * 4
				g[k], g[k+1], g[k+2], g[k+3] = wx, wy, px-pbx, py-pby
			}
		}
	})

	// Screen-space rows and columns the person can reach.
	var py0, py1, px0, px1 int
	if r.person != nil {
		m := float32(0.08*float64(r.pbox.Dy())) + float32(math.Abs(cam.TruckX)+math.Abs(cam.TruckY)) + 4
		px0 = int(csx + zoom*(float32(r.pbox.Min.X)-m-cwx) + shx)
		px1 = int(csx+zoom*(float32(r.pbox.Max.X)+m-cwx)+shx) + 1
		py0 = int(csy + zoom*(float32(r.pbox.Min.Y)-m-cwy) + shy)
		py1 = int(csy+zoom*(float32(r.pbox.Max.Y)+m-cwy)+shy) + 1
		px0, px1 = max(px0, 0), min(px1, r.W)
		py0, py1 = max(py0, 0), min(py1, r.H)
	}
	pbw, pbh := r.pbox.Dx(), r.pbox.Dy()
	bgMaxX, bgMaxY := float32(r.ww-1)-0.01, float32(r.wh-1)-0.01
	const inv = 1.0 / gridStep

	scene.ParallelRows(r.H, func(y0, y1 int) {
		for y := y0; y < y1; y++ {
			row := out.Pix[y*out.Stride : y*out.Stride+r.W*4]
			j := y / gridStep
			fy := float32(y-j*gridStep) * inv
			personRow := r.person != nil && y >= py0 && y < py1
			for i := 0; i*gridStep < r.W; i++ {
				// vertical interpolation of the two node columns
				a := g[(j*gw+i)*4:][:4]
				b := g[((j+1)*gw+i)*4:][:4]
				c := g[(j*gw+i+1)*4:][:4]
				d := g[((j+1)*gw+i+1)*4:][:4]
				var l, rr [4]float32
				for k := 0; k < 4; k++ {
					l[k] = a[k] + (b[k]-a[k])*fy
					rr[k] = c[k] + (d[k]-c[k])*fy
				}
				var st [4]float32
				for k := 0; k < 4; k++ {
					st[k] = (rr[k] - l[k]) * inv
				}
				x0 := i * gridStep
				xe := min(x0+gridStep, r.W)
				cur := l
				for x := x0; x < xe; x++ {
					o := x * 4
					var pr, pg, pb, pa uint32
					if personRow && x >= px0 && x < px1 {
						pr, pg, pb, pa = samplePerson(r.person, pbw, pbh, cur[2], cur[3])
					}
					if pa >= 255*255 {
						row[o], row[o+1], row[o+2], row[o+3] = uint8(pr/255), uint8(pg/255), uint8(pb/255), 255
					} else {
						bx := min(max(cur[0], 0), bgMaxX)
						by := min(max(cur[1], 0), bgMaxY)
						br, bg, bb := sampleBG(r.bg, r.ww, bx, by)
						ia := 255*255 - pa
						row[o] = uint8((pr*255 + br*ia/255 + 127*255) / (255 * 255))
						row[o+1] = uint8((pg*255 + bg*ia/255 + 127*255) / (255 * 255))
						row[o+2] = uint8((pb*255 + bb*ia/255 + 127*255) / (255 * 255))
						row[o+3] = 255
					}
					for k := 0; k < 4; k++ {
						cur[k] += st[k]
					}
				}
			}
		}
	})
}

// sampleBG samples an opaque RGBA buffer of width w bilinearly at an
// in-range position; channels are returned scaled by 255 (0..65025).
func sampleBG(pix []uint8, w int, fx, fy float32) (r, g, b uint32) {
	xi, yi := int(fx*256), int(fy*256)
	x0, y0 := xi>>8, yi>>8
	ax, ay := uint32(xi&255), uint32(yi&255)
	i := (y0*w + x0) * 4
	p00 := pix[i : i+8 : i+8]
	p10 := pix[i+w*4 : i+w*4+8 : i+w*4+8]
	w00 := (256 - ax) * (256 - ay)
	w01 := ax * (256 - ay)
	w10 := (256 - ax) * ay
	w11 := ax * ay
	r = (uint32(p00[0])*w00 + uint32(p00[4])*w01 + uint32(p10[0])*w10 + uint32(p10[4])*w11) * 255 >> 16
	g = (uint32(p00[1])*w00 + uint32(p00[5])*w01 + uint32(p10[1])*w10 + uint32(p10[5])*w11) * 255 >> 16
	b = (uint32(p00[2])*w00 + uint32(p00[6])*w01 + uint32(p10[2])*w10 + uint32(p10[6])*w11) * 255 >> 16
	return
}

// samplePerson samples the straight-alpha person layer (w x h) bilinearly
// with alpha weighting at (fx, fy); it returns premultiplied colour and
// alpha, all scaled to 0..65025. Outside the layer alpha is zero.
func samplePerson(pix []uint8, w, h int, fx, fy float32) (r, g, b, a uint32) {
	if fx < 0 || fy < 0 || fx >= float32(w-1) || fy >= float32(h-1) {
		return 0, 0, 0, 0
	}
	xi, yi := int(fx*256), int(fy*256)
	x0, y0 := xi>>8, yi>>8
	ax, ay := uint32(xi&255), uint32(yi&255)
	i := (y0*w + x0) * 4
	p00 := pix[i : i+8 : i+8]
	p10 := pix[i+w*4 : i+w*4+8 : i+w*4+8]
	if p00[3]|p00[7]|p10[3]|p10[7] == 0 {
		return 0, 0, 0, 0
	}
	// weights * alpha: (<=65536 * 255) fits in uint32
	w00 := (256 - ax) * (256 - ay) * uint32(p00[3]) >> 8
	w01 := ax * (256 - ay) * uint32(p00[7]) >> 8
	w10 := (256 - ax) * ay * uint32(p10[3]) >> 8
	w11 := ax * ay * uint32(p10[7]) >> 8
	// sum of weights is alpha*256 (0..65280)
	r = (uint32(p00[0])*w00 + uint32(p00[4])*w01 + uint32(p10[0])*w10 + uint32(p10[4])*w11) >> 8
	g = (uint32(p00[1])*w00 + uint32(p00[5])*w01 + uint32(p10[1])*w10 + uint32(p10[5])*w11) >> 8
	b = (uint32(p00[2])*w00 + uint32(p00[6])*w01 + uint32(p10[2])*w10 + uint32(p10[6])*w11) >> 8
	a = (w00 + w01 + w10 + w11) * 255 >> 8
	return
}
