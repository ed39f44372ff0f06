package style

import (
	"image"
	"image/draw"
)

// toRGBA returns img as an *image.RGBA with origin (0,0). It always copies,
// because Apply writes its result into the returned buffer's twin.
func toRGBA(img image.Image) *image.RGBA {
	b := img.Bounds()
	out := image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.Draw(out, out.Rect, img, b.Min, draw.Src)
	return out
}
