package cv

import (
	"image"
	"image/color"
	"math"
	"testing"
)

func TestSimilarityFromPoints(t *testing.T) {
	// A known similarity: scale 1.5, rotation 30°, translation (10, -4).
	s, th := 1.5, math.Pi/6
	want := [6]float64{s * math.Cos(th), -s * math.Sin(th), 10, s * math.Sin(th), s * math.Cos(th), -4}
	src := [][2]float64{{0, 0}, {10, 0}, {0, 20}, {7, 3}, {-5, 9}}
	var dst [][2]float64
	for _, p := range src {
		dst = append(dst, [2]float64{want[0]*p[0] + want[1]*p[1] + want[2], want[3]*p[0] + want[4]*p[1] + want[5]})
	}
	got, err := SimilarityFromPointsF(src, dst)
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if math.Abs(got[i]-want[i]) > 1e-9 {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	if _, err := SimilarityFromPointsF([][2]float64{{1, 1}, {1, 1}}, [][2]float64{{0, 0}, {2, 2}}); err == nil {
		t.Fatal("coincident points accepted")
	}
}

func checker(w, h int, a, b color.RGBA) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			if (x/8+y/8)%2 == 0 {
				img.SetRGBA(x, y, a)
			} else {
				img.SetRGBA(x, y, b)
			}
		}
	}
	return img
}

func TestSSIM(t *testing.T) {
	a := checker(64, 64, color.RGBA{200, 200, 200, 255}, color.RGBA{20, 20, 20, 255})
	if s, err := SSIM(a, a, nil); err != nil || s < 0.999 {
		t.Fatalf("SSIM of an image with itself = %v, %v", s, err)
	}
	b := checker(64, 64, color.RGBA{20, 20, 20, 255}, color.RGBA{200, 200, 200, 255}) // inverted
	if s, _ := SSIM(a, b, nil); s > 0 {
		t.Fatalf("SSIM of inverted images = %v, want < 0", s)
	}
	// A shifted copy of a smooth texture is found again by the aligned SSIM.
	tex := image.NewRGBA(image.Rect(0, 0, 64, 64))
	for y := 0; y < 64; y++ {
		for x := 0; x < 64; x++ {
			v := 128 + 50*math.Sin(float64(x)/1.9+float64(y*y)/300) + 40*math.Cos(float64(y)/2.3-float64(x)/9)
			tex.SetRGBA(x, y, color.RGBA{uint8(v), uint8(v), uint8(v), 255})
		}
	}
	sh := WarpAffine(tex, [6]float64{1, 0, 3, 0, 1, -2}, 64, 64)
	plain, _ := SSIM(tex.SubImage(image.Rect(16, 16, 48, 48)), sh.SubImage(image.Rect(16, 16, 48, 48)), nil)
	al, m, err := AlignedSSIM(tex, sh, image.Rect(16, 16, 48, 48), [6]float64{1, 0, 0, 0, 1, 0})
	if err != nil {
		t.Fatal(err)
	}
	if al < 0.98 || plain > 0.7 || math.Abs(m[2]+3) > 0.6 || math.Abs(m[5]-2) > 0.6 {
		t.Fatalf("aligned SSIM %.3f (map %v), plain %.3f", al, m, plain)
	}
}

func TestSeamlessClone(t *testing.T) {
	// A textured grey patch cloned into a red image takes on the red
	// surroundings' colour while keeping its texture.
	dst := image.NewRGBA(image.Rect(0, 0, 80, 80))
	for i := 0; i < len(dst.Pix); i += 4 {
		dst.Pix[i], dst.Pix[i+1], dst.Pix[i+2], dst.Pix[i+3] = 200, 40, 40, 255
	}
	src := checker(80, 80, color.RGBA{140, 140, 140, 255}, color.RGBA{100, 100, 100, 255})
	mask := image.NewGray(dst.Rect)
	for y := 24; y < 56; y++ {
		for x := 24; x < 56; x++ {
			mask.Pix[y*mask.Stride+x] = 255
		}
	}
	out, err := SeamlessClone(dst, src, mask)
	if err != nil {
		t.Fatal(err)
	}
	c := out.RGBAAt(40, 40)
	if c.R < c.G+60 {
		t.Fatalf("centre %v: the patch did not take on the red surroundings", c)
	}
	d := int(out.RGBAAt(40, 40).G) - int(out.RGBAAt(48, 40).G)
	if d < 20 && d > -20 {
		t.Fatalf("texture lost: neighbouring checker cells differ by %d", d)
	}
	// Seamless: just inside the mask's edge the colour is the surround's
	// (a paste would be grey there), inside the texture stays.
	if e := out.RGBAAt(40, 25); absd(e.R, 200) > 45 || absd(e.G, 40) > 45 {
		t.Fatalf("edge pixel %v, want close to the surround (200,40,40)", e)
	}
	if o := out.RGBAAt(5, 5); o.R != 200 || o.G != 40 {
		t.Fatalf("outside the mask changed: %v", o)
	}
	if _, err := SeamlessClone(dst, src, image.NewGray(dst.Rect)); err == nil {
		t.Fatal("empty mask accepted")
	}
}

func absd(a, b uint8) int {
	if a > b {
		return int(a - b)
	}
	return int(b - a)
}
