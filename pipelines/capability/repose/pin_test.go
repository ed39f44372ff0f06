package repose

import (
	"math"
	"testing"

	"fashiond/perception"
)

// TestPinToEdges: a layer cut by the bottom edge keeps its vertices on
// that edge at their distance to it (a vertical shift is held there) but
// lets them slide along it (a horizontal shift is kept), and moves those a
// band's width away fully; a layer no edge cuts moves everywhere.
func TestPinToEdges(t *testing.T) {
	const w, h, g = 100, 100, 10
	gw := (w+g-1)/g + 1
	alpha := make([]uint8, w*h)
	for x := 40; x < 60; x++ {
		alpha[(h-1)*w+x] = 255 // the bottom edge cuts the layer
	}
	cut := cutEdges(alpha, w, h)
	if cut != [4]bool{false, true, false, false} {
		t.Fatalf("cut edges %v, want the bottom only", cut)
	}
	band := pinBandFrac * float64(max(w, h)) // 8 px
	for _, c := range []struct {
		name         string
		cut          [4]bool
		row          int // grid row of the vertex (y = row*g, the last at h-1)
		shift        [2]float64
		wantDx, want float64 // moved along x, along y
	}{
		{"across the cut edge: held", cut, 10, [2]float64{0, -5}, 0, 0},
		{"along the cut edge: slides", cut, 10, [2]float64{5, 0}, 5, 0},
		{"a band away", cut, 9, [2]float64{5, -5}, 5, -5},
		{"no edge cuts", [4]bool{}, 10, [2]float64{5, -5}, 5, -5},
	} {
		t.Run(c.name, func(t *testing.T) {
			vx, vy := make([]float64, gw*gw), make([]float64, gw*gw)
			need := make([]bool, gw*gw)
			i := c.row*gw + 5
			need[i] = true
			x, y := float64(5*g), float64(min(c.row*g, h-1))
			vx[i], vy[i] = x+c.shift[0], y+c.shift[1]
			pinToEdges(vx, vy, need, c.cut, w, h, g)
			if dx, dy := vx[i]-x, vy[i]-y; math.Abs(dx-c.wantDx) > 1e-9 || math.Abs(dy-c.want) > 1e-9 {
				t.Fatalf("moved (%g,%g), want (%g,%g) (band %g)", dx, dy, c.wantDx, c.want, band)
			}
		})
	}
}

// TestHeadMapEasedFromTheNeck: the head bone's map (here a shift of 10
// px) leaves the neck end where it is, moves the face and above fully,
// and half-way between by the smoothstep's half; other bones map in full.
func TestHeadMapEasedFromTheNeck(t *testing.T) {
	shift := [6]float64{1, 0, 10, 0, 1, 0} // x' = x + 10
	head := bone{a: perception.Point{X: 50, Y: 100}, b: perception.Point{X: 50, Y: 0}, head: true, ease: 0.3, xf: shift}
	limb := head
	limb.head = false
	for _, c := range []struct {
		name string
		b    bone
		y    float64
		dx   float64
	}{
		{"neck end", head, 100, 0},
		{"below the neck", head, 120, 0},
		{"half the easing", head, 100 - 0.3*100/2, 5},
		{"the face", head, 40, 10},
		{"not the head", limb, 100, 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := c.b.mapPoint(perception.Point{X: 50, Y: c.y})
			if math.Abs(q.X-50-c.dx) > 1e-9 || q.Y != c.y {
				t.Fatalf("mapped to (%g,%g), want x %g", q.X, q.Y, 50+c.dx)
			}
		})
	}
}
