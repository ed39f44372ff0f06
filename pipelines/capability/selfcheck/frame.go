package selfcheck

import (
	"image"

	"fashiond/pipelines"
)

// NameFrameCut is the check of a re-posed person pulled away from the
// picture's edge.
const NameFrameCut = "frame_cut"

// MaxFrameCut is the largest share of the person's contact with the
// picture's edge (see FrameCut) the re-posed person may give up.
const MaxFrameCut = 0.05

// FrameCut measures where the source person (was) reaches the picture's
// edge — the body goes on beyond the frame — the share of those edge
// pixels where the re-posed person (person, its coverage; ≥ 128 on) no
// longer does: the body's cut end is pulled into the picture and shows
// as a straight or slanted cut with the background below it (legs cut
// across by "leaning" on a photo cropped at the thighs, a forearm cut
// flat at the wrist). 0 when the source person does not reach the edge.
func FrameCut(was, person *image.Gray) pipelines.Check {
	if was.Rect.Size() != person.Rect.Size() {
		return pipelines.MaxCheck(NameFrameCut, 0, MaxFrameCut)
	}
	w, h := was.Rect.Dx(), was.Rect.Dy()
	var n, cut int
	at := func(x, y int) {
		if was.Pix[y*was.Stride+x] < 128 {
			return
		}
		n++
		if person.Pix[y*person.Stride+x] < 128 {
			cut++
		}
	}
	for x := range w {
		at(x, 0)
		at(x, h-1)
	}
	for y := 1; y < h-1; y++ {
		at(0, y)
		at(w-1, y)
	}
	v := 0.0
	if n > 0 {
		v = float64(cut) / float64(n)
	}
	return pipelines.MaxCheck(NameFrameCut, round4(v), MaxFrameCut)
}
