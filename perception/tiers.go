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

// ToTier produces exactly TierSize(tier, ratio) pixels. The image is first
// centre-cropped to the ratio (never padded), then, when it must grow,
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
	crop := CropToRatio(img, ra, rb)
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
