// Package scene splits a photo into layers that the angle and video
// pipelines (and pose-control) re-render: the person as a soft-alpha layer,
// the background plate with the person removed and the hole filled, depth,
// and the pose. It also composites layers and extends a background to a
// larger canvas without black bars.
//
// Everything here is classical image processing on top of the perception
// models; the hole fill is OpenCV's Telea inpainting near the hole boundary
// blended into a push-pull membrane deeper inside, at reduced resolution,
// plus matched grain: not a generative inpainter.
package scene

import (
	"context"
	"errors"
	"fmt"
	"image"
	"math"
	"math/rand/v2"
	"slices"

	"fashiond/cv"
	"fashiond/perception"
	"fashiond/pipelines/capability/body"
	"fashiond/pipelines/capability/mask"
	"fashiond/pipelines/capability/raster"
)

// minPersonFrac is the smallest person layer, as a fraction of the image,
// that counts as a person (body.PosedPerson or a face must confirm it).
const minPersonFrac = 0.005

// Options selects optional layers.
type Options struct {
	// WithDepth asks for depth maps (model when installed, else a fallback).
	WithDepth bool
	// Subject (optional, image-sized, 255 on) is where the one person to
	// layer may be: on photos of several people, the chosen subject's
	// region with its blend band (body.Analysis). The pose is estimated
	// with everything outside it greyed out, and the person layer is
	// limited to it, so the other people stay in the background plate.
	Subject *image.Gray
}

// subjectGrey is the level that hides everything outside Options.Subject
// from the pose model.
const subjectGrey = 128

// Scene is an image split into layers. All rasters share the image's size
// and origin (0,0).
type Scene struct {
	// Image is the source photo.
	Image *image.RGBA
	// PersonMask is the person's soft alpha (255 = person).
	PersonMask *image.Gray
	// HoleMask is the binary (0/255) region that was filled in Background:
	// the person mask dilated.
	HoleMask *image.Gray
	// Background is the photo with the person removed and the hole filled.
	Background *image.RGBA
	// Depth is relative inverse depth of Image (1 = nearest); nil when not
	// requested.
	Depth *perception.Depth
	// BackgroundDepth is the depth of the Background plate (where the person
	// was, it continues the surrounding background); nil when not requested.
	BackgroundDepth *perception.Depth
	// DepthFallback is true when the depth model was unavailable and Depth
	// was synthesised from the person mask and a vertical ground gradient.
	DepthFallback bool
	// Pose is the pose model's result on Image.
	Pose *perception.Pose
	// Parsing is the skin/clothes/hair parsing of Image.
	Parsing *perception.Parsing
	// HasPerson reports whether a person covering a usable area was found.
	HasPerson bool
	// Notes says what was approximated (e.g. the depth fallback).
	Notes []string
}

// Layers splits img into person and background layers (and depth when
// asked). Images without a person give an empty mask and the unchanged
// background.
func Layers(ctx context.Context, p perception.Perception, img image.Image, o Options) (*Scene, error) {
	if p == nil {
		return nil, errors.New("scene: no perception models")
	}
	src := raster.RGBA(img)
	w, h := src.Rect.Dx(), src.Rect.Dy()
	if w < 16 || h < 16 {
		return nil, fmt.Errorf("scene: image %dx%d is too small (need at least 16x16)", w, h)
	}
	s := &Scene{Image: src}

	pose, err := p.Pose(ctx, OnlySubject(src, o.Subject))
	if err != nil {
		return nil, fmt.Errorf("scene: pose: %w", err)
	}
	s.Pose = pose
	sel, err := p.PersonMask(ctx, src)
	if err != nil {
		return nil, fmt.Errorf("scene: person mask: %w", err)
	}
	parse, err := p.Parse(ctx, src)
	if err != nil {
		return nil, fmt.Errorf("scene: parsing: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.Parsing = parse
	s.PersonMask = limitTo(refineMask(w, h, sel, pose, parse), o.Subject)
	area := MaskArea(s.PersonMask)
	s.HasPerson = area > minPersonFrac*float64(w*h)
	if s.HasPerson && !body.PosedPerson(pose, sel) {
		// A person is the pose model's body joints on the selfie
		// segmentation, face or no face (seen from behind, in profile);
		// not on the refined layer, which adds the pose model's own mask
		// and the clothes parsing and so covers a flat-lay garment.
		// Where too few joints are seen (a face close-up), a face
		// confirms it.
		faces, err := p.Faces(ctx, src)
		if err != nil {
			return nil, fmt.Errorf("scene: faces: %w", err)
		}
		s.HasPerson = len(faces) > 0 && faces[0].Score >= body.MinFaceScore
	}
	if !s.HasPerson {
		s.PersonMask = image.NewGray(image.Rect(0, 0, w, h))
	}

	s.HoleMask, s.Background, err = fillBackground(src, s.PersonMask)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	if o.WithDepth {
		d, derr := p.Depth(ctx, src)
		var bd *perception.Depth
		if derr == nil {
			bd, derr = p.Depth(ctx, s.Background)
		}
		if derr != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			s.DepthFallback = true
			s.Notes = append(s.Notes, fmt.Sprintf("depth model unavailable (%v): depth synthesised from the person mask and a vertical ground gradient", derr))
			s.BackgroundDepth = groundDepth(w, h)
			s.Depth = personDepth(s.BackgroundDepth, s.PersonMask)
		} else {
			s.Depth, s.BackgroundDepth = d, bd
		}
	}
	return s, nil
}

// OnlySubject is src with every pixel outside subject (nil: none) set to
// subjectGrey.
func OnlySubject(src *image.RGBA, subject *image.Gray) *image.RGBA {
	if subject == nil {
		return src
	}
	out := image.NewRGBA(src.Rect)
	copy(out.Pix, src.Pix)
	w, h := src.Rect.Dx(), src.Rect.Dy()
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			if subject.Pix[y*subject.Stride+x] < 128 {
				i := y*out.Stride + x*4
				out.Pix[i], out.Pix[i+1], out.Pix[i+2] = subjectGrey, subjectGrey, subjectGrey
			}
		}
	}
	return out
}

