package imagetovideo

import (
	"image"
	"math"
	"sort"

	"fashiond/pipelines/capability/raster"
	"fashiond/pipelines/capability/scene"
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
	pl := r.place(s)
	bg := raster.Resize(s.Background, pl.cw, pl.ch)
	world, err := extend(bg, r.ww, r.wh, image.Pt(pl.ox, pl.oy))
	if err != nil {
		return nil, err
	}
	r.bg = world.Pix
	r.backgroundDepth(s, pl)
	r.pivot = defaultPivot
	if !s.HasPerson || pl.box.Empty() {
		return r, nil
	}
	r.pivot = personPivot(s, r.pivot)
	r.personLayer(s, pl)
	r.motion = newBodyMotion(s.Pose, pl.k, float64(pl.ox), float64(pl.oy), r.pbox, r.wh)
	if r.motion != nil && s.Parsing != nil && s.Parsing.Hair != nil {
		cw, ch, ox, oy := pl.cw, pl.ch, pl.ox, pl.oy
		hg := scene.Feather(raster.ResizeGray(s.Parsing.Hair, cw, ch), max(1, ch/hairFeatherDiv))
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
		r.personDepth(s, pl)
	}
	return r, nil
}

// Layout tuning.
const (
	// maxCoverCrop: the source covers the view (cropped) when that scales
	// it at most this much more than containing it would; else it is
	// contained and the world extended around it.
	maxCoverCrop = 1.25
	// defaultDepth and defaultPivot: the background depth without a depth
	// map, and the person's depth without one.
	defaultDepth = 0.3
	defaultPivot = 0.6
	// pivotMaskMin: the person's depth is the median under mask values
	// above this (every third pixel).
	pivotMaskMin = 200
	// personMargin: the person layer's box grows by this many pixels.
	personMargin = 2
	// hairFeatherDiv: the hair mask is feathered by the content height
	// over this.
	hairFeatherDiv = 200
	// depthBlurDiv: the person's depth is blurred by its height over this;
	// minDepthWeight: cells with less mask weight are unknown.
	depthBlurDiv   = 60
	minDepthWeight = 0.02
)

// placement is where the source lies on the world canvas: its scale k, its
// size cw x ch and offset (ox, oy), and the person's box in the source.
type placement struct {
	k              float64
	cw, ch, ox, oy int
	box            image.Rectangle
}

// place fits the source to the output ("cover" when the crop is small,
// else "contain+extend") and centres the person horizontally while the
// content still covers the view.
func (r *renderer) place(s *scene.Scene) placement {
	w, h := r.W, r.H
	sw, sh := s.Image.Rect.Dx(), s.Image.Rect.Dy()
	kc := math.Min(float64(w)/float64(sw), float64(h)/float64(sh))
	kv := math.Max(float64(w)/float64(sw), float64(h)/float64(sh))
	k := kc
	r.Framing = "contain+extend"
	if kv/kc <= maxCoverCrop {
		k, r.Framing = kv, "cover"
	}
	pl := placement{k: k, cw: max(1, int(math.Round(float64(sw)*k))), ch: max(1, int(math.Round(float64(sh)*k)))}
	pl.ox, pl.oy = (r.ww-pl.cw)/2, (r.wh-pl.ch)/2
	pl.box = scene.MaskBounds(s.PersonMask, 128)
	if r.Framing == "cover" && !pl.box.Empty() {
		pc := float64(pl.box.Min.X+pl.box.Max.X) / 2 * k
		pl.ox = int(math.Round(float64(r.ww)/2 - pc))
		lo, hi := (r.ww+w)/2-pl.cw, (r.ww-w)/2
		pl.ox = min(max(pl.ox, lo), hi)
	}
	return pl
}

// backgroundDepth lays the background depth out on the world canvas at
// 1/depthDown (a constant without a depth map).
func (r *renderer) backgroundDepth(s *scene.Scene, pl placement) {
	r.dw, r.dh = (r.ww+depthDown-1)/depthDown, (r.wh+depthDown-1)/depthDown
	if s.BackgroundDepth != nil {
		bd := scene.ResizeDepth(s.BackgroundDepth, max(1, pl.cw/depthDown), max(1, pl.ch/depthDown))
		r.depth = scene.ExtendDepthAt(bd, r.dw, r.dh, image.Pt(pl.ox/depthDown, pl.oy/depthDown)).Data
		return
	}
	r.depth = make([]float32, r.dw*r.dh)
	for i := range r.depth {
		r.depth[i] = defaultDepth
	}
}

// personPivot is the person's depth: the median of the depth under the
// confident mask (pivot without a depth map).
func personPivot(s *scene.Scene, pivot float32) float32 {
	if s.Depth == nil {
		return pivot
	}
	var v []float32
	for i, a := range s.PersonMask.Pix {
		if a > pivotMaskMin && i%3 == 0 {
			v = append(v, s.Depth.Data[i])
		}
	}
	if len(v) == 0 {
		return pivot
	}
	sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
	return v[len(v)/2]
}

