package style

import (
	"context"
	"image"
	"image/color"
	"math"
	"strings"
	"sync"
	"testing"

	"fashiond/internal/pipelinetest"
)

const photo = "images/fashn_model.webp"

var (
	outMu    sync.Mutex
	outCache = map[string]*image.RGBA{}
)

// styled returns photo in style id (seed 1, no mask), cached across tests.
func styled(t *testing.T, id string) *image.RGBA {
	t.Helper()
	outMu.Lock()
	defer outMu.Unlock()
	if o, ok := outCache[id]; ok {
		return o
	}
	o, err := Apply(pipelinetest.Image(t, photo), id, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	outCache[id] = o
	return o
}

// meanAbsDiff is the mean absolute difference over R, G, B (0..255),
// restricted to pixels where sel returns true (nil: all).
func meanAbsDiff(a, b image.Image, sel func(x, y int) bool) float64 {
	ab := a.Bounds()
	bb := b.Bounds()
	var s float64
	n := 0
	for y := 0; y < ab.Dy(); y++ {
		for x := 0; x < ab.Dx(); x++ {
			if sel != nil && !sel(x, y) {
				continue
			}
			r1, g1, b1, _ := a.At(ab.Min.X+x, ab.Min.Y+y).RGBA()
			r2, g2, b2, _ := b.At(bb.Min.X+x, bb.Min.Y+y).RGBA()
			s += math.Abs(float64(r1)-float64(r2)) + math.Abs(float64(g1)-float64(g2)) + math.Abs(float64(b1)-float64(b2))
			n += 3
		}
	}
	if n == 0 {
		return 0
	}
	return s / float64(n) / 257
}

func TestEachStyleChangesThePhoto(t *testing.T) {
	src := pipelinetest.Image(t, photo)
	for _, id := range IDs {
		t.Run(id, func(t *testing.T) {
			out := styled(t, id)
			if out.Bounds() != image.Rect(0, 0, 832, 1248) {
				t.Fatalf("bounds %v, want the source size", out.Bounds())
			}
			if d := meanAbsDiff(src, out, nil); d < 6 {
				t.Errorf("%s changed the photo by only %.2f/255 on average (want >= 6)", id, d)
			} else {
				t.Logf("%s: mean abs diff %.1f", id, d)
			}
		})
	}
}

func TestStylesDifferFromEachOther(t *testing.T) {
	worst, wa, wb := math.Inf(1), "", ""
	for i, a := range IDs {
		for _, b := range IDs[i+1:] {
			d := meanAbsDiff(styled(t, a), styled(t, b), nil)
			if d < worst {
				worst, wa, wb = d, a, b
			}
			if d < 4 {
				t.Errorf("%s and %s differ by only %.2f/255", a, b, d)
			}
		}
	}
	t.Logf("closest pair: %s/%s at %.1f", wa, wb, worst)
}

func TestDeterministicPerSeed(t *testing.T) {
	src := pipelinetest.Image(t, "images/astronaut.png")
	for _, id := range []string{"analog", "ugc", "studio"} {
		a, err := Apply(src, id, Options{Seed: 7})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := Apply(src, id, Options{Seed: 7})
		if d := meanAbsDiff(a, b, nil); d != 0 {
			t.Errorf("%s: same seed gave different results (%.3f)", id, d)
		}
		c, _ := Apply(src, id, Options{Seed: 8})
		d := meanAbsDiff(a, c, nil)
		if l := looks[id]; l.grain > 0 || l.chromaNoise > 0 {
			if d < 0.5 {
				t.Errorf("%s: seeds 7 and 8 gave near-identical grain (%.3f)", id, d)
			}
		} else if d != 0 {
			t.Errorf("%s has no grain but the seed changed it (%.3f)", id, d)
		}
	}
}

func TestUnknownStyle(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 4, 4))
	for _, id := range []string{"", "Studio", "vintage", "y2k "} {
		if _, err := Apply(img, id, Options{}); err == nil || !strings.Contains(err.Error(), "unknown styleId") {
			t.Errorf("Apply(%q) err = %v, want unknown styleId", id, err)
		}
		if Valid(id) {
			t.Errorf("Valid(%q) = true", id)
		}
	}
	for _, id := range IDs {
		if !Valid(id) || len(Describe(id)) < 20 {
			t.Errorf("%s: Valid=%v Describe=%q", id, Valid(id), Describe(id))
		}
	}
	if len(IDs) != 12 || len(looks) != 12 {
		t.Fatalf("want 12 styles, have %d ids and %d looks", len(IDs), len(looks))
	}
}