// limitTo scales m by subject (nil: m unchanged): m * subject / 255.
func limitTo(m, subject *image.Gray) *image.Gray {
	if subject == nil {
		return m
	}
	for i, v := range subject.Pix {
		m.Pix[i] = uint8((int(m.Pix[i])*int(v) + 127) / 255)
	}
	return m
}

// refineMask combines the selfie segmentation with the pose model's mask,
// adds skin/clothes/hair parsing near the person (hats, shoes, hair that
// the segmenter misses), drops stray islands and feathers the edge.
func refineMask(w, h int, sel *image.Gray, pose *perception.Pose, parse *perception.Parsing) *image.Gray {
	n := w * h
	base := make([]float32, n)
	add := func(g *image.Gray, into []float32) {
		if g == nil {
			return
		}
		if g.Rect.Dx() != w || g.Rect.Dy() != h {
			g = raster.ResizeGray(g, w, h)
		}
		for y := 0; y < h; y++ {
			row := g.Pix[y*g.Stride : y*g.Stride+w]
			for x, v := range row {
				if f := float32(v) / 255; f > into[y*w+x] {
					into[y*w+x] = f
				}
			}
		}
	}
	add(sel, base)
	if pose != nil {
		// The pose mask is coarse (256x256 logits): weight it lower so it
		// widens the selfie mask only where it is confident.
		pm := make([]float32, n)
		add(pose.Mask, pm)
		for i := range base {
			base[i] = max(base[i], pm[i]*0.9)
		}
	}
	core := make([]bool, n)
	for i, v := range base {
		core[i] = v > 0.5
	}
	if parse != nil {
		pan := make([]float32, n)
		add(parse.Skin, pan)
		add(parse.Clothes, pan)
		add(parse.Hair, pan)
		near := dilate(core, w, h, float32(0.03*float64(h)))
		for i := range base {
			if near[i] && pan[i] > base[i] {
				base[i] = pan[i]
			}
		}
	}
	// Harden the soft probabilities into a crisp matte, keep the person
	// component(s), fill small enclosed gaps, then feather.
	bin := make([]bool, n)
	for i, v := range base {
		bin[i] = v > 0.5
	}
	bin = keepLargeComponents(bin, w, h, 0.05)
	bin = fillHoles(bin, w, h, n/200)
	alpha := make([]float32, n)
	for i, v := range bin {
		if v {
			alpha[i] = 1
		}
	}
	r := max(1, int(math.Round(0.0007*diag(w, h))))
	raster.BoxBlur3(alpha, w, h, r)
	return mask.FromFloat(alpha, w, h)
}