// personLayer cuts the person layer in world coordinates (its bounding box
// plus a margin): straight RGB with the person mask as alpha.
func (r *renderer) personLayer(s *scene.Scene, pl placement) {
	k, cw, ch, ox, oy, box := pl.k, pl.cw, pl.ch, pl.ox, pl.oy, pl.box
	img := raster.Resize(s.Image, cw, ch)
	alpha := raster.ResizeGray(s.PersonMask, cw, ch)
	pb := image.Rect(int(float64(box.Min.X)*k)+ox-personMargin, int(float64(box.Min.Y)*k)+oy-personMargin,
		int(math.Ceil(float64(box.Max.X)*k))+ox+personMargin, int(math.Ceil(float64(box.Max.Y)*k))+oy+personMargin)
	pb = pb.Intersect(image.Rect(ox, oy, ox+cw, oy+ch))
	r.pbox = pb
	r.person = make([]uint8, pb.Dx()*pb.Dy()*4)
	for y := pb.Min.Y; y < pb.Max.Y; y++ {
		for x := pb.Min.X; x < pb.Max.X; x++ {
			sx, sy := x-ox, y-oy
			si := sy*img.Stride + sx*4
			di := ((y-pb.Min.Y)*pb.Dx() + (x - pb.Min.X)) * 4
			r.person[di] = img.Pix[si]
			r.person[di+1] = img.Pix[si+1]
			r.person[di+2] = img.Pix[si+2]
			r.person[di+3] = alpha.Pix[sy*alpha.Stride+sx]
		}
	}
}

// personDepth sets the person's own relief (r.pdepth): the model's depth
// smoothed inside the person (normalised blur) so the layer bends gently
// instead of tearing, continued smoothly outside the silhouette so the
// mapping has no jump at the edge (a jump would cut the layer); and its
// largest gradient per world pixel.
func (r *renderer) personDepth(s *scene.Scene, pl placement) {
	sw4, sh4 := max(1, pl.cw/depthDown), max(1, pl.ch/depthDown)
	d4 := scene.ResizeDepth(s.Depth, sw4, sh4)
	m4 := raster.ResizeGray(s.PersonMask, sw4, sh4)
	num := make([]float32, sw4*sh4)
	den := make([]float32, sw4*sh4)
	for i := range num {
		a := float32(m4.Pix[i]) / 255
		num[i], den[i] = d4.Data[i]*a, a
	}
	rad := max(1, sh4/depthBlurDiv)
	raster.BoxBlur3(num, sw4, sh4, rad)
	raster.BoxBlur3(den, sw4, sh4, rad)
	known := make([]bool, r.dw*r.dh)
	for y := 0; y < sh4; y++ {
		wy := y + pl.oy/depthDown
		if wy < 0 || wy >= r.dh {
			continue
		}
		for x := 0; x < sw4; x++ {
			wx := x + pl.ox/depthDown
			if wx < 0 || wx >= r.dw {
				continue
			}
			i := y*sw4 + x
			if den[i] > minDepthWeight {
				r.pdepth[wy*r.dw+wx] = num[i] / den[i]
				known[wy*r.dw+wx] = true
			}
		}
	}
	growFill(r.pdepth, known, r.dw, r.dh)
	for y := 0; y+1 < r.dh; y++ {
		for x := 0; x+1 < r.dw; x++ {
			i := y*r.dw + x
			g := max(abs32(r.pdepth[i+1]-r.pdepth[i]), abs32(r.pdepth[i+r.dw]-r.pdepth[i])) / depthDown
			r.pgrad = max(r.pgrad, g)
		}
	}
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
	v := r.viewFor(cam)
	gw, gh := r.W/gridStep+2, r.H/gridStep+2
	if len(r.grid) != gw*gh*4 {
		r.grid = make([]float32, gw*gh*4)
	}
	g := r.grid
	pbx, pby := float32(r.pbox.Min.X), float32(r.pbox.Min.Y)
	raster.ParallelRows(gh, func(j0, j1 int) {
		for j := j0; j < j1; j++ {
			for i := 0; i < gw; i++ {
				wx, wy, px, py := r.node(&v, i, j)
				k := (j*gw + i) * 4
				g[k], g[k+1], g[k+2], g[k+3] = wx, wy, px-pbx, py-pby
			}
		}
	})
	span := r.personSpan(cam, &v)
	raster.ParallelRows(r.H, func(y0, y1 int) {
		for y := y0; y < y1; y++ {
			r.renderRow(out, y, gw, span)
		}
	})
}

// Rendering tuning.
const (
	// maxFold: the person's own relief moves its parts by different
	// amounts; too much relief for the move would fold the mapping (a
	// tear), so it is limited to keep the mapping's slope change under
	// this.
	maxFold = 0.6
	// bgDepthStart: the background depth search starts this much nearer
	// than the person.
	bgDepthStart = 0.3
	// personReach: the person's box, grown by this share of its height
	// (plus the camera's truck and 4 pixels), bounds where the person can
	// reach on screen.
	personReach = 0.08
)

