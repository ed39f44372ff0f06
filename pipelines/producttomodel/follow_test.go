package producttomodel

import (
	"image"
	"testing"

	"fashiond/internal/pipelinetest"
	"fashiond/pipelines/capability/raster"
)

// TestCropOffset: frame's ratio crops of a real photo are found where
// frame cut them.
func TestCropOffset(t *testing.T) {
	img := raster.RGBA(pipelinetest.Image(t, "images/pexels_woman_dog_standing.jpg"))
	pm := image.NewGray(img.Rect)
	for y := 100; y < 900; y++ {
		for x := 60; x < 300; x++ {
			pm.Pix[y*pm.Stride+x] = 255
		}
	}
	for _, ratio := range []string{"16:9", "4:5", "1:1", "9:16", "21:9"} {
		framed, _ := frame(img, pm, ratio)
		o, ok := cropOffset(img, framed)
		if !ok {
			t.Fatalf("%s: crop not found", ratio)
		}
		back := image.NewRGBA(framed.Rect)
		for y := 0; y < framed.Rect.Dy(); y++ {
			copy(back.Pix[y*back.Stride:(y+1)*back.Stride], img.Pix[(y+o.Y)*img.Stride+o.X*4:])
		}
		if string(back.Pix) != string(framed.Pix) {
			t.Errorf("%s: offset %v does not give the crop back", ratio, o)
		}
	}
	if _, ok := cropOffset(img, raster.RGBA(pipelinetest.Image(t, "images/astronaut.png"))); ok {
		t.Error("another photo was found inside this one")
	}
}