// fillBackground removes the person: the mask dilated is inpainted at
// reduced resolution (Telea), upsampled into the hole, with grain matched to
// the surrounding background so the fill does not look smeared. Outside the
// hole the plate equals the image exactly.
func fillBackground(src *image.RGBA, mask *image.Gray) (*image.Gray, *image.RGBA, error) {
	w, h := src.Rect.Dx(), src.Rect.Dy()
	bg := image.NewRGBA(src.Rect)
	copy(bg.Pix, src.Pix)
	hole := threshold(mask, holeThreshold)
	if !slices.Contains(hole, true) {
		return image.NewGray(src.Rect), bg, nil
	}
	r := float32(max(4, holeGrow*diag(w, h)))
	hole = dilate(hole, w, h, r)
	holeMask := boolToGray(hole, w, h)
	up, err := inpaintSmall(src, holeMask)
	if err != nil {
		return nil, nil, err
	}
	sigma := grainSigma(src, hole, dilate(hole, w, h, r*2))
	rng := rand.New(rand.NewPCG(uint64(w)*7919+uint64(h), 0x5eed))
	noise := make([]float32, w*h)
	for i := range noise {
		if hole[i] {
			noise[i] = float32(rng.NormFloat64())
		}
	}
	// Slightly correlated grain reads as texture, not sensor noise.
	raster.BoxBlur3(noise, w, h, 1)
	gain := float32(sigma) * grainGain
	// Blend the fill in over the outer pixels of the hole: no seam, and no
	// person fringe left on the plate (re-renders move the person away
	// from where it was).
	inside := make([]bool, len(hole))
	for i, v := range hole {
		inside[i] = !v
	}
	dIn := distanceTransform(inside, w, h)
	for i, v := range hole {
		if !v {
			continue
		}
		a := min(max(dIn[i]/fillBlendPx, 0), 1)
		a = a * a * (3 - 2*a)
		n := noise[i] * gain
		for c := 0; c < 3; c++ {
			f := float32(up.Pix[i*4+c]) + n
			o := float32(src.Pix[i*4+c])
			bg.Pix[i*4+c] = uint8(min(max(o*(1-a)+f*a, 0), 255) + 0.5)
		}
		bg.Pix[i*4+3] = 255
	}
	return holeMask, bg, nil
}

// Background fill tuning.
const (
	// holeThreshold: person mask values above this are the hole.
	holeThreshold = 8
	// holeGrow: the hole grows by this share of the image diagonal (at
	// least 4 pixels).
	holeGrow = 0.006
	// fillWorkSide: the hole is inpainted at a working size of at most
	// this many pixels on the long side, with radius fillInpaintRadius.
	fillWorkSide      = 320
	fillInpaintRadius = 6
	// membraneFrom and membraneRamp: deeper than membraneFrom pixels
	// inside the (small) hole the push-pull membrane takes over from the
	// inpainting, fully membraneRamp pixels further in.
	membraneFrom = 5
	membraneRamp = 12
	// grainGain scales the measured grain; minGrain and maxGrain bound it.
	grainGain = 1.4
	minGrain  = 0.5
	maxGrain  = 8
	// madToSigma turns a median absolute deviation into a Gaussian sigma.
	madToSigma = 1.4826
	// fillBlendPx: the fill is blended in over the outer pixels of the hole.
	fillBlendPx = 3
)

// inpaintSmall fills the hole at a working size and returns it at full
// size. Telea continues edges and colours well near the hole boundary but
// draws fan-shaped streaks deep inside a large hole; there a push-pull
// membrane (smooth, like an out-of-focus background) takes over.
func inpaintSmall(src *image.RGBA, holeMask *image.Gray) (*image.RGBA, error) {
	w, h := src.Rect.Dx(), src.Rect.Dy()
	scale := math.Min(1, fillWorkSide/float64(max(w, h)))
	sw, sh := max(8, int(math.Round(float64(w)*scale))), max(8, int(math.Round(float64(h)*scale)))
	small := raster.ResizeFast(src, sw, sh)
	smallHole := raster.ResizeGray(holeMask, sw, sh)
	for i, v := range smallHole.Pix {
		if v > 0 {
			smallHole.Pix[i] = 255
		}
	}
	smallHole = Dilate(smallHole, 1.5)
	filled, err := cv.Inpaint(small, smallHole, fillInpaintRadius)
	if err != nil {
		return nil, fmt.Errorf("scene: background fill: %w", err)
	}
	smallIn := threshold(smallHole, 0)
	smooth := pushPull(small, smallIn)
	known := make([]bool, len(smallIn))
	for i, v := range smallIn {
		known[i] = !v
	}
	depthIn := distanceTransform(known, sw, sh)
	for i, v := range smallIn {
		if !v {
			continue
		}
		a := min(max((depthIn[i]-membraneFrom)/membraneRamp, 0), 1)
		for c := 0; c < 3; c++ {
			filled.Pix[i*4+c] = uint8(float32(filled.Pix[i*4+c])*(1-a) + float32(smooth.Pix[i*4+c])*a + 0.5)
		}
	}
	return raster.Resize(filled, w, h), nil
}