// view is one frame's camera in the renderer's terms: screen and world
// centres, zoom, parallax, shift, truck and the person's relief factor.
type view struct {
	csx, csy, cwx, cwy float32
	zoom, par          float32
	shx, shy, trx, try float32
	relief             float32
}

// viewFor derives the frame's view from the camera.
func (r *renderer) viewFor(cam camera) view {
	v := view{
		csx: float32(r.W) / 2, csy: float32(r.H) / 2,
		cwx: float32(r.ww) / 2, cwy: float32(r.wh) / 2,
		zoom: float32(cam.Zoom), par: float32(cam.Parallax),
		shx: float32(cam.ShiftX), shy: float32(cam.ShiftY),
		trx: float32(cam.TruckX), try: float32(cam.TruckY),
		relief: 1,
	}
	if fold := r.pgrad * (abs32(v.trx) + abs32(v.try) + (v.zoom-1)*v.par*float32(max(r.W, r.H))/2); fold > maxFold {
		v.relief = maxFold / fold
	}
	return v
}

// node maps grid node (i, j): the background's world position (wx, wy),
// found by iterating on the background depth, and the person layer's
// (px, py), on the person's relief and body motion.
func (r *renderer) node(v *view, i, j int) (wx, wy, px, py float32) {
	pivot := r.pivot
	invD := 1 / float32(depthDown)
	sy := float32(j*gridStep) - v.csy - v.shy
	sx := float32(i*gridStep) - v.csx - v.shx
	d := pivot - bgDepthStart
	for it := 0; it < 4; it++ {
		dd := d - pivot
		s := 1 + (v.zoom-1)*(1+v.par*dd)
		wx = v.cwx + (sx-v.trx*dd)/s
		wy = v.cwy + (sy-v.try*dd)/s
		if it < 3 {
			d = raster.SampleFloat(r.depth, r.dw, r.dh, wx*invD, wy*invD)
		}
	}
	if r.pdepth != nil {
		dp := pivot
		for it := 0; it < 3; it++ {
			dd := (dp - pivot) * v.relief
			s := 1 + (v.zoom-1)*(1+v.par*dd)
			px = v.cwx + (sx-v.trx*dd)/s
			py = v.cwy + (sy-v.try*dd)/s
			if it < 2 {
				dp = raster.SampleFloat(r.pdepth, r.dw, r.dh, px*invD, py*invD)
			}
		}
	} else {
		px, py = v.cwx+sx/v.zoom, v.cwy+sy/v.zoom
	}
	if r.motion != nil {
		dx, dy := r.motion.at(px, py)
		px -= dx
		py -= dy
	}
	return wx, wy, px, py
}

// screenSpan is the screen rectangle [x0,x1) x [y0,y1) the person can
// reach (empty without a person).
type screenSpan struct{ x0, x1, y0, y1 int }

// personSpan bounds the screen rows and columns the person can reach.
func (r *renderer) personSpan(cam camera, v *view) screenSpan {
	var sp screenSpan
	if r.person == nil {
		return sp
	}
	m := float32(personReach*float64(r.pbox.Dy())) + float32(math.Abs(cam.TruckX)+math.Abs(cam.TruckY)) + 4
	sp.x0 = int(v.csx + v.zoom*(float32(r.pbox.Min.X)-m-v.cwx) + v.shx)
	sp.x1 = int(v.csx+v.zoom*(float32(r.pbox.Max.X)+m-v.cwx)+v.shx) + 1
	sp.y0 = int(v.csy + v.zoom*(float32(r.pbox.Min.Y)-m-v.cwy) + v.shy)
	sp.y1 = int(v.csy+v.zoom*(float32(r.pbox.Max.Y)+m-v.cwy)+v.shy) + 1
	sp.x0, sp.x1 = max(sp.x0, 0), min(sp.x1, r.W)
	sp.y0, sp.y1 = max(sp.y0, 0), min(sp.y1, r.H)
	return sp
}

// renderRow draws output row y: it interpolates the mapping grid (gw
// nodes a row) along each cell and blends the person layer (within the
// person's span) over the background.
func (r *renderer) renderRow(out *image.RGBA, y, gw int, sp screenSpan) {
	const inv = 1.0 / gridStep
	g := r.grid
	row := out.Pix[y*out.Stride : y*out.Stride+r.W*4]
	j := y / gridStep
	fy := float32(y-j*gridStep) * inv
	personRow := r.person != nil && y >= sp.y0 && y < sp.y1
	pbw, pbh := r.pbox.Dx(), r.pbox.Dy()
	bgMaxX, bgMaxY := float32(r.ww-1)-0.01, float32(r.wh-1)-0.01
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
			if personRow && x >= sp.x0 && x < sp.x1 {
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
