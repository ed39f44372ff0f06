package imagetovideo

import (
	"context"
	"image"
	"image/color"
	"testing"

	"fashiond/internal/pipelinetest"
	"fashiond/pipelines/capability/generative"
	"fashiond/pipelines/capability/scene"
)

// TestGenerativeBackgroundExtension: with an inpainting model installed the
// canvas beyond the plate is generated and the plate's pixels are kept
// exactly; when the plate covers the canvas nothing is generated.
func TestGenerativeBackgroundExtension(t *testing.T) {
	inp := pipelinetest.ContractInpainter(t)
	plate := image.NewRGBA(image.Rect(0, 0, 48, 40))
	for y := range 40 {
		for x := range 48 {
			plate.SetRGBA(x, y, color.RGBA{uint8(60 + 3*x), uint8(90 + 2*y), 140, 255})
		}
	}
	at := image.Pt(24, 36)
	var info *generative.Info
	ext := generativeExtend(context.Background(), inp, 7, nil, &info)
	got, err := ext(plate, 96, 112, at)
	if err != nil {
		t.Fatal(err)
	}
	if info == nil || info.Model != "oracle-inpaint" || info.Seed != 7 {
		t.Fatalf("info = %+v", info)
	}
	classical := scene.ExtendAt(plate, 96, 112, at)
	changed := 0
	for y := range 112 {
		for x := range 96 {
			in := image.Pt(x, y).In(image.Rect(at.X, at.Y, at.X+48, at.Y+40))
			g := got.RGBAAt(x, y)
			if in && g != plate.RGBAAt(x-at.X, y-at.Y) {
				t.Fatalf("plate pixel (%d,%d) changed: %v, want %v", x, y, g, plate.RGBAAt(x-at.X, y-at.Y))
			}
			if !in && g != classical.RGBAAt(x, y) {
				changed++
			}
		}
	}
	if outside := 96*112 - 48*40; changed < outside*9/10 {
		t.Fatalf("only %d of %d pixels beyond the plate were generated", changed, outside)
	}
	info = nil
	full, err := ext(plate, 40, 30, image.Pt(-4, -5))
	if err != nil || info != nil || full.RGBAAt(0, 0) != plate.RGBAAt(4, 5) {
		t.Fatalf("covered canvas: err %v, info %+v", err, info)
	}
}