// grainSigma measures the photo's grain: the high-frequency residual's
// robust spread (median absolute deviation, insensitive to edges) in the
// ring around the hole, as a Gaussian sigma within [minGrain, maxGrain].
func grainSigma(src *image.RGBA, hole, ring []bool) float64 {
	blurred := image.NewRGBA(src.Rect)
	copy(blurred.Pix, src.Pix)
	raster.BoxBlurRGBA(blurred, 2)
	var hist [256]int
	cnt := 0
	for i := range ring {
		if !ring[i] || hole[i] {
			continue
		}
		d := (int(src.Pix[i*4]) + int(src.Pix[i*4+1]) + int(src.Pix[i*4+2]) -
			int(blurred.Pix[i*4]) - int(blurred.Pix[i*4+1]) - int(blurred.Pix[i*4+2])) / 3
		hist[min(255, abs(d))]++
		cnt++
	}
	sigma := 1.0
	if cnt > 0 {
		acc := 0
		for v, n := range hist {
			acc += n
			if 2*acc >= cnt {
				sigma = madToSigma * float64(v)
				break
			}
		}
	}
	return math.Max(minGrain, math.Min(sigma, maxGrain))
}

// groundDepth is the fallback background depth: far at the top, near at the
// bottom (a ground plane seen from standing height).
func groundDepth(w, h int) *perception.Depth {
	d := &perception.Depth{W: w, H: h, Data: make([]float32, w*h)}
	for y := 0; y < h; y++ {
		t := float64(y) / float64(max(1, h-1))
		v := float32(0.1 + 0.6*math.Pow(t, 1.5))
		row := d.Data[y*w : (y+1)*w]
		for x := range row {
			row[x] = v
		}
	}
	return d
}

// personDepth places the person in front of the ground at the depth of
// their lowest point, with a rounded bulge from the silhouette.
func personDepth(ground *perception.Depth, mask *image.Gray) *perception.Depth {
	w, h := ground.W, ground.H
	d := &perception.Depth{W: w, H: h, Data: append([]float32(nil), ground.Data...)}
	b := MaskBounds(mask, 128)
	if b.Empty() {
		return d
	}
	foot := ground.At(w/2, b.Max.Y-1)
	outside := make([]bool, w*h)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			outside[y*w+x] = mask.Pix[y*mask.Stride+x] < 128
		}
	}
	dist := distanceTransform(outside, w, h)
	rad := float32(max(1, b.Dx()/4))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			i := y*w + x
			a := float32(mask.Pix[y*mask.Stride+x]) / 255
			if a == 0 {
				continue
			}
			bulge := min(max(dist[i]/rad, 0), 1)
			pd := min(max(foot+0.12+0.1*bulge, 0), 1)
			d.Data[i] = d.Data[i]*(1-a) + pd*a
		}
	}
	return d
}

// Composite alpha-blends fg over dst with its top-left corner at `at`;
// alpha has fg's size (its bounds relative to fg's origin) and 255 means
// fully fg.
func Composite(dst *image.RGBA, fg image.Image, alpha *image.Gray, at image.Point) {
	f := raster.RGBA(fg)
	fw, fh := f.Rect.Dx(), f.Rect.Dy()
	aw, ah := alpha.Rect.Dx(), alpha.Rect.Dy()
	cw, ch := min(fw, aw), min(fh, ah)
	r := image.Rect(at.X, at.Y, at.X+cw, at.Y+ch).Intersect(dst.Rect)
	if r.Empty() {
		return
	}
	raster.ParallelRows(r.Dy(), func(y0, y1 int) {
		for y := r.Min.Y + y0; y < r.Min.Y+y1; y++ {
			sy := y - at.Y
			srow := f.Pix[sy*f.Stride:]
			arow := alpha.Pix[sy*alpha.Stride:]
			drow := dst.Pix[(y-dst.Rect.Min.Y)*dst.Stride:]
			for x := r.Min.X; x < r.Max.X; x++ {
				sx := x - at.X
				a := uint32(arow[sx])
				if a == 0 {
					continue
				}
				di := (x - dst.Rect.Min.X) * 4
				si := sx * 4
				if a == 255 {
					copy(drow[di:di+3], srow[si:si+3])
					drow[di+3] = 255
					continue
				}
				for c := 0; c < 3; c++ {
					drow[di+c] = uint8((uint32(srow[si+c])*a + uint32(drow[di+c])*(255-a) + 127) / 255)
				}
				drow[di+3] = uint8(max(uint32(drow[di+3]), a))
			}
		}
	})
}

