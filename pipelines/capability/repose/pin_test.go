package repose

import (
	"math"
	"testing"
)

// TestPinToEdges: a layer cut by the bottom edge keeps its vertices on
// that edge where they were and moves those a band's width away fully; a
// layer no edge cuts moves everywhere.
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
		name   string
		cut    [4]bool
		row    int     // grid row of the vertex (y = row*g, the last at h-1)
		wantDx float64 // of a 5-pixel shift
	}{
		{"on the cut edge", cut, 10, 0},
		{"a band away", cut, 9, 5},
		{"no edge cuts", [4]bool{}, 10, 5},
	} {
		t.Run(c.name, func(t *testing.T) {
			vx, vy := make([]float64, gw*gw), make([]float64, gw*gw)
			need := make([]bool, gw*gw)
			i := c.row*gw + 5
			need[i] = true
			x, y := float64(5*g), float64(min(c.row*g, h-1))
			vx[i], vy[i] = x+5, y
			pinToEdges(vx, vy, need, c.cut, w, h, g)
			if dx := vx[i] - x; math.Abs(dx-c.wantDx) > 1e-9 {
				t.Fatalf("moved %g, want %g (band %g)", dx, c.wantDx, band)
			}
		})
	}
}
