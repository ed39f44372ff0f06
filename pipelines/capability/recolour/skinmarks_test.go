package recolour

import (
	"image"
	"math"
	"testing"

	"fashiond/pipelines/capability/mask"
	"fashiond/pipelines/capability/raster"
)

// TestMarksOnSkin: on a 200x200 frame (shoulder width 200, so a piece
// thinner than a half-width of 10 px is thin), a stripe 8 px wide is a
// mark when skin surrounds it, a garment when background, hair or cloth
// does; a block 60 px wide on skin is a garment (a worn top's neckline).
func TestMarksOnSkin(t *testing.T) {
	const n = 200
	stripe, block := image.Rect(60, 90, 140, 98), image.Rect(70, 70, 130, 130)
	cases := []struct {
		name        string
		piece       image.Rectangle
		around      string // what fills the frame outside the piece
		wantDropped bool
	}{
		{"thin stripe on skin", stripe, "skin", true},
		{"thin stripe on background", stripe, "background", false},
		{"thin stripe in hair", stripe, "hair", false},
		{"thin stripe on cloth", stripe, "cloth", false},
		{"wide block on skin", block, "skin", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := &Regions{w: n, h: n, shoulder: n, person: raster.NewPlane(n, n)}
			wk := &regionWork{diag: math.Hypot(n, n), skin: raster.NewPlane(n, n), hair: raster.NewPlane(n, n), clothes: raster.NewPlane(n, n)}
			g := image.NewGray(image.Rect(0, 0, n, n))
			for y := range n {
				for x := range n {
					i := y*n + x
					if image.Pt(x, y).In(c.piece) {
						g.Pix[i] = 255
						wk.clothes.P[i], r.person.P[i] = 1, 1
						continue
					}
					switch c.around {
					case "skin":
						wk.skin.P[i], r.person.P[i] = 1, 1
					case "hair":
						wk.hair.P[i], r.person.P[i] = 1, 1
					case "cloth":
						wk.clothes.P[i], r.person.P[i] = 1, 1
					}
				}
			}
			lab, sizes := mask.Components(g)
			kept := []bool{false, true}
			r.dropMarksOnSkin(kept, lab, sizes, wk)
			if kept[1] == c.wantDropped {
				t.Errorf("kept %v, want dropped %v (marks area %.4f)", kept[1], c.wantDropped, r.marksArea)
			}
			if want := float64(c.piece.Dx()*c.piece.Dy()) / (n * n); c.wantDropped && math.Abs(r.marksArea-want) > 1e-9 {
				t.Errorf("marks area %.4f, want %.4f", r.marksArea, want)
			}
		})
	}
}