// Extend places bg centred on a w x h canvas. Where the canvas is larger,
// the background continues by reflection that blurs progressively with
// distance from the original edge (no black bars); where it is smaller, bg
// is centre-cropped.
func Extend(bg image.Image, w, h int) *image.RGBA {
	b := bg.Bounds()
	return ExtendAt(bg, w, h, image.Pt((w-b.Dx())/2, (h-b.Dy())/2))
}

// ExtendAt is Extend with bg's top-left corner placed at `at` on the canvas
// (which may be negative: bg is then cropped).
func ExtendAt(bg image.Image, w, h int, at image.Point) *image.RGBA {
	src := raster.RGBA(bg)
	bw, bh := src.Rect.Dx(), src.Rect.Dy()
	ox, oy := at.X, at.Y
	out := image.NewRGBA(image.Rect(0, 0, w, h))
	raster.ParallelRows(h, func(y0, y1 int) {
		for y := y0; y < y1; y++ {
			sy := reflect(y-oy, bh)
			srow := src.Pix[sy*src.Stride:]
			orow := out.Pix[y*out.Stride:]
			for x := 0; x < w; x++ {
				sx := reflect(x-ox, bw)
				copy(orow[x*4:x*4+4], srow[sx*4:sx*4+4])
				orow[x*4+3] = 255
			}
		}
	})
	if ox <= 0 && oy <= 0 && ox+bw >= w && oy+bh >= h {
		return out // the canvas lies inside bg: a plain crop
	}
	// Blur the reflected margins more the farther they are from the edge.
	blur := image.NewRGBA(out.Rect)
	copy(blur.Pix, out.Pix)
	raster.BoxBlurRGBA(blur, max(2, max(w, h)/60))
	ramp := float32(max(8, max(w, h)/12))
	raster.ParallelRows(h, func(y0, y1 int) {
		for y := y0; y < y1; y++ {
			dy := 0
			if y < oy {
				dy = oy - y
			} else if y >= oy+bh {
				dy = y - (oy + bh) + 1
			}
			for x := 0; x < w; x++ {
				dx := 0
				if x < ox {
					dx = ox - x
				} else if x >= ox+bw {
					dx = x - (ox + bw) + 1
				}
				if dx == 0 && dy == 0 {
					continue
				}
				a := min(max(float32(math.Hypot(float64(dx), float64(dy)))/ramp, 0), 1)
				a = a * (2 - a) // ease out: blur reaches full strength quickly
				i := y*out.Stride + x*4
				for c := 0; c < 3; c++ {
					out.Pix[i+c] = uint8(float32(out.Pix[i+c])*(1-a) + float32(blur.Pix[i+c])*a + 0.5)
				}
			}
		}
	})
	return out
}

// ExtendDepthAt extends a depth map like Extend (reflection; depth is
// smooth so no blur is needed), with d's top-left corner at `at`.
func ExtendDepthAt(d *perception.Depth, w, h int, at image.Point) *perception.Depth {
	out := &perception.Depth{W: w, H: h, Data: make([]float32, w*h)}
	for y := 0; y < h; y++ {
		sy := reflect(y-at.Y, d.H)
		for x := 0; x < w; x++ {
			out.Data[y*w+x] = d.Data[sy*d.W+reflect(x-at.X, d.W)]
		}
	}
	return out
}

// ResizeDepth scales a depth map to w x h (bilinear).
func ResizeDepth(d *perception.Depth, w, h int) *perception.Depth {
	out := &perception.Depth{W: w, H: h, Data: make([]float32, w*h)}
	sx := float32(d.W) / float32(w)
	sy := float32(d.H) / float32(h)
	raster.ParallelRows(h, func(y0, y1 int) {
		for y := y0; y < y1; y++ {
			fy := (float32(y)+0.5)*sy - 0.5
			for x := 0; x < w; x++ {
				out.Data[y*w+x] = raster.SampleFloat(d.Data, d.W, d.H, (float32(x)+0.5)*sx-0.5, fy)
			}
		}
	})
	return out
}

// reflect maps i into [0,n) by mirror reflection (period 2n).
func reflect(i, n int) int {
	if n == 1 {
		return 0
	}
	p := 2 * n
	i %= p
	if i < 0 {
		i += p
	}
	if i >= n {
		i = p - 1 - i
	}
	return i
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}
