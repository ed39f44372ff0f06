package raster

import (
	"image"
	"image/color"
	"testing"
)

// TestOnWhite: a transparent pixel becomes white, a half-transparent one
// its colour over white, an opaque photo is returned untouched.
func TestOnWhite(t *testing.T) {
	img := image.NewNRGBA(image.Rect(0, 0, 3, 1))
	img.SetNRGBA(0, 0, color.NRGBA{10, 20, 30, 0})
	img.SetNRGBA(1, 0, color.NRGBA{0, 0, 0, 128})
	img.SetNRGBA(2, 0, color.NRGBA{200, 100, 50, 255})
	out, flat := OnWhite(img)
	if !flat {
		t.Fatal("a photo with transparency was not flattened")
	}
	for x, want := range []color.RGBA{{255, 255, 255, 255}, {127, 127, 127, 255}, {200, 100, 50, 255}} {
		if got := color.RGBAModel.Convert(out.At(x, 0)).(color.RGBA); got != want {
			t.Errorf("pixel %d = %v, want %v", x, got, want)
		}
	}
	opaque := image.NewRGBA(image.Rect(0, 0, 2, 2))
	for i := range opaque.Pix {
		opaque.Pix[i] = 255
	}
	if got, flat := OnWhite(opaque); flat || got != image.Image(opaque) {
		t.Errorf("an opaque photo was flattened (%v)", flat)
	}
}
