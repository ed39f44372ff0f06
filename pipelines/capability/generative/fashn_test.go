package generative_test

import (
	"context"
	"image"
	"image/color"
	"path/filepath"
	"strings"
	"testing"

	"fashiond/diffusion"
	"fashiond/internal/pipelinetest"
	"fashiond/perception"
	"fashiond/pipelines/capability/generative"
)

// nobody is a body-pose model that finds no one.
type nobody struct{}

func (nobody) Pose(context.Context, image.Image) (*perception.Pose, error) {
	return &perception.Pose{}, nil
}

// The person's and the garment's colours in the oracle tests.
var pc, gc = color.NRGBA{200, 100, 50, 255}, color.NRGBA{40, 90, 160, 255}

// oracleTryOner is the closed-form fashn-vton oracle folder behind the
// TryOner, with a pose model that finds no one; closed with the test.
func oracleTryOner(t *testing.T) *generative.FashnVTON {
	t.Helper()
	rt := pipelinetest.CPURuntime(t, 1)
	m, err := diffusion.LoadFashnVTON(context.Background(), rt, filepath.Join(pipelinetest.Root(), "diffusion/testdata/fashn/oracle"), diffusion.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	ton, err := generative.NewFashnVTON(m, perception.BlazePoseSource{P: nobody{}}, "drawn from a test pose model")
	if err != nil {
		t.Fatal(err)
	}
	return ton
}

// oracleByte is the oracle's picture byte where the person's byte is p and
// the fed garment's g, both pose maps black: d = 0.5·p + 0.25·g − 0.125 −
// 0.0625 + 0.01·class in [−1, 1] terms, converted as tensor_to_pil does.
func oracleByte(p, g uint8, class float32) uint8 {
	d := float32(0.5)*(float32(p)/127.5-1) + float32(0.25)*(float32(g)/127.5-1) - 0.125 - 0.0625 + float32(0.01)*class
	return uint8((d + 1) * 0.5 * 255)
}

func uniform(w, h int, c color.NRGBA) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := 0; i < len(img.Pix); i += 4 {
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = c.R, c.G, c.B, c.A
	}
	return img
}

// TestFashnVTONOracle runs the closed-form fashn-vton oracle (24×36,
// velocity towards d = 0.5·person + 0.25·garment + 0.125·person pose +
// 0.0625·garment pose + 0.01·category) through the TryOner: with flat
// photos and no person found, both pose maps are black (−1), so inside the
// mask every pixel is ((d+1)/2·255) truncated with the category of the
// garment's kind; outside it, the person's own pixels.
func TestFashnVTONOracle(t *testing.T) {
	ton := oracleTryOner(t)
	person, garment := uniform(96, 144, pc), uniform(30, 40, gc)
	mask := image.NewGray(person.Rect)
	for y := 40; y < 110; y++ {
		for x := 20; x < 76; x++ {
			mask.Pix[y*96+x] = 255
		}
	}
	for _, c := range []struct {
		kind  string
		class float64
	}{{"top", 1}, {"full", 3}} {
		out, info, err := ton.TryOn(context.Background(), person, garment, mask, generative.TryOnOptions{Seed: 3, Steps: 4, Kind: c.kind, FlatLay: true})
		if err != nil {
			t.Fatal(err)
		}
		if out.Rect.Size() != person.Rect.Size() {
			t.Fatalf("output %v, person %v", out.Rect.Size(), person.Rect.Size())
		}
		for k, want := range []uint8{pc.R, pc.G, pc.B} {
			if got := out.Pix[4*(5*96+5)+k]; got != want {
				t.Errorf("%s: outside the mask channel %d = %d, want the person's %d", c.kind, k, got, want)
			}
		}
		for k, v := range []uint8{pc.R, pc.G, pc.B} {
			want := oracleByte(v, []uint8{gc.R, gc.G, gc.B}[k], float32(c.class))
			if got := out.Pix[4*(75*96+48)+k]; got < want-1 || got > want+1 {
				t.Errorf("%s: inside the mask channel %d = %d, want %d (category %g)", c.kind, k, got, want, c.class)
			}
		}
		for _, s := range []string{`"oracle"`, "FASHN VTON", "random weights", "noise-like", "4 steps", "seed 3", "flat-lay dummy pose"} {
			if !strings.Contains(info.TryOnNote(), s) {
				t.Errorf("note %q lacks %q", info.TryOnNote(), s)
			}
		}
	}
}

// TestFashnVTONWornGarmentIsCutOut: a worn garment photo is greyed (127)
// outside its garment mask before it is fed, so with the oracle the output
// under the unmasked half follows grey, under the masked half the garment.
func TestFashnVTONWornGarmentIsCutOut(t *testing.T) {
	ton := oracleTryOner(t)
	person, garment := uniform(96, 144, pc), uniform(96, 144, gc)
	gmask := image.NewGray(garment.Rect) // the garment is the left half
	all := image.NewGray(person.Rect)
	for i := range all.Pix {
		all.Pix[i] = 255
		if i%96 < 48 {
			gmask.Pix[i] = 255
		}
	}
	out, _, err := ton.TryOn(context.Background(), person, garment, all, generative.TryOnOptions{Seed: 1, Steps: 3, Kind: "top", GarmentMask: gmask})
	if err != nil {
		t.Fatal(err)
	}
	expect := func(g uint8, k int) uint8 { return oracleByte([]uint8{pc.R, pc.G, pc.B}[k], g, 1) }
	for k := range 3 {
		left, right := out.Pix[4*(72*96+16)+k], out.Pix[4*(72*96+80)+k]
		if wl, wr := expect([]uint8{gc.R, gc.G, gc.B}[k], k), expect(127, k); absDiff(left, wl) > 1 || absDiff(right, wr) > 1 {
			t.Errorf("channel %d: garment side %d (want %d), cut-out side %d (want %d)", k, left, wl, right, wr)
		}
	}
}

func absDiff(a, b uint8) uint8 {
	if a > b {
		return a - b
	}
	return b - a
}

func TestFashnCategory(t *testing.T) {
	for kind, want := range map[string]string{"top": "tops", "bottom": "bottoms", "full": "one-pieces", "": "tops"} {
		if got := generative.FashnCategory(kind); got != want {
			t.Errorf("%q → %q, want %q", kind, got, want)
		}
	}
}
