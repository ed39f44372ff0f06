package perception

import (
	"context"
	"fmt"
	"image"
	"sync"

	"github.com/disintegration/imaging"

	"fashiond/inference"
)

// Super-resolution tiling. Tiles are srTile x srTile input pixels on the
// CPU; on CUDA a tile covers the whole image up to srTileGPUMax (a 1k image
// is one call: 125 ms for 1000² on an H100, against about 1.2 s in 64-px
// tiles, ../shared/gpu/README.md). Adjacent tiles overlap by at least
// srOverlap pixels, and overlapping outputs are blended with linear
// feathering weights over 4*srOverlap output pixels.
// Images smaller than a tile are padded by reflection and cropped after.
const (
	srTile       = 128
	srTileGPUMax = 1024 // input side of the largest tile on CUDA (output 4096²: 200 MB of float32)
	srTileAlign  = 32   // CUDA tile sides are multiples of this (fewer distinct shapes for the arena)
	srOverlap    = 16
	srScale      = 4
)

// srTileFor is the tile side for a w x h image on device.
func srTileFor(device string, w, h int) int {
	if device != "cuda" {
		return srTile
	}
	t := (max(w, h) + srTileAlign - 1) / srTileAlign * srTileAlign
	return min(max(t, srTile), srTileGPUMax)
}

// tilePositions returns the tile origins along an axis of length n (n >= t):
// steps of t-overlap, the last tile aligned to the end.
func tilePositions(n, t, overlap int) []int {
	if n <= t {
		return []int{0}
	}
	step := t - overlap
	var ps []int
	for p := 0; p+t < n; p += step {
		ps = append(ps, p)
	}
	return append(ps, n-t)
}

// reflectIndex maps any integer to 0..n-1 by mirror reflection (no edge
// repeat), periodically for indexes far outside.
func reflectIndex(i, n int) int {
	if n == 1 {
		return 0
	}
	period := 2 * (n - 1)
	i %= period
	if i < 0 {
		i += period
	}
	if i >= n {
		i = period - i
	}
	return i
}

// reflectPad extends img to w x h (w, h >= its size) by mirror reflection.
func reflectPad(img *image.NRGBA, w, h int) *image.NRGBA {
	sw, sh := img.Rect.Dx(), img.Rect.Dy()
	if sw == w && sh == h {
		return img
	}
	dst := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		sy := reflectIndex(y, sh)
		srow := img.Pix[sy*img.Stride:]
		drow := dst.Pix[y*dst.Stride:]
		for x := 0; x < w; x++ {
			sx := reflectIndex(x, sw)
			copy(drow[x*4:x*4+4], srow[sx*4:sx*4+4])
		}
	}
	return dst
}

// feather is the blending weight of output offset i (0..n-1) in a tile that
// has a neighbour before (lo) and/or after (hi): a linear ramp over f pixels.
func feather(i, n, f int, lo, hi bool) float32 {
	w := float32(1)
	if lo && i < f {
		w = min(w, (float32(i)+0.5)/float32(f))
	}
	if hi && n-1-i < f {
		w = min(w, (float32(n-1-i)+0.5)/float32(f))
	}
	return w
}

type srTileJob struct {
	x, y int
	in   []float32 // 3*t*t, NCHW planes
	out  []float32 // 3*(4t)*(4t)
}

// SuperResolve upscales img x4 with the given model. Any size works: the
// image is tiled (128 px on the CPU, up to 1024 on CUDA; overlap 16,
// feathered blending); tiles run in
// batches of equal size (several per call, and merged with other requests'
// tiles when batching is on).
func (s *Suite) SuperResolve(ctx context.Context, img image.Image, m SRModel) (image.Image, error) {
	if err := checkImage(img); err != nil {
		return nil, fmt.Errorf("super-resolution: %w", err)
	}
	if m == "" {
		m = SRFast
	}
	if m != SRFast && m != SRQuality {
		return nil, fmt.Errorf("super-resolution: unknown model %q", m)
	}
	mod, err := s.model(ctx, string(m))
	if err != nil {
		return nil, err
	}
	src := asNRGBA(img)
	w, h := src.Rect.Dx(), src.Rect.Dy()
	t := srTileFor(mod.device, w, h)
	pw, ph := max(w, t), max(h, t)
	src = reflectPad(src, pw, ph)
	xs, ys := tilePositions(pw, t, srOverlap), tilePositions(ph, t, srOverlap)

	ow, oh := w*srScale, h*srScale
	dst := image.NewNRGBA(image.Rect(0, 0, ow, oh))
	T := t * srScale
	F := srOverlap * srScale
	// Accumulate one tile row at a time in a band of output rows, so a 1 MP
	// input never needs a 16 MP float buffer.
	band := newSRBand(pw * srScale)
	for yi, y := range ys {
		jobs := make([]*srTileJob, len(xs))
		for xi, x := range xs {
			j := &srTileJob{x: x, y: y, in: make([]float32, 3*t*t)}
			packTile(j.in, src, x, y, t)
			jobs[xi] = j
		}
		if err := s.runSRTiles(ctx, mod, jobs, t); err != nil {
			return nil, err
		}
		for xi, j := range jobs {
			band.add(j, T, F, xi > 0, xi < len(xs)-1, yi > 0, yi < len(ys)-1)
		}
		next := ph * srScale
		if yi+1 < len(ys) {
			next = ys[yi+1] * srScale
		}
		band.flush(dst, next)
	}
	if !src.Opaque() {
		// Keep transparency (cut-out garments): the model sees RGB only, the
		// alpha channel is upscaled with Lanczos.
		a := image.NewGray(image.Rect(0, 0, w, h))
		for y := 0; y < h; y++ {
			row := src.Pix[y*src.Stride:]
			for x := 0; x < w; x++ {
				a.Pix[y*a.Stride+x] = row[x*4+3]
			}
		}
		up := imaging.Resize(a, ow, oh, imaging.Lanczos)
		for y := 0; y < oh; y++ {
			for x := 0; x < ow; x++ {
				dst.Pix[y*dst.Stride+x*4+3] = up.Pix[y*up.Stride+x*4]
			}
		}
	}
	return dst, nil
}

