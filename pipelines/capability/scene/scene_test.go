package scene

import (
	"context"
	"errors"
	"fashiond/perception"
	"image"
	"image/color"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"fashiond/internal/pipelinetest"
)

// dump writes a PNG under FASHIOND_TEST_OUT for looking at (nothing when
// it is unset).
func dump(t testing.TB, name string, img image.Image) { pipelinetest.WritePNG(t, name, img) }

// luma returns Rec.601 luma planes of an RGBA image.
func luma(img *image.RGBA) []float64 {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	out := make([]float64, w*h)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			i := y*img.Stride + x*4
			out[y*w+x] = 0.299*float64(img.Pix[i]) + 0.587*float64(img.Pix[i+1]) + 0.114*float64(img.Pix[i+2])
		}
	}
	return out
}

// ssim is the mean SSIM of the luma over 8x8 windows (stride 4).
func ssim(a, b *image.RGBA) float64 {
	w, h := a.Rect.Dx(), a.Rect.Dy()
	la, lb := luma(a), luma(b)
	const c1, c2 = 6.5025, 58.5225
	var sum float64
	var n int
	for y := 0; y+8 <= h; y += 4 {
		for x := 0; x+8 <= w; x += 4 {
			var ma, mb, va, vb, cov float64
			for j := 0; j < 8; j++ {
				for i := 0; i < 8; i++ {
					p, q := la[(y+j)*w+x+i], lb[(y+j)*w+x+i]
					ma += p
					mb += q
				}
			}
			ma /= 64
			mb /= 64
			for j := 0; j < 8; j++ {
				for i := 0; i < 8; i++ {
					p, q := la[(y+j)*w+x+i]-ma, lb[(y+j)*w+x+i]-mb
					va += p * p
					vb += q * q
					cov += p * q
				}
			}
			va /= 63
			vb /= 63
			cov /= 63
			sum += ((2*ma*mb + c1) * (2*cov + c2)) / ((ma*ma + mb*mb + c1) * (va + vb + c2))
			n++
		}
	}
	return sum / float64(n)
}

