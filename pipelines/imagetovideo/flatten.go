package imagetovideo

import (
	"image"

	"fashiond/pipelines/capability/raster"
)

// onWhite lays a photo with transparent pixels over white and reports
// whether it did: a video has no alpha, and the premultiplied transparent
// background of a cut-out (codait_man_tpose_cutout.png) otherwise came out
// black, the person floating in a black void. An opaque photo is returned
// as it is.
func onWhite(img image.Image) (image.Image, bool) {
	if o, ok := img.(interface{ Opaque() bool }); ok && o.Opaque() {
		return img, false
	}
	src := raster.RGBA(img)
	if src.Opaque() {
		return img, false
	}
	out := image.NewRGBA(src.Rect)
	for i := 0; i < len(src.Pix); i += 4 {
		k := 255 - int(src.Pix[i+3]) // premultiplied: colour + white * (1 - alpha)
		for c := range 3 {
			out.Pix[i+c] = uint8(int(src.Pix[i+c]) + k)
		}
		out.Pix[i+3] = 255
	}
	return out, true
}
