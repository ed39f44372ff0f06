package modelcreate

import (
	"image"
	"math"
	"testing"

	"fashiond/cv"
)

// TestPrescale: a face alignment that shrinks the face model's image below
// minWarpScale is applied to a prescaled image with a rewritten matrix
// that maps every point where the original did; a one-pixel checkerboard
// shrunk four times then comes out flat grey, where the bilinear warp
// alone reads every fourth pixel and keeps the pattern's full contrast.
// An alignment at or above minWarpScale is left alone.
func TestPrescale(t *testing.T) {
	const n = 256
	board := image.NewRGBA(image.Rect(0, 0, n, n))
	for y := range n {
		for x := range n {
			v := uint8(0)
			if (x+y)%2 == 0 {
				v = 255
			}
			o := y*board.Stride + x*4
			board.Pix[o], board.Pix[o+1], board.Pix[o+2], board.Pix[o+3] = v, v, v, 255
		}
	}
	for _, tc := range []struct {
		name      string
		scale     float64
		prescaled bool
	}{
		{"shrink 4x", 0.25, true},
		{"shrink 2x", 0.5, true},
		{"at the limit", minWarpScale, false},
		{"enlarge", 1.5, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			th := 0.3 // a rotation as well
			m := [6]float64{tc.scale * math.Cos(th), -tc.scale * math.Sin(th), 7, tc.scale * math.Sin(th), tc.scale * math.Cos(th), 11}
			orig := m
			small := prescale(board, &m)
			if got := small.Bounds().Dx() != n; got != tc.prescaled {
				t.Fatalf("prescaled %v (size %v), want %v", got, small.Bounds().Size(), tc.prescaled)
			}
			k := float64(small.Bounds().Dx()) / n
			for _, pt := range [][2]float64{{0, 0}, {100, 30}, {255, 255}} {
				wx, wy := orig[0]*pt[0]+orig[1]*pt[1]+orig[2], orig[3]*pt[0]+orig[4]*pt[1]+orig[5]
				sx, sy := pt[0]*k, pt[1]*k
				gx, gy := m[0]*sx+m[1]*sy+m[2], m[3]*sx+m[4]*sy+m[5]
				if math.Hypot(gx-wx, gy-wy) > 1e-6 {
					t.Fatalf("point %v maps to (%.3f, %.3f), want (%.3f, %.3f)", pt, gx, gy, wx, wy)
				}
			}
			if !tc.prescaled {
				return
			}
			w := int(float64(n) * tc.scale)
			// Around the warped board's centre.
			cx := int(orig[0]*n/2 + orig[1]*n/2 + orig[2])
			cy := int(orig[3]*n/2 + orig[4]*n/2 + orig[5])
			spread := func(img *image.RGBA) float64 {
				lo, hi := 255.0, 0.0
				for y := cy - w/8; y < cy+w/8; y++ {
					for x := cx - w/8; x < cx+w/8; x++ {
						v := float64(img.Pix[y*img.Stride+x*4])
						lo, hi = math.Min(lo, v), math.Max(hi, v)
					}
				}
				return hi - lo
			}
			with, without := spread(cv.WarpAffine(small, m, 2*w, 2*w)), spread(cv.WarpAffine(board, orig, 2*w, 2*w))
			if with > 40 || without < 120 {
				t.Errorf("grey spread %.0f prescaled (want at most 40), %.0f warped alone (want at least 120)", with, without)
			}
		})
	}
}
