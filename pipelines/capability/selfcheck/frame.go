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
// pixels that the re-posed person (person, its coverage; ≥ 128 on) no
// longer covers: the body's cut end is pulled into the picture and shows
// as a straight or slanted cut with the background below it (legs cut
// across by "leaning" on a photo cropped at the thighs, a forearm cut
// flat at the wrist). A cut end that slides along its edge, by up to
// frameSlide of the edge's length, keeps its contact: the body beyond the
// frame slides with it (a head cut by the top edge shifted sideways for
// "looking left" measured 0.2222 as if pulled off). On each edge the
// contact lost is the source's contact pixels less the re-posed person's
// within frameSlide of them. 0 when the source person does not reach the
// edge.
func FrameCut(was, person *image.Gray) pipelines.Check {
	if was.Rect.Size() != person.Rect.Size() {
		return pipelines.MaxCheck(NameFrameCut, 0, MaxFrameCut)
	}
	w, h := was.Rect.Dx(), was.Rect.Dy()
	on := func(m *image.Gray, x, y int) bool { return m.Pix[y*m.Stride+x] >= 128 }
	var n, cut int
	edge := func(l int, at func(i int) (int, int)) {
		src, out := make([]bool, l), make([]bool, l)
		for i := range l {
			x, y := at(i)
			src[i], out[i] = on(was, x, y), on(person, x, y)
		}
		k, got := slideContact(src, out, int(frameSlide*float64(l)))
		n += k
		cut += max(0, k-got)
	}
	edge(w, func(i int) (int, int) { return i, 0 })
	edge(w, func(i int) (int, int) { return i, h - 1 })
	edge(h, func(i int) (int, int) { return 0, i })
	edge(h, func(i int) (int, int) { return w - 1, i })
	v := 0.0
	if n > 0 {
		v = float64(cut) / float64(n)
	}
	return pipelines.MaxCheck(NameFrameCut, round4(v), MaxFrameCut)
}

// frameSlide is how far, as a share of an edge's length, a cut end may
// slide along its edge and keep its contact (FrameCut).
const frameSlide = 0.05

// slideContact counts the source's contact pixels along one edge (src)
// and the re-posed person's (out) within r pixels of them.
func slideContact(src, out []bool, r int) (n, got int) {
	near := make([]bool, len(src))
	for i, v := range src {
		if !v {
			continue
		}
		n++
		for j := max(0, i-r); j <= min(len(src)-1, i+r); j++ {
			near[j] = true
		}
	}
	for i, v := range out {
		if v && near[i] {
			got++
		}
	}
	return n, got
}
