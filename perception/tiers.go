package perception

import (
	"context"
	"fmt"
	"image"
	"math"

	"github.com/disintegration/imaging"
)

// Upscale policies for ToTier.
const (
	PolicyAuto      = "auto"
	PolicySRFast    = "sr-fast"
	PolicySRQuality = "sr-quality"
	PolicyLanczos   = "lanczos"
)

// CropToRatio returns the largest centred crop of img whose aspect is a:b
// (to within one pixel).
func CropToRatio(img image.Image, a, b int) image.Image {
	r := img.Bounds()
	w, h := r.Dx(), r.Dy()
	cw, ch := ratioCrop(w, h, a, b)
	if cw == w && ch == h {
		return img
	}
	x0 := r.Min.X + (w-cw)/2
	y0 := r.Min.Y + (h-ch)/2
	return imaging.Crop(img, image.Rect(x0, y0, x0+cw, y0+ch))
}

// Subject framing of ratio crops (SubjectBox, CropToRatioKeeping).
const (
	// subjectMaskLevel is the person-mask value from which a pixel is
	// the subject.
	subjectMaskLevel = 128
	// subjectLineFrac: a row (column) belongs to the subject's box when at
	// least this fraction of its pixels are subject, which drops specks.
	subjectLineFrac = 0.01
	// subjectMinArea: a person mask smaller than this fraction of the
	// image is no subject (the centred crop is used).
	subjectMinArea = 0.01
	// subjectMargin is the room kept around the subject, as a fraction of
	// its height, when the crop has it.
	subjectMargin = 0.03
)

// SubjectBox is the bounding box of the people in mask (a person mask
// of img, PersonMask): from the top of the head (hair, hat) to the
// lowest visible body part; empty when less than subjectMinArea of the
// image is person.
func SubjectBox(mask *image.Gray) image.Rectangle {
	b := mask.Bounds()
	w, h := b.Dx(), b.Dy()
	rows, cols := make([]int, h), make([]int, w)
	area := 0
	for y := range h {
		line := mask.Pix[y*mask.Stride : y*mask.Stride+w]
		for x, v := range line {
			if v >= subjectMaskLevel {
				rows[y]++
				cols[x]++
				area++
			}
		}
	}
	if float64(area) < subjectMinArea*float64(w*h) {
		return image.Rectangle{}
	}
	y0, y1 := span(rows, max(1, int(subjectLineFrac*float64(w))))
	x0, x1 := span(cols, max(1, int(subjectLineFrac*float64(h))))
	if y1 <= y0 || x1 <= x0 {
		return image.Rectangle{}
	}
	return image.Rect(x0, y0, x1, y1).Add(b.Min)
}

// span is the first and one past the last index whose count is at least
// least (0, 0 when none is).
func span(counts []int, least int) (lo, hi int) {
	lo = -1
	for i, n := range counts {
		if n >= least {
			if lo < 0 {
				lo = i
			}
			hi = i + 1
		}
	}
	if lo < 0 {
		return 0, 0
	}
	return lo, hi
}

// Framing is what a ratio crop keeps (CropToRatioKeeping), in the
// image's coordinates; either may be empty.
type Framing struct {
	// Subject is the people's box, head to the lowest visible body part
	// (SubjectBox).
	Subject image.Rectangle
	// Face is the main face's box: it is kept when the subject, or its
	// head, does not fit.
	Face image.Rectangle
}

// RatioCropRect is the largest a:b crop of an image with bounds r (the
// size of CropToRatio's), placed by moving the centred crop as little as
// possible to contain, the first that fits, on each axis: the subject
// with a margin of subjectMargin of its height, the subject; vertically
// then its head with the margin (the subject's top to the bottom of the
// face), its head, the face. When none fits, the crop is centred on the
// face, or without one keeps the subject's top (the head) and loses its
// lowest part; horizontally on the subject. An empty framing gives the
// centred crop.
func RatioCropRect(r image.Rectangle, a, b int, f Framing) image.Rectangle {
	w, h := r.Dx(), r.Dy()
	cw, ch := ratioCrop(w, h, a, b)
	if cw == w && ch == h {
		return r
	}
	frame := image.Rect(0, 0, w, h)
	s := f.Subject.Sub(r.Min).Intersect(frame)
	face := f.Face.Sub(r.Min).Intersect(frame)
	m := int(subjectMargin * float64(s.Dy()))
	xs := []extent{{s.Min.X - m, s.Max.X + m, false}, {s.Min.X, s.Max.X, false}}
	ys := []extent{{s.Min.Y - m, s.Max.Y + m, false}, {s.Min.Y, s.Max.Y, false}}
	if !face.Empty() {
		xs = append(xs, extent{face.Min.X, face.Max.X, true})
		ys = append(ys, extent{s.Min.Y - m, face.Max.Y + m, false}, extent{s.Min.Y, face.Max.Y, false}, extent{face.Min.Y, face.Max.Y, true})
	} else if !s.Empty() {
		ys = append(ys, extent{s.Min.Y - m, s.Min.Y - m + ch, false}) // the head first
	}
	x0, y0 := place(w, cw, xs), place(h, ch, ys)
	return image.Rect(x0, y0, x0+cw, y0+ch).Add(r.Min)
}

