package recolour

import (
	"context"
	_ "embed"
	"errors"
	"image"
	"math"
	"strings"
	"sync"
	"testing"

	"fashiond/internal/golden"
	"fashiond/internal/pipelinetest"
	"fashiond/pipelines/capability/raster"
)

// goldenList holds the recorded digests (golden.Digest) of this package's
// real runs; testdata/golden.sha256 says when and how they were recorded.
//
//go:embed testdata/golden.sha256
var goldenList string

type fixture struct {
	src *image.RGBA
	r   *Regions
}

var (
	fixMu sync.Mutex
	fixes = map[string]*fixture{}
)

// photo returns a test photo and its garment regions (computed once).
func photo(t *testing.T, name string) *fixture {
	t.Helper()
	fixMu.Lock()
	defer fixMu.Unlock()
	if f, ok := fixes[name]; ok {
		return f
	}
	src := raster.CopyRGBA(pipelinetest.Image(t, name))
	r, err := FindRegions(context.Background(), pipelinetest.Perception(t), src)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{src, r}
	fixes[name] = f
	return f
}

func pixLab(img *image.RGBA, i int) (float64, float64, float64) {
	w := img.Rect.Dx()
	p := img.Pix[(i/w)*img.Stride+(i%w)*4:]
	return rgbToLab([3]uint8{p[0], p[1], p[2]})
}

// ssimOutside is the mean SSIM (luma, 8x8 windows, stride 4) over the
// windows that contain no pixel of the mask (alpha > 0).
func ssimOutside(a, b *image.RGBA, mask *raster.Plane) (float64, int) {
	w, h := a.Rect.Dx(), a.Rect.Dy()
	y := func(img *image.RGBA, x, yy int) float64 {
		p := img.Pix[yy*img.Stride+x*4:]
		return 0.299*float64(p[0]) + 0.587*float64(p[1]) + 0.114*float64(p[2])
	}
	const c1, c2 = (0.01 * 255) * (0.01 * 255), (0.03 * 255) * (0.03 * 255)
	var sum float64
	n := 0
	for y0 := 0; y0+8 <= h; y0 += 4 {
	win:
		for x0 := 0; x0+8 <= w; x0 += 4 {
			var ma, mb, va, vb, cov float64
			for yy := y0; yy < y0+8; yy++ {
				for xx := x0; xx < x0+8; xx++ {
					if mask.P[yy*w+xx] > 0 {
						continue win
					}
					ma += y(a, xx, yy)
					mb += y(b, xx, yy)
				}
			}
			ma, mb = ma/64, mb/64
			for yy := y0; yy < y0+8; yy++ {
				for xx := x0; xx < x0+8; xx++ {
					da, db := y(a, xx, yy)-ma, y(b, xx, yy)-mb
					va, vb, cov = va+da*da, vb+db*db, cov+da*db
				}
			}
			va, vb, cov = va/63, vb/63, cov/63
			sum += ((2*ma*mb + c1) * (2*cov + c2)) / ((ma*ma + mb*mb + c1) * (va + vb + c2))
			n++
		}
	}
	return sum / float64(n), n
}

