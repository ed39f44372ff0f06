package angles

import (
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"fashiond/models"
	"fashiond/pipelines"
	"fashiond/pipelines/pipelinetest"
	"fashiond/pipelines/scene"
)

func dump(name string, img image.Image) {
	if os.MkdirAll("/tmp/video", 0o755) != nil {
		return
	}
	f, err := os.Create(filepath.Join("/tmp/video", name))
	if err != nil {
		return
	}
	defer f.Close()
	_ = png.Encode(f, img)
}

// mad is the mean absolute RGB difference of two same-size images.
func mad(a, b image.Image) float64 {
	ra, rb := scene.RGBA(a), scene.RGBA(b)
	var s float64
	for i := 0; i < len(ra.Pix); i += 4 {
		for c := 0; c < 3; c++ {
			s += math.Abs(float64(ra.Pix[i+c]) - float64(rb.Pix[i+c]))
		}
	}
	return s / float64(len(ra.Pix)/4*3)
}

// shiftedMAD is the smallest mean abs difference of a and b over horizontal
// shifts of up to a fifth of the width (the overlap only).
func shiftedMAD(a, b image.Image) float64 {
	ra, rb := scene.RGBA(a), scene.RGBA(b)
	w, h := ra.Rect.Dx(), ra.Rect.Dy()
	best := math.Inf(1)
	for s := -w / 5; s <= w/5; s += 2 {
		var sum float64
		var n int
		for y := 0; y < h; y += 2 {
			for x := max(0, -s); x < min(w, w-s); x += 2 {
				i, j := y*ra.Stride+x*4, y*rb.Stride+(x+s)*4
				for c := 0; c < 3; c++ {
					sum += math.Abs(float64(ra.Pix[i+c]) - float64(rb.Pix[j+c]))
				}
				n += 3
			}
		}
		best = math.Min(best, sum/float64(n))
	}
	return best
}

func TestAngleGenerationAllSix(t *testing.T) {
	perc := pipelinetest.Perception(t)
	pl := New(perc)
	ids := []string{Right45, Front, Back, LeftSide, Left45, RightSide}
	cases := []struct {
		image  string
		ratio  string
		base64 bool
	}{
		{"images/fashn_model.webp", "", false},
		{"images/fashn_garment.webp", "3:4", true},
	}
	for _, c := range cases {
		t.Run(filepath.Base(c.image), func(t *testing.T) {
			in, _ := json.Marshal(map[string]any{"imageUrl": "file:" + c.image, "angleIds": ids,
				"quality": "1k", "ratio": c.ratio, "return_base64": c.base64})
			var mu sync.Mutex
			var details []string
			req := &pipelines.Request{Model: "angle-generation", Inputs: in,
				Images: pipelinetest.Loader{Dir: pipelinetest.Testdata(t)},
				Progress: func(stage string, f float64, d string) {
					mu.Lock()
					defer mu.Unlock()
					if stage == "angle" {
						details = append(details, d)
					}
				}}
			res, err := pl.Run(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Outputs) != len(ids) {
				t.Fatalf("%d outputs, want %d", len(res.Outputs), len(ids))
			}
			src := pipelinetest.Image(t, c.image)
			ratio := c.ratio
			if ratio == "" {
				ratio = models.RatioOf(src.Bounds().Dx(), src.Bounds().Dy())
			}
			wantW, wantH, _ := models.TierSize("1k", ratio)
			srcTier, err := perc.ToTier(context.Background(), src, "1k", ratio)
			if err != nil {
				t.Fatal(err)
			}
			name := strings.TrimSuffix(filepath.Base(c.image), filepath.Ext(c.image))
			for i, o := range res.Outputs {
				if o.Image == nil || o.Image.Bounds().Dx() != wantW || o.Image.Bounds().Dy() != wantH {
					t.Fatalf("%s: size %v, want %dx%d", ids[i], o.Image.Bounds(), wantW, wantH)
				}
				if o.DataURI != c.base64 || o.Path != "reference" || o.Method == "" || len(o.Notes) == 0 {
					t.Errorf("%s: DataURI=%v Path=%q Method=%q Notes=%v", ids[i], o.DataURI, o.Path, o.Method, o.Notes)
				}
				if !strings.Contains(details[i], ids[i]) {
					t.Errorf("progress %d is %q, want %s", i, details[i], ids[i])
				}
				dump(fmt.Sprintf("angles_%s_%d_%s.png", name, i, ids[i]), o.Image)
				// re-framing shifts the person horizontally: compare at the
				// best horizontal alignment
				d := shiftedMAD(o.Image, srcTier)
				t.Logf("%-9s vs source: aligned mean abs diff %.1f  method: %s", ids[i], d, o.Method)
				if ids[i] == Front && c.ratio == "" {
					if d < 0.5 || d > 10 {
						t.Errorf("front differs from the source by %.1f, want 0.5..10 (close but cleaned)", d)
					}
				} else if d < 6 {
					t.Errorf("%s differs from the source by only %.1f", ids[i], d)
				}
			}
			for i := range res.Outputs {
				for j := i + 1; j < len(res.Outputs); j++ {
					if d := mad(res.Outputs[i].Image, res.Outputs[j].Image); d < 3 {
						t.Errorf("%s and %s differ by only %.1f", ids[i], ids[j], d)
					}
				}
			}
		})
	}
}

func TestAngleInputErrors(t *testing.T) {
	pl := New(nil)
	cases := []struct {
		in   map[string]any
		want string
	}{
		{map[string]any{"angleIds": []string{"front"}}, "imageUrl"},
		{map[string]any{"imageUrl": "x", "angleIds": []string{}}, "1 to 6"},
		{map[string]any{"imageUrl": "x", "angleIds": []string{"up"}}, "unknown angle"},
		{map[string]any{"imageUrl": "x", "angleIds": []string{"back", "back"}}, "duplicate"},
		{map[string]any{"imageUrl": "x", "angleIds": []string{"back"}, "quality": "8k"}, "quality"},
		{map[string]any{"imageUrl": "x", "angleIds": []string{"back"}, "ratio": "wide"}, "ratio"},
	}
	for _, c := range cases {
		b, _ := json.Marshal(c.in)
		_, err := pl.Run(context.Background(), &pipelines.Request{Inputs: b})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want it to mention %q", c.in, err, c.want)
		}
	}
}

// BenchmarkAngles times the shared preparation (layers, depth, faces) and
// each angle's render and tier step on fashn_model.webp (1k).
func BenchmarkAngles(b *testing.B) {
	perc := pipelinetest.Perception(b)
	pl := New(perc)
	img := pipelinetest.Image(b, "images/fashn_model.webp")
	ctx := context.Background()
	b.Run("prepare", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := pl.Prepare(ctx, img); err != nil {
				b.Fatal(err)
			}
		}
	})
	r, err := pl.Prepare(ctx, img)
	if err != nil {
		b.Fatal(err)
	}
	for _, id := range []string{Front, Left45, Right45, LeftSide, RightSide, Back} {
		b.Run(id, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				v, err := r.Render(id, "2:3")
				if err != nil {
					b.Fatal(err)
				}
				if _, err := perc.ToTier(ctx, v.Image, "1k", "2:3"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
