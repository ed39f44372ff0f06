package raster

import (
	"image"
	"math"
	"testing"
)

func TestBlurKeepsConstantsAndSpreadsImpulses(t *testing.T) {
	for _, sigma := range []float64{0.5, 2, 8} {
		p, tmp := NewPlane(64, 48), NewPlane(64, 48)
		for i := range p.P {
			p.P[i] = 0.25
		}
		Blur(p, tmp, sigma)
		for i, v := range p.P {
			if math.Abs(float64(v)-0.25) > 1e-5 {
				t.Fatalf("sigma %v: constant plane changed at %d: %v", sigma, i, v)
			}
		}
		q := NewPlane(65, 65)
		q.P[32*65+32] = 1
		Blur(q, NewPlane(65, 65), sigma)
		var sum float64
		for _, v := range q.P {
			sum += float64(v)
		}
		if math.Abs(sum-1) > 1e-3 || q.P[32*65+32] >= 1 || q.P[32*65+33] <= 0 {
			t.Fatalf("sigma %v: impulse sum %v centre %v neighbour %v", sigma, sum, q.P[32*65+32], q.P[32*65+33])
		}
	}
}

func TestResampleAndMask(t *testing.T) {
	p := NewPlane(40, 30)
	for y := 0; y < 30; y++ {
		for x := 0; x < 40; x++ {
			p.P[y*40+x] = float32(x) / 39
		}
	}
	d := Downsample(p, 4)
	if d.W != 10 || d.H != 8 {
		t.Fatalf("downsample size %dx%d, want 10x8", d.W, d.H)
	}
	u := Upsample(d, 4, 40, 30)
	if u.W != 40 || u.H != 30 {
		t.Fatalf("upsample size %dx%d", u.W, u.H)
	}
	if u.P[15*40+2] >= u.P[15*40+37] {
		t.Fatal("upsampled ramp is not increasing")
	}
	g := image.NewGray(image.Rect(0, 0, 20, 10))
	for i := range g.Pix[:len(g.Pix)/2] {
		g.Pix[i] = 255
	}
	m := MaskPlane(g, 20, 10)
	if m.P[0] < 0.99 || m.P[len(m.P)-1] > 0.01 {
		t.Fatalf("mask plane ends %v %v, want 1 and 0", m.P[0], m.P[len(m.P)-1])
	}
	for _, c := range []struct{ e0, e1, x, want float32 }{{0, 1, -1, 0}, {0, 1, 2, 1}, {0, 1, 0.5, 0.5}} {
		if got := Smoothstep(c.e0, c.e1, c.x); math.Abs(float64(got-c.want)) > 1e-6 {
			t.Fatalf("Smoothstep(%v,%v,%v) = %v, want %v", c.e0, c.e1, c.x, got, c.want)
		}
	}
	if Clamp01(-2) != 0 || Clamp01(3) != 1 || Clamp01(0.3) != 0.3 {
		t.Fatal("Clamp01")
	}
}

// TestBoxBlur3: three box passes of radius 1 turn an impulse into the
// kernel [1 3 6 7 6 3 1]/27, keep a constant plane and leave r < 1 alone.
func TestBoxBlur3(t *testing.T) {
	p := make([]float32, 9)
	p[4] = 1
	BoxBlur3(p, 9, 1, 1)
	want := []float64{0, 1, 3, 6, 7, 6, 3, 1, 0}
	for i, v := range p {
		if math.Abs(float64(v)-want[i]/27) > 1e-6 {
			t.Fatalf("impulse blurred to %v, want %v/27", p, want)
		}
	}
	c := make([]float32, 40*30)
	for i := range c {
		c[i] = 0.7
	}
	BoxBlur3(c, 40, 30, 4)
	for i, v := range c {
		if math.Abs(float64(v)-0.7) > 1e-5 {
			t.Fatalf("constant plane changed at %d: %v", i, v)
		}
	}
	q := []float32{0, 1, 0}
	BoxBlur3(q, 3, 1, 0)
	if q[1] != 1 || q[0] != 0 {
		t.Fatalf("r=0 changed the plane: %v", q)
	}
}

// TestRGBA: an RGBA at the origin with packed rows is returned as it is;
// a sub-image (offset origin) and other types are copied to the origin;
// CopyRGBA always copies.
func TestRGBA(t *testing.T) {
	a := image.NewRGBA(image.Rect(0, 0, 4, 3))
	a.Pix[0] = 7
	if RGBA(a) != a {
		t.Fatal("RGBA copied an RGBA at the origin")
	}
	if c := CopyRGBA(a); c == a || c.Pix[0] != 7 {
		t.Fatal("CopyRGBA did not copy")
	}
	sub := a.SubImage(image.Rect(1, 1, 3, 3)).(*image.RGBA)
	s := RGBA(sub)
	if s.Rect != image.Rect(0, 0, 2, 2) || s.Stride != 8 {
		t.Fatalf("sub-image: rect %v stride %d, want (0,0)-(2,2) stride 8", s.Rect, s.Stride)
	}
	g := image.NewGray(image.Rect(0, 0, 2, 1))
	g.Pix[1] = 200
	if r := RGBA(g); r.Pix[4] != 200 || r.Pix[7] != 255 {
		t.Fatalf("gray converted to %v", r.Pix)
	}
}

// TestSRGB: known values of the sRGB curve (0.5 decodes to 0.21404; the
// linear segment below the knee), the round trip, and the byte table.
func TestSRGB(t *testing.T) {
	cases := []struct{ enc, lin float64 }{
		{0, 0}, {0.04, 0.04 / 12.92}, {0.5, 0.2140411404}, {1, 1},
	}
	for _, c := range cases {
		if got := SRGBToLinear(c.enc); math.Abs(got-c.lin) > 1e-9 {
			t.Errorf("SRGBToLinear(%v) = %v, want %v", c.enc, got, c.lin)
		}
		if got := LinearToSRGB(c.lin); math.Abs(got-c.enc) > 1e-9 {
			t.Errorf("LinearToSRGB(%v) = %v, want %v", c.lin, got, c.enc)
		}
	}
	tab := SRGBTable()
	if tab[0] != 0 || tab[255] != 1 || tab[128] != SRGBToLinear(128.0/255) {
		t.Errorf("table ends %v %v, middle %v", tab[0], tab[255], tab[128])
	}
}

// TestResampling: a same-size ResizeGray copies, Resize reaches the asked
// size, and SampleFloat interpolates and clamps at the edges.
func TestResampling(t *testing.T) {
	g := image.NewGray(image.Rect(0, 0, 3, 2))
	copy(g.Pix, []uint8{0, 10, 20, 30, 40, 50})
	if c := ResizeGray(g, 3, 2); string(c.Pix) != string(g.Pix) || &c.Pix[0] == &g.Pix[0] {
		t.Fatalf("same-size ResizeGray: %v", c.Pix)
	}
	if r := Resize(g, 7, 5); r.Rect != image.Rect(0, 0, 7, 5) {
		t.Fatalf("Resize to 7x5 gave %v", r.Rect)
	}
	p := []float32{0, 1, 2, 3}
	for _, c := range []struct{ x, y, want float32 }{{0.5, 0, 0.5}, {0, 0.5, 1}, {0.5, 0.5, 1.5}, {-3, -3, 0}, {9, 9, 3}} {
		if got := SampleFloat(p, 2, 2, c.x, c.y); math.Abs(float64(got-c.want)) > 1e-6 {
			t.Errorf("SampleFloat(%v, %v) = %v, want %v", c.x, c.y, got, c.want)
		}
	}
}