// TestNamedColourInRegion is the acceptance test: on real photos, the
// named colour's hue is in the garment region (±15°) and the rest of the
// photo is unchanged (SSIM >= 0.97 over windows outside the region).
func TestNamedColourInRegion(t *testing.T) {
	cases := []struct {
		photo, prompt, region string
	}{
		{"images/fashn_model.webp", "emerald t-shirt", RegionTop},
		{"images/fashn_model.webp", "burgundy shirt", RegionTop},
		{"images/fashn_model.webp", "cobalt trousers", RegionBottom},
		{"images/fashn_model.webp", "olive chinos", RegionBottom},
		{"images/fashn_model.webp", "mustard jumpsuit", RegionFull},
		{"images/astronaut.png", "navy top", RegionTop},
		{"images/astronaut.png", "teal jacket", RegionTop},
		{"images/astronaut.png", "lavender suit", RegionFull},
	}
	for _, c := range cases {
		t.Run(c.photo+"/"+c.prompt, func(t *testing.T) {
			f := photo(t, c.photo)
			spec, err := Parse(c.prompt)
			if err != nil {
				t.Fatal(err)
			}
			out, err := DressRegions(f.src, f.r, spec, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := golden.CheckDigest(goldenList, c.photo+"/"+c.prompt, out); err != nil {
				t.Error(err)
			}
			alpha := map[string]*raster.Plane{RegionTop: f.r.top, RegionBottom: f.r.bottom, RegionFull: f.r.full}[c.region]
			_, ta, tb := rgbToLab(spec.Garments[0].Colour.RGB)
			target := hueDeg(ta, tb)
			var sx, sy, de float64
			n, in := 0, 0
			for i, a := range alpha.P {
				if a < 0.9 {
					continue
				}
				in++
				l1, a1, b1 := pixLab(out, i)
				l0, a0, b0 := pixLab(f.src, i)
				de += math.Sqrt((l1-l0)*(l1-l0) + (a1-a0)*(a1-a0) + (b1-b0)*(b1-b0))
				if math.Hypot(a1, b1) < 6 {
					continue
				}
				h := hueDeg(a1, b1) * math.Pi / 180
				sx, sy = sx+math.Cos(h), sy+math.Sin(h)
				n++
			}
			if in < 2000 {
				t.Fatalf("region %s has only %d solid pixels", c.region, in)
			}
			got := math.Atan2(sy, sx) * 180 / math.Pi
			if got < 0 {
				got += 360
			}
			coherence := math.Hypot(sx, sy) / float64(n)
			t.Logf("target hue %.0f, region hue %.0f (coherence %.2f, %d/%d chromatic), mean ΔE %.0f", target, got, coherence, n, in, de/float64(in))
			if d := hueDiff(got, target); d > 15 {
				t.Errorf("hue in region %.0f, want %.0f ±15", got, target)
			}
			if coherence < 0.8 {
				t.Errorf("hue not coherent in the region (%.2f)", coherence)
			}
			if de/float64(in) < 15 {
				t.Errorf("mean ΔE in region %.1f: barely changed", de/float64(in))
			}
			s, windows := ssimOutside(f.src, out, alpha)
			t.Logf("SSIM outside %.4f over %d windows", s, windows)
			if s < 0.97 || windows < 1000 {
				t.Errorf("outside the region SSIM %.4f over %d windows, want >= 0.97", s, windows)
			}
		})
	}
}

// TestGarmentRegionsOnRealPhotos checks the masks against what the photos
// show: the white T-shirt and the khaki trousers of fashn_model, the
// one-piece suit of the astronaut (cut off at the waist: no bottom).
func TestGarmentRegionsOnRealPhotos(t *testing.T) {
	f := photo(t, "images/fashn_model.webp")
	at := func(r *Regions, m *raster.Plane, x, y int) float32 { return m.P[y*r.w+x] }
	checks := []struct {
		name string
		m    *raster.Plane
		x, y int
		lo   bool
	}{
		{"chest is top", f.r.top, 560, 450, false},
		{"thigh is bottom", f.r.bottom, 300, 720, false},
		{"shin is bottom", f.r.bottom, 420, 1050, false},
		{"face is not clothes", f.r.full, 470, 230, true},
		{"hat is not clothes", f.r.full, 470, 90, true},
		{"background is not clothes", f.r.full, 760, 150, true},
		{"boot is not clothes", f.r.full, 200, 1000, true},
		{"boot toe is not clothes", f.r.full, 110, 1190, true},
		{"boot heel is not clothes", f.r.full, 250, 1100, true},
		{"forearm is not clothes", f.r.full, 700, 560, true},
		{"chest is not bottom", f.r.bottom, 560, 450, true},
	}
	for _, c := range checks {
		v := at(f.r, c.m, c.x, c.y)
		if (c.lo && v > 0.2) || (!c.lo && v < 0.8) {
			t.Errorf("fashn_model %s: alpha %.2f at (%d,%d)", c.name, v, c.x, c.y)
		}
	}
	a := photo(t, "images/astronaut.png")
	if a.r.hipsInFrame {
		t.Error("astronaut: upper-body crop taken as showing the hips")
	}
	if v := at(a.r, a.r.top, 200, 450); v < 0.8 {
		t.Errorf("astronaut lower suit not top: %.2f", v)
	}
	if v := at(a.r, a.r.full, 230, 120); v > 0.2 {
		t.Errorf("astronaut face in clothes: %.2f", v)
	}
}

// TestStripesArePeriodic: horizontal stripes vary along the torso axis
// with the expected period and hardly across it; vertical ones the
// other way round.
func TestStripesArePeriodic(t *testing.T) {
	f := photo(t, "images/fashn_model.webp")
	for _, c := range []struct {
		prompt   string
		vertical bool
	}{{"navy shirt with white horizontal stripes", false}, {"white shirt with black vertical stripes", true}} {
		spec, err := Parse(c.prompt)
		if err != nil {
			t.Fatal(err)
		}
		out, err := DressRegions(f.src, f.r, spec, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := golden.CheckDigest(goldenList, c.prompt, out); err != nil {
			t.Error(err)
		}
		// Profiles through the chest along the pattern's body axes.
		lum := func(x, y float64) float64 {
			l, _, _ := pixLab(out, int(math.Round(y))*f.r.w+int(math.Round(x)))
			return l
		}
		inTop := func(x, y float64) bool { return f.r.top.P[int(math.Round(y))*f.r.w+int(math.Round(x))] > 0.95 }
		cx, cy := 560.0, 480.0
		ux, uy := -f.r.upY, f.r.upX  // across
		vx, vy := -f.r.upX, -f.r.upY // down
		var down, across []float64
		for s := -90.0; s < 150; s++ {
			if x, y := cx+s*vx, cy+s*vy; inTop(x, y) {
				down = append(down, lum(x, y))
			}
		}
		for s := -110.0; s < 130; s++ {
			if x, y := cx+s*ux, cy+s*uy; inTop(x, y) {
				across = append(across, lum(x, y))
			}
		}
		along, perp := down, across
		if c.vertical {
			along, perp = across, down
		}
		if len(along) < 150 || len(perp) < 150 {
			t.Fatalf("%s: profiles too short (%d, %d)", c.prompt, len(along), len(perp))
		}
		sa, sp := stddev(along), stddev(perp)
		period := bestPeriod(along, 8, 80)
		want := f.r.shoulder / 7
		t.Logf("%s: std along %.1f, across %.1f; period %d px (pattern period %.0f)", c.prompt, sa, sp, period, want)
		if sa < 20 || sa < 3*sp {
			t.Errorf("%s: std along %.1f vs across %.1f: not stripes in the expected direction", c.prompt, sa, sp)
		}
		if math.Abs(float64(period)-want) > 0.25*want {
			t.Errorf("%s: dominant period %d px, want %.0f ±25%%", c.prompt, period, want)
		}
	}
}

func stddev(v []float64) float64 {
	var m, s float64
	for _, x := range v {
		m += x
	}
	m /= float64(len(v))
	for _, x := range v {
		s += (x - m) * (x - m)
	}
	return math.Sqrt(s / float64(len(v)))
}

// bestPeriod returns the lag in [lo, hi] with the highest autocorrelation.
func bestPeriod(v []float64, lo, hi int) int {
	m := 0.0
	for _, x := range v {
		m += x
	}
	m /= float64(len(v))
	best, bestC := 0, math.Inf(-1)
	for lag := lo; lag <= hi && lag < len(v)/2; lag++ {
		var c float64
		for i := 0; i+lag < len(v); i++ {
			c += (v[i] - m) * (v[i+lag] - m)
		}
		c /= float64(len(v) - lag)
		if c > bestC {
			best, bestC = lag, c
		}
	}
	return best
}

func TestPatternsChangeTexture(t *testing.T) {
	f := photo(t, "images/fashn_model.webp")
	for _, prompt := range []string{"red gingham shirt", "emerald polka dot shirt", "red and navy plaid shirt",
		"houndstooth shirt", "blush floral shirt", "charcoal pinstripe shirt", "red checked shirt", "denim shirt"} {
		spec, err := Parse(prompt)
		if err != nil {
			t.Fatal(err)
		}
		out, err := DressRegions(f.src, f.r, spec, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := golden.CheckDigest(goldenList, prompt, out); err != nil {
			t.Error(err)
		}
		// Texture: luminance std inside the chest box, against the plain
		// white T-shirt's own.
		var in, orig []float64
		for y := 420; y < 600; y++ {
			for x := 480; x < 660; x++ {
				i := y*f.r.w + x
				if f.r.top.P[i] > 0.95 {
					l, _, _ := pixLab(out, i)
					l0, _, _ := pixLab(f.src, i)
					in, orig = append(in, l), append(orig, l0)
				}
			}
		}
		s, s0 := stddev(in), stddev(orig)
		t.Logf("%s: L* std %.1f (original %.1f)", prompt, s, s0)
		if spec.Garments[0].Pattern == PatternDenim {
			// A fine twill on denim blue, not a bold motif: check the colour.
			_, da, db := rgbToLab(palette["denim"])
			var sx, sy float64
			for y := 420; y < 600; y++ {
				for x := 480; x < 660; x++ {
					if i := y*f.r.w + x; f.r.top.P[i] > 0.95 {
						_, a, b := pixLab(out, i)
						sx, sy = sx+a, sy+b
					}
				}
			}
			if d := hueDiff(hueDeg(sx, sy), hueDeg(da, db)); d > 15 {
				t.Errorf("denim: hue off by %.0f degrees", d)
			}
			continue
		}
		if s < s0+6 {
			t.Errorf("%s: texture std %.1f vs original %.1f", prompt, s, s0)
		}
	}
}

func TestMissingRegionIsAnError(t *testing.T) {
	f := photo(t, "images/astronaut.png")
	spec, _ := Parse("olive trousers")
	_, err := DressRegions(f.src, f.r, spec, 0)
	var re *RegionError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "found no bottom region") {
		t.Fatalf("err = %v", err)
	}
}

// BenchmarkDress measures painting one garment at 832x1248 (per prompt)
// and the region finding including the three model runs.
func BenchmarkDress(b *testing.B) {
	src := raster.CopyRGBA(pipelinetest.Image(b, "images/fashn_model.webp"))
	p := pipelinetest.Perception(b)
	r, err := FindRegions(context.Background(), p, src)
	if err != nil {
		b.Fatal(err)
	}
	for _, prompt := range []string{"burgundy t-shirt", "navy shirt with white stripes", "blush floral dress"} {
		spec, _ := Parse(prompt)
		b.Run(strings.ReplaceAll(prompt, " ", "_"), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := DressRegions(src, r, spec, int64(i)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("regions+models", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := FindRegions(context.Background(), p, src); err != nil {
				b.Fatal(err)
			}
		}
	})
}
