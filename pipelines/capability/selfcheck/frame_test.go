package selfcheck

import (
	"image"
	"testing"
)

// TestFrameCut: a person cut by the bottom edge and still reaching it
// passes, and so does one slid along it by up to frameSlide (5 px here);
// pulled up off the edge over half its width, it fails with 0.5, and slid
// further than frameSlide it loses the contact beyond; a person inside
// the frame reads 0 wherever it moves.
func TestFrameCut(t *testing.T) {
	const w, h = 100, 100
	was := rectMask(w, h, image.Rect(40, 50, 60, 100))
	for _, c := range []struct {
		name   string
		was    *image.Gray
		person *image.Gray
		value  float64
	}{
		{"still on the edge", was, rectMask(w, h, image.Rect(40, 30, 60, 100)), 0},
		{"half pulled off", was, rectMask(w, h, image.Rect(40, 50, 50, 100), image.Rect(50, 40, 60, 90)), 0.5},
		{"slid along the edge", was, rectMask(w, h, image.Rect(45, 50, 65, 100)), 0},
		{"slid too far", was, rectMask(w, h, image.Rect(50, 50, 70, 100)), 0.25},
		{"inside the frame", rectMask(w, h, image.Rect(40, 20, 60, 80)), rectMask(w, h, image.Rect(10, 10, 30, 50)), 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := FrameCut(c.was, c.person)
			if got.Name != NameFrameCut || got.Value != c.value || got.Pass != (c.value <= MaxFrameCut) {
				t.Fatalf("%+v, want value %v", got, c.value)
			}
		})
	}
}
