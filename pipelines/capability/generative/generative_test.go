package generative_test

import (
	"context"
	"image"
	"image/color"
	"testing"

	"fashiond/internal/pipelinetest"
	"fashiond/pipelines/capability/generative"
)

func gradient(w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.SetNRGBA(x, y, color.NRGBA{uint8(x * 255 / w), uint8(y * 255 / h), 200, 255})
		}
	}
	return img
}

// TestInpaintKeepsPixelsOutsideTheMask runs the oracle inpainting contract
// model at a working size different from the image's: outside the mask the
// image's own pixels come back, inside (beyond the feather) generated ones.
func TestInpaintKeepsPixelsOutsideTheMask(t *testing.T) {
	inp := pipelinetest.ContractInpainter(t)
	src := gradient(150, 90)
	mask := image.NewGray(src.Rect)
	hole := image.Rect(40, 20, 110, 70)
	for y := hole.Min.Y; y < hole.Max.Y; y++ {
		for x := hole.Min.X; x < hole.Max.X; x++ {
			mask.SetGray(x, y, color.Gray{255})
		}
	}
	out, info, err := inp.Inpaint(context.Background(), src, mask, generative.Prompt{Text: "grey wall", Seed: 3, Steps: 4})
	if err != nil {
		t.Fatal(err)
	}
	if out.Rect != src.Rect || info.Model != "oracle-inpaint" || info.Steps != 4 || info.Strength != 1 {
		t.Fatalf("rect %v, info %+v", out.Rect, info)
	}
	changed := 0
	for y := range 90 {
		for x := range 150 {
			p := image.Pt(x, y)
			switch {
			case !p.In(hole):
				if out.NRGBAAt(x, y) != src.NRGBAAt(x, y) {
					t.Fatalf("pixel %v outside the mask changed", p)
				}
			case p.In(hole.Inset(5)) && out.NRGBAAt(x, y) != src.NRGBAAt(x, y):
				changed++
			}
		}
	}
	if inner := hole.Inset(5); changed < inner.Dx()*inner.Dy()*9/10 {
		t.Fatalf("only %d of %d pixels inside the mask were generated", changed, inner.Dx()*inner.Dy())
	}
}

func TestCompositeFeather(t *testing.T) {
	src, gen := image.NewNRGBA(image.Rect(0, 0, 20, 1)), image.NewNRGBA(image.Rect(0, 0, 20, 1))
	mask := image.NewGray(src.Rect)
	for x := range 20 {
		gen.SetNRGBA(x, 0, color.NRGBA{200, 200, 200, 255})
		if x >= 10 {
			mask.SetGray(x, 0, color.Gray{255})
		}
	}
	out := generative.Composite(src, gen, mask)
	want := []uint8{0, 50, 100, 150, 200, 200} // x = 9 (outside), 10..14: ramp over 4 px
	for i, w := range want {
		if got := out.NRGBAAt(9+i, 0).R; got != w {
			t.Errorf("x=%d: %d, want %d", 9+i, got, w)
		}
	}
}
