package raster

import "image"

// OnWhiteNote is the output note of a pipeline that laid a transparent
// photo over white (OnWhite).
const OnWhiteNote = "the photo's transparent background is shown white: the photo was laid over white before it was processed"

// OnWhite lays a photo with transparent pixels over white and reports
// whether it did. The premultiplied transparent background of a cut-out
// (codait_man_tpose_cutout.png) is otherwise black: a video showed the
// person floating in a black void, and pose-control and angle-generation
// read the void as a hole torn in the picture (largest_hole). An opaque
// photo is returned as it is.
func OnWhite(img image.Image) (image.Image, bool) {
	if o, ok := img.(interface{ Opaque() bool }); ok && o.Opaque() {
		return img, false
	}
	src := RGBA(img)
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
