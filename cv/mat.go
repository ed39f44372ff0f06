// Package cv is the only package that imports gocv (OpenCV). Its functions
// take and return Go images; Mats never leave the package. inference and cuda
// never import it.
package cv

import (
	"image"
	"image/draw"

	"gocv.io/x/gocv"
)

// toRGBA returns img as *image.RGBA with origin (0,0), copying when needed.
func toRGBA(img image.Image) *image.RGBA {
	if r, ok := img.(*image.RGBA); ok && r.Rect.Min == (image.Point{}) {
		return r
	}
	b := img.Bounds()
	out := image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.Draw(out, out.Rect, img, b.Min, draw.Src)
	return out
}

// matFromImage converts to a BGR 8UC3 Mat. The caller closes it.
func matFromImage(img image.Image) (gocv.Mat, error) {
	r := toRGBA(img)
	w, h := r.Rect.Dx(), r.Rect.Dy()
	buf := make([]byte, w*h*3)
	for y := 0; y < h; y++ {
		row := r.Pix[y*r.Stride : y*r.Stride+w*4]
		o := buf[y*w*3:]
		for x := 0; x < w; x++ {
			o[x*3+0] = row[x*4+2]
			o[x*3+1] = row[x*4+1]
			o[x*3+2] = row[x*4+0]
		}
	}
	return gocv.NewMatFromBytes(h, w, gocv.MatTypeCV8UC3, buf)
}

// matFromGray converts to an 8UC1 Mat. The caller closes it.
func matFromGray(g *image.Gray) (gocv.Mat, error) {
	w, h := g.Rect.Dx(), g.Rect.Dy()
	buf := make([]byte, w*h)
	for y := 0; y < h; y++ {
		copy(buf[y*w:(y+1)*w], g.Pix[(y+g.Rect.Min.Y-g.Rect.Min.Y)*g.Stride:][:w])
	}
	return gocv.NewMatFromBytes(h, w, gocv.MatTypeCV8UC1, buf)
}

// imageFromMat converts a BGR 8UC3 Mat to *image.RGBA.
func imageFromMat(m gocv.Mat) *image.RGBA {
	w, h := m.Cols(), m.Rows()
	out := image.NewRGBA(image.Rect(0, 0, w, h))
	data := m.ToBytes()
	for i, j := 0, 0; i < w*h; i, j = i+1, j+3 {
		out.Pix[i*4+0] = data[j+2]
		out.Pix[i*4+1] = data[j+1]
		out.Pix[i*4+2] = data[j+0]
		out.Pix[i*4+3] = 255
	}
	return out
}
