package repose

import "math"

// Edge pinning tuning.
const (
	// pinBandFrac is the width, as a fraction of the image's longer side,
	// of the band along a picture edge over which a layer that the edge
	// cuts is eased from its place at the edge (held) to its re-posed
	// place: the body goes on beyond the frame, so its cut end must stay
	// on the edge rather than be pulled into the picture as a straight or
	// slanted cut ("leaning" on a photo cropped at the thighs).
	pinBandFrac = 0.08
	// pinMinContact is the fewest covered pixels of a layer on an edge
	// for the edge to hold it.
	pinMinContact = 8
)

// cutEdges says which picture edges (top, bottom, left, right) cut the
// layer's coverage (alpha, w*h) over at least pinMinContact pixels.
func cutEdges(alpha []uint8, w, h int) [4]bool {
	var n [4]int
	for x := range w {
		if alpha[x] >= 128 {
			n[0]++
		}
		if alpha[(h-1)*w+x] >= 128 {
			n[1]++
		}
	}
	for y := range h {
		if alpha[y*w] >= 128 {
			n[2]++
		}
		if alpha[y*w+w-1] >= 128 {
			n[3]++
		}
	}
	var cut [4]bool
	for i, c := range n {
		cut[i] = c >= pinMinContact
	}
	return cut
}

// pinToEdges eases the re-posed grid vertices (vx, vy; the grid of step g
// over w×h) of a layer cut by the edges in cut back toward their source
// places within pinBandFrac of the longer side of those edges, across
// each edge only: at a cut edge a vertex keeps its distance to that edge
// (the cut end stays on it) and may slide along it; a band's width in it
// moves fully, with a smoothstep between. Held along the edge too, a head
// at the top edge turned sideways kept its hair and forehead where they
// were while the chin moved, and the face was sheared
// (codait_man_standing "looking left/right").
func pinToEdges(vx, vy []float64, need []bool, cut [4]bool, w, h, g int) {
	if !cut[0] && !cut[1] && !cut[2] && !cut[3] {
		return
	}
	band := pinBandFrac * float64(max(w, h))
	gw := (w+g-1)/g + 1
	ease := func(d float64) float64 {
		t := math.Min(1, d/band)
		return t * t * (3 - 2*t)
	}
	for i, ok := range need {
		if !ok {
			continue
		}
		x, y := float64(min(i%gw*g, w-1)), float64(min(i/gw*g, h-1))
		dy, dx := math.Inf(1), math.Inf(1)
		for e, dist := range [4]float64{y, float64(h-1) - y, x, float64(w-1) - x} {
			switch {
			case !cut[e]:
			case e < 2:
				dy = math.Min(dy, dist)
			default:
				dx = math.Min(dx, dist)
			}
		}
		vx[i] = x + (vx[i]-x)*ease(dx)
		vy[i] = y + (vy[i]-y)*ease(dy)
	}
}