func TestOddSizesAndOrigins(t *testing.T) {
	src := pipelinetest.Image(t, "images/astronaut.png")
	sub := src.(interface {
		SubImage(image.Rectangle) image.Image
	}).SubImage(image.Rect(100, 50, 301, 170))
	tiny := image.NewRGBA(image.Rect(5, 5, 6, 7))
	tiny.Set(5, 5, color.RGBA{200, 30, 30, 255})
	mask := image.NewGray(image.Rect(0, 0, 3, 3)) // wrong size on purpose: resampled
	mask.Pix[4] = 255
	for _, img := range []image.Image{sub, tiny} {
		for _, id := range IDs {
			out, err := Apply(img, id, Options{Seed: 3, PersonMask: mask})
			if err != nil {
				t.Fatal(err)
			}
			b := img.Bounds()
			if out.Bounds() != image.Rect(0, 0, b.Dx(), b.Dy()) {
				t.Fatalf("%s: bounds %v for input %v", id, out.Bounds(), b)
			}
		}
	}
	if _, err := Apply(image.NewRGBA(image.Rect(0, 0, 0, 5)), "y2k", Options{}); err == nil {
		t.Error("empty image accepted")
	}
}

// TestBackdropStylesTreatBackground checks, with the real person mask, that
// studio and minimalist change the background much more than the person,
// and that the background ends up light and nearly neutral.
func TestBackdropStylesTreatBackground(t *testing.T) {
	for _, name := range []string{photo, "images/astronaut.png"} {
		src := pipelinetest.Image(t, name)
		mask := personMask(t, src)
		bg := func(x, y int) bool { return mask.GrayAt(x, y).Y < 10 }
		fg := func(x, y int) bool { return mask.GrayAt(x, y).Y > 245 }
		for _, id := range []string{"studio", "minimalist"} {
			out, err := Apply(src, id, Options{Seed: 1, PersonMask: mask})
			if err != nil {
				t.Fatal(err)
			}
			dbg, dfg := meanAbsDiff(src, out, bg), meanAbsDiff(src, out, fg)
			t.Logf("%s %s: background diff %.1f, person diff %.1f", name, id, dbg, dfg)
			if dbg < 2*dfg || dbg < 25 {
				t.Errorf("%s %s: background diff %.1f, person diff %.1f (want bg >= 25 and >= 2x person)", name, id, dbg, dfg)
			}
			// Backdrop: bright and neutral.
			var sl, ss float64
			n := 0
			for y := 0; y < out.Rect.Dy(); y += 4 {
				for x := 0; x < out.Rect.Dx(); x += 4 {
					if !bg(x, y) {
						continue
					}
					c := out.RGBAAt(x, y)
					mx := max(c.R, c.G, c.B)
					mn := min(c.R, c.G, c.B)
					sl += float64(c.R)*0.2126 + float64(c.G)*0.7152 + float64(c.B)*0.0722
					ss += float64(mx - mn)
					n++
				}
			}
			if sl/float64(n) < 170 || ss/float64(n) > 20 {
				t.Errorf("%s %s: backdrop mean luma %.0f, mean chroma %.0f (want >= 170 and <= 20)", name, id, sl/float64(n), ss/float64(n))
			}
		}
	}
}

// TestFlashLightsSubject: with the mask, the flash brightens the person
// relative to the background.
func TestFlashLightsSubject(t *testing.T) {
	src := pipelinetest.Image(t, photo)
	mask := personMask(t, src)
	out, err := Apply(src, "flash", Options{PersonMask: mask})
	if err != nil {
		t.Fatal(err)
	}
	lum := func(img image.Image, sel func(x, y int) bool) float64 {
		var s float64
		n := 0
		b := img.Bounds()
		for y := 0; y < b.Dy(); y += 2 {
			for x := 0; x < b.Dx(); x += 2 {
				if sel(x, y) {
					r, g, bb, _ := img.At(b.Min.X+x, b.Min.Y+y).RGBA()
					s += (0.2126*float64(r) + 0.7152*float64(g) + 0.0722*float64(bb)) / 257
					n++
				}
			}
		}
		return s / float64(n)
	}
	fg := func(x, y int) bool { return mask.GrayAt(x, y).Y > 245 }
	bg := func(x, y int) bool { return mask.GrayAt(x, y).Y < 10 }
	ratioIn := lum(src, fg) / lum(src, bg)
	ratioOut := lum(out, fg) / lum(out, bg)
	t.Logf("person/background luma ratio %.2f -> %.2f", ratioIn, ratioOut)
	if ratioOut < 1.3*ratioIn {
		t.Errorf("flash: person/background ratio %.2f -> %.2f, want +30%%", ratioIn, ratioOut)
	}
}

func BenchmarkApply1MP(b *testing.B) {
	src := pipelinetest.Image(b, photo) // 832x1248 = 1.04 MP
	for _, id := range IDs {
		b.Run(id, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := Apply(src, id, Options{Seed: int64(i)}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkApplyWithMask covers the subject-aware paths (backdrops, flash).
func BenchmarkApplyWithMask(b *testing.B) {
	src := pipelinetest.Image(b, photo)
	mask, err := SubjectMask(context.Background(), pipelinetest.Perception(b), src)
	if err != nil {
		b.Fatal(err)
	}
	for _, id := range []string{"studio", "minimalist", "flash"} {
		b.Run(id, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := Apply(src, id, Options{Seed: int64(i), PersonMask: mask}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