// extent is a span [lo, hi) of the image that a crop should contain along
// one axis; centre: the crop is centred on it (a face) rather than moved
// just enough from the centred crop to contain it.
type extent struct {
	lo, hi int
	centre bool
}

// place is the start of a crop of length c within [0, n): the centred
// start moved as little as possible to contain the first of extents
// (clipped to [0, n), in order of preference) that fits, or centred on it
// when it says so; when none fits, the crop centred on the last non-empty
// one; with none, the centred start.
func place(n, c int, extents []extent) int {
	centred := (n - c) / 2
	if c >= n {
		return 0
	}
	clamp := func(v int) int { return min(max(v, 0), n-c) }
	var last extent
	for _, e := range extents {
		l, h := max(e.lo, 0), min(e.hi, n)
		if h <= l {
			continue
		}
		if h-l <= c && !e.centre {
			return clamp(min(max(centred, h-c), l))
		}
		last = extent{l, h, true}
		if h-l <= c {
			break
		}
	}
	if !last.centre {
		return centred
	}
	return clamp((last.lo + last.hi - c) / 2)
}

// ratioCrop is the size of the largest a:b crop of a w x h image.
func ratioCrop(w, h, a, b int) (cw, ch int) {
	cw, ch = w, h
	if w*b > h*a { // too wide
		cw = max(1, min(w, (h*a+b/2)/b))
	} else {
		ch = max(1, min(h, (w*b+a/2)/a))
	}
	return cw, ch
}

// upscalePlan decides how ToTier reaches the target from a crop of cw x ch.
// It returns the SR model to run first, or "" for pure Lanczos.
func (s *Suite) upscalePlan(ctx context.Context, policy string, cw, ch, tw, th int) (SRModel, error) {
	if cw >= tw && ch >= th {
		return "", nil // already large enough: downscale only
	}
	switch policy {
	case PolicyLanczos:
		return "", nil
	case PolicySRFast:
		return SRFast, nil
	case PolicySRQuality:
		return SRQuality, nil
	}
	// auto: on CUDA the quality model is cheap enough for every tier.
	if s.srDevice(ctx) == "cuda" {
		return SRQuality, nil
	}
	// auto on CPU. Measured with `fashiond bench` (1000x1000 -> 4000x4000,
	// 2-core build machine, ORT 1.30, 2 intra-op threads, machine idle):
	//   Lanczos                      0.20 s
	//   SR-fast (81 tiles of 128 px) 18 s   (0.25 s per tile)
	//   SR-quality                   253 s  (3.0 s per tile; 2.3 GB peak RSS)
	// (under load average 10-15 from other work: 1.6 s, 121 s and 960 s).
	// So auto uses Lanczos on the CPU, except for small sources that need
	// at least 2x: at most autoSRMaxTiles SR-fast tiles (~4 s), e.g.
	// 256x256 -> 1k.
	factor := math.Max(float64(tw)/float64(cw), float64(th)/float64(ch))
	if factor >= 2 && srTiles(cw, ch, srTile) <= autoSRMaxTiles {
		return SRFast, nil
	}
	return "", nil
}

// autoSRMaxTiles is the largest SR-fast job (in 128-px tiles) that "auto"
// runs on the CPU.
const autoSRMaxTiles = 16

// srTiles is the number of t-pixel tiles SuperResolve cuts a w x h image into.
func srTiles(w, h, t int) int {
	return len(tilePositions(max(w, t), t, srOverlap)) * len(tilePositions(max(h, t), t, srOverlap))
}

