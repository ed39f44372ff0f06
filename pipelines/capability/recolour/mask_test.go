package recolour

import (
	"image"
	"testing"
)

func maskArea(m *image.Gray) int {
	n := 0
	for _, v := range m.Pix {
		if v != 0 {
			n++
		}
	}
	return n
}

// TestGarmentMaskFollowsTheGarment: a dress adds the legs, a jacket the
// arms, and the face is never in the mask.
func TestGarmentMaskFollowsTheGarment(t *testing.T) {
	f := photo(t, "images/fashn_model.webp")
	area := map[string]int{}
	for _, prompt := range []string{"a red top", "a red jacket", "a red dress"} {
		spec, err := Parse(prompt)
		if err != nil {
			t.Fatal(err)
		}
		face := image.Rect(f.r.w*2/5, 0, f.r.w*3/5, f.r.h/10)
		m := GarmentMask(f.r, spec, &face)
		area[prompt] = maskArea(m)
		for y := face.Min.Y; y < face.Max.Y; y++ {
			for x := face.Min.X; x < face.Max.X; x++ {
				if m.GrayAt(x, y).Y != 0 {
					t.Fatalf("%s: face pixel (%d,%d) in the mask", prompt, x, y)
				}
			}
		}
	}
	if area["a red jacket"] <= area["a red top"] || area["a red dress"] <= area["a red jacket"] {
		t.Fatalf("mask areas %v: want top < jacket (sleeves) < dress (legs)", area)
	}
}
