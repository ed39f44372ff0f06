package raster

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"image"
)

// Digest is the SHA-256 (hex) of an image's size and RGBA pixels, row by
// row (stride padding excluded): two images have the same digest exactly
// when they are the same picture. Tests pin the output of a real run with
// it, so that a refactor that must not change behaviour is checked bit for
// bit.
func Digest(img *image.RGBA) string {
	h := sha256.New()
	w, ht := img.Rect.Dx(), img.Rect.Dy()
	fmt.Fprintf(h, "%dx%d\n", w, ht)
	for y := 0; y < ht; y++ {
		o := y * img.Stride
		h.Write(img.Pix[o : o+w*4])
	}
	return hex.EncodeToString(h.Sum(nil))
}
