package recolour

import (
	"image"
	"math"

	"fashiond/pipelines/capability/mask"
)

// Marks on bare skin. The skin/clothes/hair parser labels paint on bare
// skin clothes: the white and orange body-paint stripes on the neck and
// collarbones of a woman with no top on came out as her "top" and were
// painted red, with the skin between them. A garment piece is a mark on
// the skin when it is thin (paint strokes, a tattoo's lines, a necklace)
// and bare body surrounds it: a worn garment is wide, and where it is
// narrow (a strap, a collar) it joins the rest of the garment, or
// background, hair or other cloth lie around it. Measured on the
// face-paint portrait: its 10 kept pieces have half-widths 0.010-0.038
// shoulder widths and 0.63-1.00 of their surroundings bare body; on the
// 11 other photos of the prompt-tryon tests and the sheet no kept piece is
// thinner than 0.05 (their kept pieces read 0.06-1.98).
const (
	// markHalfWidth: a piece whose widest point's half-width (the largest
	// distance from inside it to its edge) is under this share of the
	// shoulder width is thin. The body's surface is the parser's skin
	// closed over gaps of that size, so that paint of another colour
	// (which the parser calls neither skin nor clothes, or clothes) beside
	// a mark is body too.
	markHalfWidth = 0.05
	// markRing: a piece's surroundings are the pixels within this share of
	// the image diagonal of it (nearer to it than to any other piece).
	markRing = 0.006
	// markBodyShare: a thin piece whose surroundings are at least this
	// share bare body (the skin's surface, not hair) is a mark.
	markBodyShare = 0.6
	// bareOn: the parser's skin and hair count above this.
	bareOn = 0.5
)

// dropMarksOnSkin clears kept for the kept pieces (lab, sizes) that are
// marks on bare skin, and records their area in r.marksArea.
func (r *Regions) dropMarksOnSkin(kept []bool, lab []int32, sizes []int, wk *regionWork) {
	n := len(sizes)
	hw := pieceHalfWidths(lab, n, r.w, r.h)
	thin := false
	for l := 1; l < n; l++ {
		thin = thin || kept[l] && hw[l] < markHalfWidth*r.shoulder
	}
	if !thin {
		return
	}
	body := r.bareBody(wk)
	sh := pieceShares(lab, n, r.w, max(1, int(math.Round(markRing*wk.diag))), func(i int) bool { return body.Pix[i] != 0 })
	for l := 1; l < n; l++ {
		if kept[l] && hw[l] < markHalfWidth*r.shoulder && sh[l] >= markBodyShare {
			kept[l] = false
			r.marksArea += float64(sizes[l]) / float64(r.w*r.h)
		}
	}
}

// pieceHalfWidths is each labelled piece's largest distance, in pixels,
// from a pixel inside it to the nearest pixel outside it.
func pieceHalfWidths(lab []int32, n, w, h int) []float64 {
	d := mask.SqDist(w, h, func(i int) bool { return lab[i] == 0 })
	hw := make([]float64, n)
	for i, l := range lab {
		if l != 0 {
			hw[l] = max(hw[l], d[i])
		}
	}
	for l := range hw {
		hw[l] = math.Sqrt(hw[l])
	}
	return hw
}

// pieceShares is the share of each labelled piece's surroundings (the
// pixels within reach 4-connected steps of it, and nearer to it than to
// any other piece) where in(i) holds.
func pieceShares(lab []int32, n, w, reach int, in func(i int) bool) []float64 {
	owner := make([]int32, len(lab))
	copy(owner, lab)
	var front []int
	for i, l := range lab {
		if l != 0 {
			front = append(front, i)
		}
	}
	ring, hits := make([]int, n), make([]int, n)
	for range reach {
		var next []int
		for _, p := range front {
			x := p % w
			for _, q := range [4]int{p - 1, p + 1, p - w, p + w} {
				if q < 0 || q >= len(lab) || owner[q] != 0 || (q == p-1 && x == 0) || (q == p+1 && x == w-1) {
					continue
				}
				owner[q] = owner[p]
				ring[owner[q]]++
				if in(q) {
					hits[owner[q]]++
				}
				next = append(next, q)
			}
		}
		front = next
	}
	share := make([]float64, n)
	for l := range share {
		if ring[l] > 0 {
			share[l] = float64(hits[l]) / float64(ring[l])
		}
	}
	return share
}

// bareBody is the person's bare body surface (255): the parser's skin
// closed over gaps of markHalfWidth shoulder widths, less its hair.
func (r *Regions) bareBody(wk *regionWork) *image.Gray {
	skin := image.NewGray(image.Rect(0, 0, r.w, r.h))
	for i, v := range wk.skin.P {
		if v > bareOn {
			skin.Pix[i] = 255
		}
	}
	body := mask.Close(skin, markHalfWidth*r.shoulder)
	for i, v := range wk.hair.P {
		if v > bareOn {
			body.Pix[i] = 0
		}
	}
	return body
}
