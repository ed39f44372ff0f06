package perception_test

import (
	"context"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/disintegration/imaging"

	"fashiond/internal/pipelinetest"
	"fashiond/perception"
)

// gradEnergy is the mean squared luminance gradient of an image.
func gradEnergy(img image.Image) float64 {
	n := imaging.Clone(img)
	w, h := n.Rect.Dx(), n.Rect.Dy()
	lum := func(x, y int) float64 {
		p := n.Pix[y*n.Stride+x*4:]
		return 0.299*float64(p[0]) + 0.587*float64(p[1]) + 0.114*float64(p[2])
	}
	var s float64
	for y := 0; y < h-1; y++ {
		for x := 0; x < w-1; x++ {
			dx, dy := lum(x+1, y)-lum(x, y), lum(x, y+1)-lum(x, y)
			s += dx*dx + dy*dy
		}
	}
	return s / float64((w-1)*(h-1))
}

func writePNG(t testing.TB, name string, img image.Image) {
	dir := os.Getenv("FASHIOND_TEST_OUT")
	if dir == "" {
		return
	}
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := png.Encode(f, img); err != nil {
		t.Fatal(err)
	}
}

func TestSuperResolveSharperThanBicubic(t *testing.T) {
	p := pipelinetest.Perception(t)
	src := pipelinetest.Image(t, "images/gocv_face.jpg")
	// A 200x150 crop: two tiles wide after reflection... and not a tile multiple.
	small := imaging.Resize(src, 200, 0, imaging.Lanczos)
	b := small.Bounds()
	up, err := p.SuperResolve(context.Background(), small, perception.SRFast)
	if err != nil {
		t.Fatal(err)
	}
	if got := up.Bounds(); got.Dx() != 4*b.Dx() || got.Dy() != 4*b.Dy() {
		t.Fatalf("SR output %v, want %dx%d", got, 4*b.Dx(), 4*b.Dy())
	}
	bic := imaging.Resize(small, 4*b.Dx(), 4*b.Dy(), imaging.CatmullRom)
	eSR, eBic := gradEnergy(up), gradEnergy(bic)
	t.Logf("gradient energy: SR %.2f, bicubic %.2f", eSR, eBic)
	if eSR <= eBic*1.1 {
		t.Errorf("SR not sharper than bicubic: %.2f vs %.2f", eSR, eBic)
	}
	writePNG(t, "sr_fast.png", up)
	writePNG(t, "sr_bicubic.png", bic)
}

func TestSuperResolveKeepsAlphaAndSmallSizes(t *testing.T) {
	p := pipelinetest.Perception(t)
	src := imaging.Resize(pipelinetest.Image(t, "images/astronaut.png"), 40, 30, imaging.Lanczos)
	for y := 0; y < 30; y++ {
		for x := 0; x < 20; x++ {
			src.Pix[y*src.Stride+x*4+3] = 0 // left half transparent
		}
	}
	up, err := p.SuperResolve(context.Background(), src, perception.SRFast)
	if err != nil {
		t.Fatal(err)
	}
	n := imaging.Clone(up)
	if b := n.Bounds(); b.Dx() != 160 || b.Dy() != 120 {
		t.Fatalf("size %v, want 160x120", b)
	}
	if a := n.NRGBAAt(20, 60).A; a > 5 {
		t.Errorf("transparent side alpha %d", a)
	}
	if a := n.NRGBAAt(140, 60).A; a < 250 {
		t.Errorf("opaque side alpha %d", a)
	}
	if _, err := p.SuperResolve(context.Background(), src, "bicubic"); err == nil {
		t.Error("unknown SR model accepted")
	}
}
