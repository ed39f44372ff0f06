package pipelinetest

import (
	"image"

	"fashiond/pipelines/capability/body"
)

// changeTol is how many levels a channel may move before a pixel counts as
// changed (JPEG-free comparisons of pipeline outputs).
const changeTol = 8

// ChangedShare is the share of region's on pixels (>= 128) where a and b
// differ by more than 8 levels in a channel: body.ChangedOutside over the
// region's complement.
func ChangedShare(a, b image.Image, region *image.Gray) float64 {
	return body.ChangedOutside(a, b, complement(region, 128), changeTol)
}

// Outside marks (255) the pixels where alpha is exactly 0: outside a
// subject's region and blend band.
func Outside(alpha *image.Gray) *image.Gray { return complement(alpha, 1) }

// complement is 255 where m is below thr, 0 elsewhere (origin 0,0).
func complement(m *image.Gray, thr uint8) *image.Gray {
	w, h := m.Rect.Dx(), m.Rect.Dy()
	out := image.NewGray(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			if m.Pix[y*m.Stride+x] < thr {
				out.Pix[y*w+x] = 255
			}
		}
	}
	return out
}