// srDevice is the execution provider super-resolution runs (or would run)
// on: the loaded SR model's, else what the runtime would choose.
func (s *Suite) srDevice(ctx context.Context) string {
	s.mu.Lock()
	for _, n := range []string{string(SRQuality), string(SRFast)} {
		if sl := s.slots[n]; sl != nil && sl.ready != nil {
			d := sl.ready.device
			s.mu.Unlock()
			return d
		}
	}
	s.mu.Unlock()
	pref := ""
	if m, ok := s.repo.Manifest(string(SRQuality)); ok {
		pref = m.Device
	}
	d, _, err := s.rt.DeviceFor(pref)
	if err != nil || d == "" {
		return "cpu"
	}
	return d
}

// RatioCrop is the largest a:b crop of img, placed to keep the people
// in it whole (PersonMask, SubjectBox; when they do not fit, the main
// face of Faces: RatioCropRect); img's bounds when it has the ratio
// already.
func (s *Suite) RatioCrop(ctx context.Context, img image.Image, a, b int) (image.Rectangle, error) {
	r := img.Bounds()
	if cw, ch := ratioCrop(r.Dx(), r.Dy(), a, b); cw == r.Dx() && ch == r.Dy() {
		return r, nil
	}
	mask, err := s.PersonMask(ctx, img)
	if err != nil {
		return image.Rectangle{}, fmt.Errorf("framing the crop: %w", err)
	}
	f := Framing{Subject: SubjectBox(mask).Add(r.Min)}
	if cw, ch := ratioCrop(r.Dx(), r.Dy(), a, b); f.Subject.Dx() > cw || f.Subject.Dy() > ch {
		// The subject does not fit: its head, or its face, is kept.
		faces, err := s.Faces(ctx, img)
		if err != nil {
			return image.Rectangle{}, fmt.Errorf("framing the crop: %w", err)
		}
		if len(faces) > 0 {
			fb := faces[0].Box
			f.Face = image.Rect(int(fb[0]), int(fb[1]), int(math.Ceil(fb[2])), int(math.Ceil(fb[3]))).Add(r.Min)
		}
	}
	return RatioCropRect(r, a, b, f), nil
}

// ToTier produces exactly TierSize(tier, ratio) pixels. The image is first
// cropped to the ratio (never padded), placed to keep the people in it
// whole (head to the lowest visible body part) when the crop allows it,
// else their head or face (RatioCrop), then, when it must grow,
// super-resolved (fast or quality model per the upscale policy and device)
// and finally Lanczos-resized to the exact size. ratio "" means the image's
// own nearest spec ratio (RatioOf).
func (s *Suite) ToTier(ctx context.Context, img image.Image, tier, ratio string) (image.Image, error) {
	return s.ToTierWith(ctx, img, tier, ratio, s.opts.UpscalePolicy)
}

// ToTierWith is ToTier with an explicit upscale policy ("auto", "sr-fast",
// "sr-quality" or "lanczos") instead of the suite's.
func (s *Suite) ToTierWith(ctx context.Context, img image.Image, tier, ratio, policy string) (image.Image, error) {
	switch policy {
	case PolicyAuto, PolicySRFast, PolicySRQuality, PolicyLanczos:
	default:
		return nil, fmt.Errorf("quality tier: unknown upscale policy %q", policy)
	}
	if err := checkImage(img); err != nil {
		return nil, fmt.Errorf("quality tier: %w", err)
	}
	b := img.Bounds()
	if ratio == "" {
		ratio = RatioOf(b.Dx(), b.Dy())
	}
	tw, th, err := TierSize(tier, ratio)
	if err != nil {
		return nil, err
	}
	ra, rb, _ := ParseRatio(ratio)
	cr, err := s.RatioCrop(ctx, img, ra, rb)
	if err != nil {
		return nil, fmt.Errorf("quality tier: %w", err)
	}
	crop := img
	if cr != b {
		crop = imaging.Crop(img, cr)
	}
	cb := crop.Bounds()
	m, err := s.upscalePlan(ctx, policy, cb.Dx(), cb.Dy(), tw, th)
	if err != nil {
		return nil, err
	}
	if m != "" {
		up, err := s.SuperResolve(ctx, crop, m)
		if err != nil {
			return nil, fmt.Errorf("quality tier %s: %w", tier, err)
		}
		crop = up
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cb = crop.Bounds()
	if cb.Dx() == tw && cb.Dy() == th {
		return asNRGBA(crop), nil
	}
	return imaging.Resize(crop, tw, th, imaging.Lanczos), nil
}