func TestLayersRealPhotos(t *testing.T) {
	p := pipelinetest.Perception(t)
	cases := []struct {
		file string
		// minimum share of the image the person covers
		minArea float64
	}{
		{"images/fashn_model.webp", 0.15},
		{"images/fashn_garment.webp", 0.25},
		{"images/astronaut.png", 0.2},
	}
	for _, c := range cases {
		t.Run(filepath.Base(c.file), func(t *testing.T) {
			img := pipelinetest.Image(t, c.file)
			s, err := Layers(context.Background(), p, img, Options{WithDepth: true})
			if err != nil {
				t.Fatal(err)
			}
			w, h := s.Image.Rect.Dx(), s.Image.Rect.Dy()
			name := filepath.Base(c.file)
			dump(t, "scene_"+name+"_mask.png", s.PersonMask)
			dump(t, "scene_"+name+"_bg.png", s.Background)
			if !s.HasPerson {
				t.Fatal("no person found")
			}
			area := MaskArea(s.PersonMask) / float64(w*h)
			if area < c.minArea || area > 0.8 {
				t.Errorf("person covers %.2f of the image, want %.2f..0.8", area, c.minArea)
			}
			if s.Depth == nil || s.BackgroundDepth == nil || s.Depth.W != w || s.Depth.H != h {
				t.Fatalf("depth missing or wrong size")
			}
			if s.DepthFallback {
				t.Errorf("depth model installed but fallback used: %v", s.Notes)
			}
			// The person is nearer than the background on average.
			var dp, db, np, nb float64
			for i, v := range s.Depth.Data {
				if a := s.PersonMask.Pix[i]; a > 200 {
					dp += float64(v)
					np++
				} else if s.HoleMask.Pix[i] == 0 {
					db += float64(v)
					nb++
				}
			}
			if dp/np <= db/nb {
				t.Errorf("person depth %.3f not nearer than background %.3f", dp/np, db/nb)
			}

			// The background plate: outside the hole it is the image; inside
			// it differs from the person and resembles the surroundings.
			orig := luma(s.Image)
			bg := luma(s.Background)
			hole := threshold(s.HoleMask, 0)
			ring := dilate(hole, w, h, float32(0.03*diag(w, h)))
			var changed, inHole, holeSum float64
			var ringL []float64
			for i := range hole {
				if !hole[i] {
					if orig[i] != bg[i] {
						t.Fatalf("pixel %d outside the hole changed", i)
					}
					if ring[i] {
						ringL = append(ringL, bg[i])
					}
					continue
				}
				if s.PersonMask.Pix[i] > 200 {
					changed += math.Abs(orig[i] - bg[i])
					inHole++
				}
				holeSum += bg[i]
			}
			var nHole float64
			for _, v := range hole {
				if v {
					nHole++
				}
			}
			if d := changed / inHole; d < 15 {
				t.Errorf("fill differs from the person by only %.1f luma on average", d)
			}
			// The fill's mean luma lies inside the surroundings' 10..90th
			// percentile range (+-10).
			sort.Float64s(ringL)
			p10, p90 := ringL[len(ringL)/10], ringL[len(ringL)*9/10]
			if m := holeSum / nHole; m < p10-10 || m > p90+10 {
				t.Errorf("fill mean luma %.1f outside the surroundings' range %.1f..%.1f", m, p10, p90)
			}
			// No person left: the segmenter finds (almost) nobody on the plate.
			left, err := p.PersonMask(context.Background(), s.Background)
			if err != nil {
				t.Fatal(err)
			}
			dump(t, "scene_"+name+"_bgmask.png", left)
			var leftA float64
			for i, v := range left.Pix {
				if s.PersonMask.Pix[i] > 128 && v > 128 {
					leftA++
				}
			}
			if r := leftA / (area * float64(w*h)); r > 0.25 {
				t.Errorf("segmenter still finds %.0f%% of the person on the background plate", 100*r)
			}

			// Compositing the layers reproduces the photo.
			re := image.NewRGBA(s.Background.Rect)
			copy(re.Pix, s.Background.Pix)
			Composite(re, s.Image, s.PersonMask, image.Point{})
			v := ssim(re, s.Image)
			t.Logf("SSIM(composite, image) = %.4f, person area %.2f", v, area)
			if v < 0.98 {
				t.Errorf("SSIM(composite, image) = %.4f, want >= 0.98", v)
			}
		})
	}
}

