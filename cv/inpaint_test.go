package cv

import (
	"image"
	"image/color"
	"testing"
)

func TestInpaintFillsHole(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 64, 64))
	mask := image.NewGray(img.Rect)
	for y := 0; y < 64; y++ {
		for x := 0; x < 64; x++ {
			img.Set(x, y, color.RGBA{200, 40, 40, 255})
			if x >= 24 && x < 40 && y >= 24 && y < 40 {
				img.Set(x, y, color.RGBA{0, 0, 255, 255})
				mask.SetGray(x, y, color.Gray{255})
			}
		}
	}
	out, err := Inpaint(img, mask, 5)
	if err != nil {
		t.Fatal(err)
	}
	c := out.RGBAAt(32, 32)
	if c.R < 150 || c.B > 80 {
		t.Fatalf("centre of the hole is %v, want close to the red surround", c)
	}
	if _, err := Inpaint(img, image.NewGray(image.Rect(0, 0, 3, 3)), 5); err == nil {
		t.Fatal("mismatched mask accepted")
	}
}
