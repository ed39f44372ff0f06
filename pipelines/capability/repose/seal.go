package repose

import (
	"image"
	"math"

	"fashiond/pipelines/capability/mask"
)

// Crack sealing tuning.
const (
	// solidAlpha is the coverage from which a re-posed pixel is the
	// person's own colour, not a blend with the plate.
	solidAlpha = 250
	// crackRadiusFrac is the half-width of the cracks sealed, as a
	// fraction of the image's longer side (2.6 px at 864): the soft edges
	// of two layers that no longer meet (an arm rotated against the torso
	// by "leaning") leave the plate showing through as a thin light line.
	crackRadiusFrac = 0.003
)

// sealCracks fills the thin gaps inside the re-posed person — pixels that
// a closing of the solidly covered region by crackRadiusFrac of the longer
// side covers but the layers cover only partly — with the mean colour of
// the solidly covered pixels around them, and marks them covered in alpha.
// Gaps wider than the closing stay (Tear and TornHole measure them).
func sealCracks(out *image.RGBA, alpha *image.Gray) {
	w, h := alpha.Rect.Dx(), alpha.Rect.Dy()
	r := math.Max(1.5, crackRadiusFrac*float64(max(w, h)))
	solid := image.NewGray(alpha.Rect)
	for i, v := range alpha.Pix {
		if v >= solidAlpha {
			solid.Pix[i] = 255
		}
	}
	closed := mask.Close(solid, r)
	win := int(math.Ceil(2 * r))
	var fill []int
	for i, v := range closed.Pix {
		if v >= 128 && solid.Pix[i] == 0 {
			fill = append(fill, i)
		}
	}
	for _, i := range fill {
		x, y := i%w, i/w
		var s [3]int
		n := 0
		for yy := max(0, y-win); yy <= min(h-1, y+win); yy++ {
			for xx := max(0, x-win); xx <= min(w-1, x+win); xx++ {
				if solid.Pix[yy*w+xx] == 0 {
					continue
				}
				o := out.PixOffset(xx, yy)
				s[0], s[1], s[2] = s[0]+int(out.Pix[o]), s[1]+int(out.Pix[o+1]), s[2]+int(out.Pix[o+2])
				n++
			}
		}
		if n == 0 {
			continue
		}
		o := out.PixOffset(x, y)
		for c := range 3 {
			out.Pix[o+c] = uint8(s[c] / n)
		}
		alpha.Pix[i] = 255
	}
}
