package body

import (
	"errors"
	"image"
	"image/color"
	"image/draw"
	"testing"

	"fashiond/perception"
)

func face(x0, y0, x1, y1 float64) perception.Face {
	return perception.Face{Box: [4]float64{x0, y0, x1, y1}, Score: 0.9}
}

func rects(w, h int, rs ...image.Rectangle) *image.Gray {
	g := image.NewGray(image.Rect(0, 0, w, h))
	for _, r := range rs {
		draw.Draw(g, r, image.White, image.Point{}, draw.Src)
	}
	return g
}

func TestFromPerception(t *testing.T) {
	const w, h = 200, 100
	tests := []struct {
		name       string
		faces      []perception.Face
		mask       *image.Gray
		wantPeople int
		wantBox    image.Rectangle // subject's box
		wantErr    error
	}{
		{"two separate people, larger face wins",
			[]perception.Face{face(20, 10, 40, 30), face(130, 10, 160, 40)},
			rects(w, h, image.Rect(10, 5, 50, 100), image.Rect(120, 5, 170, 100)),
			2, image.Rect(120, 5, 170, 100), nil},
		{"one component shared by two faces is split between them",
			[]perception.Face{face(40, 10, 60, 30), face(140, 10, 170, 40)},
			rects(w, h, image.Rect(20, 5, 190, 100)),
			2, image.Rect(92, 5, 190, 100), nil},
		{"tied faces: the most central wins",
			[]perception.Face{face(10, 10, 30, 30), face(110, 40, 130, 60)},
			rects(w, h, image.Rect(5, 5, 40, 100), image.Rect(100, 35, 140, 100)),
			2, image.Rect(100, 35, 140, 100), nil},
		{"small faceless component near the subject is its foot",
			[]perception.Face{face(80, 10, 100, 30)},
			rects(w, h, image.Rect(70, 5, 110, 80), image.Rect(75, 85, 90, 100)),
			1, image.Rect(70, 5, 110, 100), nil},
		{"large faceless component is a person seen from the back",
			[]perception.Face{face(20, 10, 40, 30)},
			rects(w, h, image.Rect(10, 5, 50, 100), image.Rect(120, 5, 190, 100)),
			2, image.Rect(10, 5, 50, 100), nil},
		{"no face: the largest component",
			nil,
			rects(w, h, image.Rect(10, 50, 30, 100), image.Rect(120, 5, 190, 100)),
			2, image.Rect(120, 5, 190, 100), nil},
		{"face the mask missed gets an assumed body",
			[]perception.Face{face(90, 10, 110, 30)},
			rects(w, h),
			1, image.Rect(68, 0, 132, 100), nil},
		{"tiny or low-score faces do not count",
			[]perception.Face{face(90, 10, 91, 11), {Box: [4]float64{50, 10, 80, 40}, Score: 0.3}},
			rects(w, h),
			0, image.Rectangle{}, ErrNoPerson},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := fromPerception(w, h, tc.faces, tc.mask)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(a.People) != tc.wantPeople {
				t.Errorf("people = %d, want %d", len(a.People), tc.wantPeople)
			}
			if got := a.SubjectPerson().Box; got != tc.wantBox {
				t.Errorf("subject box = %v, want %v (rule %q)", got, tc.wantBox, a.Rule)
			}
		})
	}
}

func TestConfineKeepsOutsideIdentical(t *testing.T) {
	const w, h = 60, 40
	orig := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range orig.Pix {
		orig.Pix[i] = uint8(i * 7)
	}
	edited := image.NewRGBA(orig.Rect)
	draw.Draw(edited, edited.Rect, image.NewUniform(color.RGBA{255, 0, 0, 255}), image.Point{}, draw.Src)
	region := rects(w, h, image.Rect(20, 10, 40, 30))
	alpha := BandAlpha(region, 4)
	out := Confine(orig, edited, alpha)
	if got := ChangedOutside(orig, out, alpha, 0); got != 0 {
		t.Errorf("changed outside = %v, want 0", got)
	}
	if c := out.RGBAAt(30, 20); c != (color.RGBA{255, 0, 0, 255}) {
		t.Errorf("inside = %v, want the edit", c)
	}
	if c, o := out.RGBAAt(5, 5), orig.RGBAAt(5, 5); c != o {
		t.Errorf("outside = %v, want %v", c, o)
	}
	// In the band the edit fades: 2 px from the region, alpha ~ 50%.
	if a := alpha.GrayAt(18, 20).Y; a < 100 || a > 160 {
		t.Errorf("band alpha at 2 px = %d, want about 128", a)
	}
	// The unconfined edit changes everything outside.
	if got := ChangedOutside(orig, edited, alpha, 8); got < 0.9 {
		t.Errorf("changed outside of the raw edit = %v, want > 0.9", got)
	}
}

func TestConfineCrop(t *testing.T) {
	const w, h = 50, 50
	orig := image.NewRGBA(image.Rect(0, 0, w, h))
	r := image.Rect(10, 10, 30, 30)
	crop := Crop(orig, r)
	draw.Draw(crop, crop.Rect, image.White, image.Point{}, draw.Src)
	alpha := BandAlpha(rects(w, h, image.Rect(15, 15, 25, 25)), 2)
	out := ConfineCrop(orig, crop, r, alpha)
	if out.RGBAAt(20, 20).R != 255 || out.RGBAAt(11, 11).R != 0 || out.RGBAAt(40, 40).R != 0 {
		t.Errorf("crop placed wrongly: %v %v %v", out.RGBAAt(20, 20), out.RGBAAt(11, 11), out.RGBAAt(40, 40))
	}
}
