package style

import (
	"image"
	"image/draw"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"fashiond/pipelines/pipelinetest"
)

// TestWriteSheet writes every style of the test photos as PNGs and a
// contact sheet into $FASHIOND_LOOK_DIR (skipped when unset), for people to
// look at.
func TestWriteSheet(t *testing.T) {
	dir := os.Getenv("FASHIOND_LOOK_DIR")
	if dir == "" {
		t.Skip("set FASHIOND_LOOK_DIR to write the contact sheets")
	}
	for _, name := range []string{"images/fashn_model.webp", "images/astronaut.png"} {
		img := pipelinetest.Image(t, name)
		var mask *image.Gray
		if p := sheetMask; p != nil {
			mask = p(t, img)
		}
		b := img.Bounds()
		tw, th := b.Dx()/2, b.Dy()/2
		sheet := image.NewRGBA(image.Rect(0, 0, tw*5, th*3))
		draw.Draw(sheet, image.Rect(0, 0, tw, th), half(img), image.Point{}, draw.Src)
		for k, id := range IDs {
			out, err := Apply(img, id, Options{Seed: 1, PersonMask: mask})
			if err != nil {
				t.Fatal(err)
			}
			writePNG(t, filepath.Join(dir, filepath.Base(name)+"_"+id+".png"), out)
			c := k + 1
			r := image.Rect((c%5)*tw, (c/5)*th, (c%5+1)*tw, (c/5+1)*th)
			draw.Draw(sheet, r, half(out), image.Point{}, draw.Src)
		}
		writePNG(t, filepath.Join(dir, filepath.Base(name)+"_sheet.png"), sheet)
	}
}

// sheetMask, when set by another test file, supplies a person mask.
var sheetMask func(t *testing.T, img image.Image) *image.Gray

func half(img image.Image) *image.RGBA {
	b := img.Bounds()
	out := image.NewRGBA(image.Rect(0, 0, b.Dx()/2, b.Dy()/2))
	for y := 0; y < b.Dy()/2; y++ {
		for x := 0; x < b.Dx()/2; x++ {
			out.Set(x, y, img.At(b.Min.X+2*x, b.Min.Y+2*y))
		}
	}
	return out
}

func writePNG(t *testing.T, path string, img image.Image) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := png.Encode(f, img); err != nil {
		t.Fatal(err)
	}
}
