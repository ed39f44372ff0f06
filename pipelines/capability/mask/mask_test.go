package mask

import (
	"image"
	"math"
	"math/rand/v2"
	"testing"
)

func TestSqDistMatchesBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	w, h := 23, 17
	site := make([]bool, w*h)
	for i := range site {
		site[i] = r.IntN(20) == 0
	}
	d := SqDist(w, h, func(i int) bool { return site[i] })
	for i := range d {
		best := math.Inf(1)
		for j := range site {
			if site[j] {
				dx, dy := float64(i%w-j%w), float64(i/w-j/w)
				best = math.Min(best, dx*dx+dy*dy)
			}
		}
		if math.IsInf(best, 1) {
			best = inf
		}
		if d[i] != best {
			t.Fatalf("pixel %d: %v, want %v", i, d[i], best)
		}
	}
}

func dot(w, h, x, y int) *image.Gray {
	m := image.NewGray(image.Rect(0, 0, w, h))
	m.Pix[y*w+x] = 255
	return m
}

func TestDilateErodeDisc(t *testing.T) {
	// A point dilated by r=5 is the integer disc of radius 5: 81 pixels.
	d := Dilate(dot(41, 41, 20, 20), 5)
	if n := Count(d); n != 81 {
		t.Errorf("disc area %d, want 81", n)
	}
	if e := Erode(d, 5); Count(e) != 1 {
		t.Errorf("eroding the disc back leaves %d pixels, want 1", Count(e))
	}
}

func TestCloseBridgesNarrowGaps(t *testing.T) {
	for _, tc := range []struct {
		gap    int
		bridge bool
	}{{8, true}, {14, true}, {20, false}} {
		m := image.NewGray(image.Rect(0, 0, 100, 100))
		for y := 20; y < 80; y++ {
			for x := 10; x < 90; x++ {
				if y < 50-tc.gap/2 || y >= 50-tc.gap/2+tc.gap {
					m.Pix[y*100+x] = 255
				}
			}
		}
		c := Close(m, 8)
		if got := c.Pix[50*100+50] == 255; got != tc.bridge {
			t.Errorf("gap %d: bridged %v, want %v", tc.gap, got, tc.bridge)
		}
	}
}

func TestComponentsHolesLargest(t *testing.T) {
	m := image.NewGray(image.Rect(0, 0, 30, 30))
	for y := 2; y < 20; y++ {
		for x := 2; x < 20; x++ {
			if !(y >= 8 && y < 12 && x >= 8 && x < 12) {
				m.Pix[y*30+x] = 255
			}
		}
	}
	m.Pix[25*30+25] = 255
	if n := Count(FillHoles(m)); n != 18*18+1 {
		t.Errorf("filled %d, want %d", n, 18*18+1)
	}
	if n := Count(Largest(m)); n != 18*18-16 {
		t.Errorf("largest %d, want %d", n, 18*18-16)
	}
	if n := Count(RemoveSmall(m, 2)); n != 18*18-16 {
		t.Errorf("remove small kept %d", n)
	}
	if b := BBox(m); b != image.Rect(2, 2, 26, 26) {
		t.Errorf("bbox %v", b)
	}
}

func TestGaussBlurKeepsMean(t *testing.T) {
	w, h := 40, 30
	f := make([]float32, w*h)
	f[15*w+20] = 1
	g := GaussBlur(f, w, h, 2)
	var s float32
	for _, v := range g {
		s += v
	}
	if math.Abs(float64(s)-1) > 1e-4 || g[15*w+20] >= 1 || g[15*w+20] <= g[15*w+24] {
		t.Errorf("blur of an impulse: sum %v centre %v", s, g[15*w+20])
	}
}