// packTile writes the t x t tile at (x0, y0) as NCHW RGB 0..1.
func packTile(dst []float32, img *image.NRGBA, x0, y0, t int) {
	plane := t * t
	const k = 1.0 / 255
	for y := 0; y < t; y++ {
		row := img.Pix[(y0+y)*img.Stride+x0*4:]
		o := y * t
		for x := 0; x < t; x++ {
			p := row[x*4 : x*4+3 : x*4+3]
			dst[o+x] = float32(p[0]) * k
			dst[plane+o+x] = float32(p[1]) * k
			dst[2*plane+o+x] = float32(p[2]) * k
		}
	}
}

// runSRTiles runs equal-size tiles: behind a batcher every tile is its own
// request, all submitted at once (the batcher stacks up to max_batch of
// them, with other requests' tiles too); otherwise one tile per call.
func (s *Suite) runSRTiles(ctx context.Context, mod *loaded, jobs []*srTileJob, t int) error {
	in := int64(t)
	outN := 3 * t * srScale * t * srScale
	runGroup := func(g []*srTileJob) error {
		data := make([]float32, 0, len(g)*3*t*t)
		for _, j := range g {
			data = append(data, j.in...)
		}
		out, err := mod.Run(ctx, []inference.Tensor{{Shape: []int64{int64(len(g)), 3, in, in}, Data: data}})
		if err != nil {
			return err
		}
		if len(out) != 1 || len(out[0].Data) != len(g)*outN {
			got := 0
			if len(out) > 0 {
				got = len(out[0].Data)
			}
			return fmt.Errorf("super-resolution: %s returned %d outputs, %d values for %d tiles, want 1 output of %d", mod.name, len(out), got, len(g), len(g)*outN)
		}
		for i, j := range g {
			j.out = out[0].Data[i*outN : (i+1)*outN]
		}
		return nil
	}
	if !mod.batched {
		for _, j := range jobs {
			if err := runGroup([]*srTileJob{j}); err != nil {
				return err
			}
		}
		return nil
	}
	var wg sync.WaitGroup
	errs := make([]error, len(jobs))
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = runGroup([]*srTileJob{j})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// srBand accumulates weighted RGB of output rows still being written.
type srBand struct {
	w    int
	base int         // first output row held
	rows [][]float32 // per row: r, g, b, weight interleaved (4*w)
}

func newSRBand(w int) *srBand { return &srBand{w: w} }

func (b *srBand) row(y int) []float32 {
	i := y - b.base
	for len(b.rows) <= i {
		b.rows = append(b.rows, make([]float32, 4*b.w))
	}
	return b.rows[i]
}

func (b *srBand) add(j *srTileJob, T, F int, left, right, top, bottom bool) {
	plane := T * T
	ox, oy := j.x*srScale, j.y*srScale
	wx := make([]float32, T)
	for i := range wx {
		wx[i] = feather(i, T, F, left, right)
	}
	for y := 0; y < T; y++ {
		wy := feather(y, T, F, top, bottom)
		r := b.row(oy + y)[ox*4:]
		o := y * T
		for x := 0; x < T; x++ {
			wt := wx[x] * wy
			r[x*4] += clampUnit(j.out[o+x]) * wt
			r[x*4+1] += clampUnit(j.out[plane+o+x]) * wt
			r[x*4+2] += clampUnit(j.out[2*plane+o+x]) * wt
			r[x*4+3] += wt
		}
	}
}

// flush writes every held row above `until` into dst (rows beyond dst's
// height, from reflection padding, are dropped).
func (b *srBand) flush(dst *image.NRGBA, until int) {
	ow, oh := dst.Rect.Dx(), dst.Rect.Dy()
	n := 0
	for i, r := range b.rows {
		y := b.base + i
		if y >= until {
			break
		}
		n++
		if y >= oh {
			continue
		}
		d := dst.Pix[y*dst.Stride:]
		for x := 0; x < ow; x++ {
			wt := r[x*4+3]
			if wt <= 0 {
				wt = 1
			}
			d[x*4] = unit8(r[x*4] / wt)
			d[x*4+1] = unit8(r[x*4+1] / wt)
			d[x*4+2] = unit8(r[x*4+2] / wt)
			d[x*4+3] = 255
		}
	}
	b.rows = b.rows[n:]
	b.base += n
}

func clampUnit(v float32) float32 {
	if !(v > 0) {
		return 0
	}
	if v > 1 {
		return 1
	}
	return v
}