func TestLayersNoPerson(t *testing.T) {
	p := pipelinetest.Perception(t)
	for _, f := range []string{"garments/flatlay_tee_red.png", "garments/tee_white_ghost.png"} {
		s, err := Layers(context.Background(), p, pipelinetest.Image(t, f), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if s.Depth != nil {
			t.Error("depth computed without WithDepth")
		}
		if s.HasPerson {
			t.Errorf("%s: garment taken for a person", f)
			continue
		}
		if MaskArea(s.PersonMask) != 0 {
			t.Errorf("%s: mask not empty", f)
		}
		for i := range s.Image.Pix {
			if s.Image.Pix[i] != s.Background.Pix[i] {
				t.Fatalf("%s: background changed although no person was found", f)
			}
		}
	}
	// A face close-up has a weak pose but is a person.
	s, err := Layers(context.Background(), p, pipelinetest.Image(t, "images/gocv_face.jpg"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !s.HasPerson {
		t.Error("face close-up not taken for a person")
	}
}

func TestDepthFallback(t *testing.T) {
	mask := image.NewGray(image.Rect(0, 0, 40, 80))
	for y := 20; y < 75; y++ {
		for x := 12; x < 28; x++ {
			mask.Pix[y*40+x] = 255
		}
	}
	g := groundDepth(40, 80)
	if g.At(0, 0) >= g.At(0, 79) {
		t.Error("ground depth not nearer at the bottom")
	}
	d := personDepth(g, mask)
	if d.At(20, 40) <= g.At(20, 40) || d.At(20, 40) <= d.At(2, 74) {
		t.Errorf("person %.3f not in front of the ground %.3f", d.At(20, 40), d.At(2, 74))
	}
}

func TestCompositeAndExtend(t *testing.T) {
	dst := image.NewRGBA(image.Rect(0, 0, 10, 10))
	fg := image.NewRGBA(image.Rect(0, 0, 4, 4))
	alpha := image.NewGray(image.Rect(0, 0, 4, 4))
	for i := range fg.Pix {
		fg.Pix[i] = 200
	}
	alpha.Pix[0] = 255
	alpha.Pix[1] = 128
	Composite(dst, fg, alpha, image.Pt(8, 8)) // partly outside: clipped
	if c := dst.RGBAAt(8, 8); c.R != 200 {
		t.Errorf("opaque pixel %v", c)
	}
	if c := dst.RGBAAt(9, 8); c.R < 99 || c.R > 101 {
		t.Errorf("half pixel %v, want ~100", c)
	}
	if c := dst.RGBAAt(8, 9); c.R != 0 {
		t.Errorf("transparent pixel changed: %v", c)
	}

	src := image.NewRGBA(image.Rect(0, 0, 40, 20))
	for y := 0; y < 20; y++ {
		for x := 0; x < 40; x++ {
			src.SetRGBA(x, y, color.RGBA{uint8(x * 6), uint8(y * 12), 90, 255})
		}
	}
	tests := []struct{ w, h int }{{80, 60}, {40, 20}, {20, 10}, {100, 20}, {30, 50}}
	for _, tc := range tests {
		e := Extend(src, tc.w, tc.h)
		if e.Rect.Dx() != tc.w || e.Rect.Dy() != tc.h {
			t.Fatalf("Extend size %v", e.Rect)
		}
		var black int
		for i := 0; i < len(e.Pix); i += 4 {
			if e.Pix[i+3] != 255 {
				t.Fatal("transparent pixel in Extend output")
			}
			if e.Pix[i]+e.Pix[i+1] < 3 && e.Pix[i+2] < 3 {
				black++
			}
		}
		if black > 0 {
			t.Errorf("%dx%d: %d black pixels", tc.w, tc.h, black)
		}
		// The centre is the original.
		ox, oy := (tc.w-40)/2, (tc.h-20)/2
		if tc.w >= 40 && tc.h >= 20 {
			if e.RGBAAt(ox+5, oy+5) != src.RGBAAt(5, 5) {
				t.Errorf("%dx%d: centre changed", tc.w, tc.h)
			}
		}
	}
	for _, c := range []struct{ i, n, want int }{{-1, 5, 0}, {5, 5, 4}, {9, 5, 0}, {10, 5, 0}, {-6, 5, 4}, {3, 1, 0}} {
		if got := reflect(c.i, c.n); got != c.want {
			t.Errorf("reflect(%d,%d)=%d want %d", c.i, c.n, got, c.want)
		}
	}
}

// noDepth is the real perception with the optional depth model missing.
type noDepth struct{ perception.Perception }

func (noDepth) Depth(context.Context, image.Image) (*perception.Depth, error) {
	return nil, errors.New("depth model tcmonodepth_small is not installed")
}

func TestLayersDepthFallback(t *testing.T) {
	p := noDepth{pipelinetest.Perception(t)}
	s, err := Layers(context.Background(), p, pipelinetest.Image(t, "images/fashn_garment.webp"), Options{WithDepth: true})
	if err != nil {
		t.Fatal(err)
	}
	if !s.DepthFallback || s.Depth == nil || s.BackgroundDepth == nil {
		t.Fatalf("fallback=%v depth=%v", s.DepthFallback, s.Depth != nil)
	}
	if len(s.Notes) == 0 || !strings.Contains(s.Notes[0], "not installed") {
		t.Errorf("notes %v do not say why", s.Notes)
	}
	b := MaskBounds(s.PersonMask, 200)
	cx, cy := (b.Min.X+b.Max.X)/2, (b.Min.Y+b.Max.Y)/2
	if s.Depth.At(cx, cy) <= s.Depth.At(2, cy) {
		t.Errorf("person depth %.2f not nearer than the background beside it %.2f", s.Depth.At(cx, cy), s.Depth.At(2, cy))
	}
}
