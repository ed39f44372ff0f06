package generative_test

import (
	"context"
	"image"
	"image/color"
	"strings"
	"testing"

	"fashiond/internal/pipelinetest"
	"fashiond/pipelines/capability/generative"
)

// regionDiff is the mean absolute RGB difference of a and b inside r.
func regionDiff(a, b *image.NRGBA, r image.Rectangle) float64 {
	s, n := 0.0, 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			p, q := a.NRGBAAt(x, y), b.NRGBAAt(x, y)
			s += abs(int(p.R)-int(q.R)) + abs(int(p.G)-int(q.G)) + abs(int(p.B)-int(q.B))
			n += 3
		}
	}
	return s / float64(n)
}

func abs(v int) float64 {
	if v < 0 {
		return float64(-v)
	}
	return float64(v)
}

// TestRefineRoles runs the refiner on both oracle contract models (the
// text-to-image one through the engine's img2img, the inpainting one
// through inpainting with the region as mask): outside the region the
// image's pixels come back exactly and inside they are redrawn. (The
// oracles predict their clean image exactly whatever the noise level, so
// every strength ends on the oracle's pattern; strength is passed through
// and reported.)
func TestRefineRoles(t *testing.T) {
	src := gradient(160, 96)
	region := image.NewGray(src.Rect)
	box := image.Rect(40, 16, 120, 80)
	for y := box.Min.Y; y < box.Max.Y; y++ {
		for x := box.Min.X; x < box.Max.X; x++ {
			region.SetGray(x, y, color.Gray{255})
		}
	}
	for _, tc := range []struct {
		name string
		ref  *generative.Img2Img
	}{
		{"oracle-floatb", pipelinetest.ContractTextToImage(t).Refiner()},
		{"oracle-inpaint", pipelinetest.ContractInpainter(t).Refiner()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			diffAt := map[float64]float64{}
			for _, s := range []float64{0.3, 0.9} {
				out, info, err := tc.ref.Refine(context.Background(), src, region, generative.Prompt{Text: "a linen shirt", Seed: 5, Steps: 10, Strength: s})
				if err != nil {
					t.Fatal(err)
				}
				if info.Model != tc.name || info.Strength != s || info.Steps != 10 {
					t.Fatalf("info %+v", info)
				}
				for y := range 96 {
					for x := range 160 {
						if !image.Pt(x, y).In(box) && out.NRGBAAt(x, y) != src.NRGBAAt(x, y) {
							t.Fatalf("strength %g: pixel (%d,%d) outside the region changed", s, x, y)
						}
					}
				}
				diffAt[s] = regionDiff(out, src, box.Inset(5))
			}
			if diffAt[0.3] < 20 || diffAt[0.9] < 20 {
				t.Fatalf("mean difference to the input inside the region: strength 0.3 %.2f, 0.9 %.2f: not redrawn", diffAt[0.3], diffAt[0.9])
			}
		})
	}
}

func TestRefineWholeImageAndStrengthLimits(t *testing.T) {
	ref := pipelinetest.ContractTextToImage(t).Refiner()
	src := gradient(100, 60)
	out, info, err := ref.Refine(context.Background(), src, nil, generative.Prompt{Text: "x", Seed: 1, Steps: 4})
	if err != nil {
		t.Fatal(err)
	}
	if out.Rect.Dx() != 100 || out.Rect.Dy() != 60 || info.Strength != generative.DefaultRefineStrength {
		t.Fatalf("rect %v info %+v", out.Rect, info)
	}
	for _, s := range []float64{1, -0.2, 1.5} {
		if _, _, err := ref.Refine(context.Background(), src, nil, generative.Prompt{Text: "x", Strength: s}); err == nil || !strings.Contains(err.Error(), "must be in (0, 1)") {
			t.Errorf("strength %g: %v", s, err)
		}
	}
	if _, _, err := ref.Refine(context.Background(), src, image.NewGray(image.Rect(0, 0, 10, 10)), generative.Prompt{Text: "x"}); err == nil {
		t.Error("a region of another size was accepted")
	}
}

func TestColourWord(t *testing.T) {
	for _, tc := range []struct {
		c    color.RGBA
		want string
	}{
		{color.RGBA{250, 250, 250, 255}, "white"},
		{color.RGBA{10, 10, 12, 255}, "black"},
		{color.RGBA{30, 60, 190, 255}, "blue"},
		{color.RGBA{20, 30, 70, 255}, "navy"},
		{color.RGBA{210, 190, 150, 255}, "beige"},
		{color.RGBA{190, 40, 30, 255}, "red"},
	} {
		if got := generative.ColourWord(tc.c); got != tc.want {
			t.Errorf("%v: %s, want %s", tc.c, got, tc.want)
		}
	}
}
