package scheduler

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// runCounting runs a job with a model returning 0.3*x and counts noise draws.
func runCounting(t *testing.T, s *Sampler, seed uint64) ([]float32, int) {
	t.Helper()
	src := gaussian(seed)
	draws := 0
	noise := func(n int) []float32 { draws++; return src(n) }
	x := []float32{0.8, -0.2, 1.1, 0.05}
	for i := range s.Timesteps() {
		in := s.ScaleModelInput(x, i)
		out := make([]float32, len(in))
		for j, v := range in {
			out[j] = 0.3 * v
		}
		var err error
		if x, err = s.Step(out, x, i, noise); err != nil {
			t.Fatal(err)
		}
	}
	return x, draws
}

// TestNoiseOrderAndReproducibility: the documented number of draws per
// method, identical results for the same noise source, different results
// for another.
func TestNoiseOrderAndReproducibility(t *testing.T) {
	const steps = 8
	cases := []struct {
		kind  Kind
		eta   float64
		draws int
	}{
		{EulerAncestral, 0, steps}, // every step, the last one too
		{DDIM, 0.7, steps},         // every step when eta > 0
		{LCM, 0, steps - 1},        // every step but the last
		{DDIM, 0, 0},
		{Euler, 0, 0},
		{DPMPP2M, 0, 0},
		{PNDM, 0, 0},
	}
	for _, c := range cases {
		mk := func() *Sampler {
			s, err := New(sd15(t), c.kind, steps, 1)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.SetEta(c.eta); err != nil {
				t.Fatal(err)
			}
			return s
		}
		a, n := runCounting(t, mk(), 42)
		b, _ := runCounting(t, mk(), 42)
		other, _ := runCounting(t, mk(), 43)
		if n != c.draws {
			t.Errorf("%s eta %v: %d noise draws, want %d", c.kind, c.eta, n, c.draws)
		}
		if !slices.Equal(a, b) {
			t.Errorf("%s: same noise, different results %v vs %v", c.kind, a, b)
		}
		if stochastic := c.draws > 0; stochastic == slices.Equal(a, other) {
			t.Errorf("%s: other seed changed result: %v (stochastic %v)", c.kind, !slices.Equal(a, other), stochastic)
		}
	}
}

func TestStepErrors(t *testing.T) {
	s, err := New(sd15(t), EulerAncestral, 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	x := []float32{1, 2}
	if _, err := s.Step([]float32{0, 0}, x, 1, gaussian(1)); err == nil || !strings.Contains(err.Error(), "out of order") {
		t.Errorf("step 1 first: %v", err)
	}
	if _, err := s.Step([]float32{0}, x, 0, gaussian(1)); err == nil {
		t.Error("length mismatch accepted")
	}
	if _, err := s.Step([]float32{0, 0}, x, 0, nil); err == nil || !strings.Contains(err.Error(), "noise") {
		t.Errorf("nil noise for euler-a: %v", err)
	}
	short := func(n int) []float32 { return make([]float32, n-1) }
	if _, err := s.Step([]float32{0, 0}, x, 0, short); err == nil || !strings.Contains(err.Error(), "noise source gave 1") {
		t.Errorf("short noise: %v", err)
	}
	// Failed steps leave the state alone: step 0 still works.
	if _, err := s.Step([]float32{0, 0}, x, 0, gaussian(1)); err != nil {
		t.Errorf("retry of step 0: %v", err)
	}
	if err := s.SetEta(0.5); err == nil {
		t.Error("SetEta after the first step accepted")
	}
	for _, eta := range []float64{-0.1, 1.5, math.NaN(), math.Inf(1)} {
		fresh, _ := New(sd15(t), DDIM, 4, 1)
		if err := fresh.SetEta(eta); err == nil {
			t.Errorf("SetEta(%v) accepted", eta)
		}
	}
	// Step does not modify its inputs.
	d, _ := New(sd15(t), DDIM, 4, 1)
	mo, in := []float32{0.1, 0.2}, []float32{1, 2}
	if _, err := d.Step(mo, in, 0, nil); err != nil || mo[0] != 0.1 || in[1] != 2 {
		t.Errorf("Step changed its inputs: %v %v %v", mo, in, err)
	}
}

func TestCallIndexPanics(t *testing.T) {
	s, err := New(sd15(t), DDIM, 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func(){
		"scale":    func() { s.ScaleModelInput([]float32{1}, 4) },
		"addnoise": func() { s.AddNoise([]float32{1}, []float32{1}, -1) },
		"lengths":  func() { s.AddNoise([]float32{1}, []float32{1, 2}, 0) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

// TestGuidanceEmbedding: diffusers' get_guidance_scale_embedding of
// guidance_scale-1 (LCM pipeline), w scaled by 1000, [sin | cos].
func TestGuidanceEmbedding(t *testing.T) {
	e := GuidanceEmbedding(8.5, 256) // w = 7500
	f1 := math.Exp(-math.Log(10000) / 127)
	cases := []struct {
		idx  int
		want float64
		tol  float64 // float32 rounding of the argument w*f (up to ~5e-4 rad)
	}{
		{0, math.Sin(7500), 1e-6}, // f_0 = 1 exactly: the argument is exact
		{128, math.Cos(7500), 1e-6},
		{1, math.Sin(7500 * f1), 1e-3},
		{129, math.Cos(7500 * f1), 1e-3},
		{127, math.Sin(0.75), 1e-5}, // f_127 = 1e-4
		{255, math.Cos(0.75), 1e-5},
	}
	for _, c := range cases {
		if d := math.Abs(float64(e[c.idx]) - c.want); d > c.tol {
			t.Errorf("emb[%d] = %v, want %v", c.idx, e[c.idx], c.want)
		}
	}
	if len(e) != 256 {
		t.Fatalf("len %d", len(e))
	}
	odd := GuidanceEmbedding(1, 5) // w = 0: sin 0, cos 1, zero pad
	if want := []float32{0, 0, 1, 1, 0}; !slices.Equal(odd, want) {
		t.Errorf("GuidanceEmbedding(1, 5) = %v, want %v", odd, want)
	}
}
