package selfcheck

import (
	"image"
	"image/draw"
	"testing"

	"fashiond/perception"
)

// stripes is a w x h image of vertical 2-pixel black and white stripes: a
// textured background.
func stripes(w, h int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			v := uint8(0)
			if x/2%2 == 0 {
				v = 255
			}
			i := y*img.Stride + x*4
			img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = v, v, v, 255
		}
	}
	return img
}

func rectMask(w, h int, rs ...image.Rectangle) *image.Gray {
	m := image.NewGray(image.Rect(0, 0, w, h))
	for _, r := range rs {
		draw.Draw(m, r, image.White, image.Point{}, draw.Src)
	}
	return m
}

// TestBodyIntegrity: a moved limb kept at its width passes and one
// thinned to a third fails limb_width; a second piece of the person fails
// person_pieces; a flat fill where the person stood on a textured
// background fails ghost_smear, the same fill on a flat background passes.
func TestBodyIntegrity(t *testing.T) {
	const w, h = 200, 200
	torso := image.Rect(80, 40, 120, 120)
	arm := image.Rect(120, 50, 170, 60) // horizontal, 10 wide
	was := rectMask(w, h, torso, arm)
	bone := Bone{Name: "arm", Src: [2]perception.Point{{X: 120, Y: 55}, {X: 170, Y: 55}}}
	up := bone
	up.Out = [2]perception.Point{{X: 125, Y: 40}, {X: 125, Y: 0}} // raised: vertical
	flat := grey(w, h, 128)
	for _, c := range []struct {
		name       string
		src, out   *image.RGBA
		person     *image.Gray
		bones      []Bone
		failing    string
		wantFailed float64
	}{
		{"whole", flat, flat, rectMask(w, h, torso, image.Rect(120, 0, 130, 45)), []Bone{up}, "", 0},
		{"thinned arm", flat, flat, rectMask(w, h, torso, image.Rect(123, 0, 127, 45), image.Rect(118, 38, 127, 45)), []Bone{up}, NameLimbWidth, 0.4},
		{"a piece apart", flat, flat, rectMask(w, h, torso, image.Rect(120, 0, 130, 45), image.Rect(10, 180, 20, 190)), []Bone{up}, NamePersonPieces, 0.0267},
		{"smear on texture", stripes(w, h), fill(stripes(w, h), arm.Inset(-2), grey(1, 1, 128).RGBAAt(0, 0)), rectMask(w, h, torso, image.Rect(120, 0, 130, 45)), []Bone{up}, NameGhostSmear, 0.0125},
	} {
		t.Run(c.name, func(t *testing.T) {
			checks := BodyIntegrity(c.src, c.out, was, c.person, c.bones)
			for _, ch := range checks {
				if ch.Name == c.failing {
					if ch.Pass || ch.Value != c.wantFailed {
						t.Errorf("%+v, want failing with %v", ch, c.wantFailed)
					}
				} else if !ch.Pass {
					t.Errorf("%+v failed", ch)
				}
			}
		})
	}
}

// wallOverCarpet is a w x h image flat grey above row split (a wall) and
// striped below (a carpet), with the band filled flat (the plate's fill
// where the person stood).
func wallOverCarpet(w, h, split int, band image.Rectangle) *image.RGBA {
	img := stripes(w, h)
	draw.Draw(img, image.Rect(0, 0, w, split), image.NewUniform(grey(1, 1, 128).RGBAAt(0, 0)), image.Point{}, draw.Src)
	return fill(img, band, grey(1, 1, 128).RGBAAt(0, 0))
}

// TestGhostSmearLocal: a vacated band running from a plain wall down onto
// a carpet counts where it lies on the carpet (30x90 pixels) and just
// above it, not on the wall, and a crop of the frame that keeps the band
// keeps the smear's pixels (3186 of 200x200, 3145 of 170x200); a band on
// the wall alone is no smear.
func TestGhostSmearLocal(t *testing.T) {
	const h = 200
	person := image.Rect(40, 30, 70, 190)
	for _, c := range []struct {
		name string
		w    int
		band image.Rectangle
		want float64
	}{
		{"wall onto carpet", 200, image.Rect(90, 30, 120, 190), 0.0797},
		{"cropped", 170, image.Rect(90, 30, 120, 190), 0.0925},
		{"wall only", 200, image.Rect(90, 30, 120, 70), 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := wallOverCarpet(c.w, h, 100, c.band)
			got := GhostSmear(out, rectMask(c.w, h, person, c.band), rectMask(c.w, h, person))
			if got.Value != c.want || got.Pass != (c.want <= MaxGhostSmear) {
				t.Errorf("%+v, want %v", got, c.want)
			}
		})
	}
}
