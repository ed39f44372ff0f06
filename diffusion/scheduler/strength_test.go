package scheduler

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// TestStrength: 10 steps at strength 0.5 keep int(10*0.5) = 5 steps. The
// expected tables are the tail of each method's 10-step table (see
// TestTimestepTables); PNDM rebuilds PLMS on the lowest 5 grid points, so it
// starts where DDIM does and has one extra (repeated) call.
func TestStrength(t *testing.T) {
	cases := []struct {
		kind Kind
		want []float64
		// noise level of call 0: AddNoise(0, 1, 0)
		level func(ac []float64) float64
	}{
		{PNDM, []float64{401, 301, 301, 201, 101, 1}, vpLevel(401)},
		{DDIM, []float64{401, 301, 201, 101, 1}, vpLevel(401)},
		{Euler, []float64{444, 333, 222, 111, 0}, sigmaLevel(444)},
		{EulerAncestral, []float64{444, 333, 222, 111, 0}, sigmaLevel(444)},
		{DPMPP2M, []float64{500, 400, 300, 200, 100}, vpLevel(500)},
		{LCM, []float64{499, 399, 299, 199, 99}, vpLevel(499)},
	}
	for _, c := range cases {
		t.Run(string(c.kind), func(t *testing.T) {
			s, err := New(sd15(t), c.kind, 10, 0.5)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Timesteps(); !slices.Equal(got, c.want) {
				t.Fatalf("timesteps %v, want %v", got, c.want)
			}
			got := float64(s.AddNoise([]float32{0}, []float32{1}, 0)[0])
			if want := c.level(s.AlphasCumprod()); math.Abs(got-want) > 1e-6 {
				t.Errorf("noise level of call 0 = %.8g, want %.8g", got, want)
			}
		})
	}
}

func vpLevel(t int) func([]float64) float64 {
	return func(ac []float64) float64 { return math.Sqrt(1 - ac[t]) }
}

func sigmaLevel(t int) func([]float64) float64 {
	return func(ac []float64) float64 { return math.Sqrt((1 - ac[t]) / ac[t]) }
}

// TestStrengthRounding: diffusers truncates steps*strength.
func TestStrengthRounding(t *testing.T) {
	cases := []struct {
		steps    int
		strength float64
		calls    int
	}{
		{10, 0.3, 3}, {10, 0.7, 7}, {50, 0.75, 37}, {10, 1, 10}, {3, 0.34, 1}, {10, 0.1, 1},
	}
	for _, c := range cases {
		s, err := New(sd15(t), DDIM, c.steps, c.strength)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(s.Timesteps()); n != c.calls {
			t.Errorf("steps %d strength %v: %d calls, want %d", c.steps, c.strength, n, c.calls)
		}
	}
}

func TestStrengthErrors(t *testing.T) {
	for _, st := range []float64{0.05, 0, -1, 1.5, math.NaN()} {
		_, err := New(sd15(t), DDIM, 10, st)
		if err == nil || !strings.Contains(err.Error(), "strength") {
			t.Errorf("strength %v: err = %v, want an error naming strength", st, err)
		}
	}
	for _, steps := range []int{0, -3, 1001} {
		if _, err := New(sd15(t), DDIM, steps, 1); err == nil || !strings.Contains(err.Error(), "steps") {
			t.Errorf("steps %d: err = %v, want an error naming steps", steps, err)
		}
	}
	// PRK needs four grid points after skipping.
	if _, err := New(prk(t), PNDM, 10, 0.3); err == nil || !strings.Contains(err.Error(), "skip_prk_steps") {
		t.Errorf("prk with 3 steps: err = %v", err)
	}
	// LCM cannot take more steps than its distillation schedule.
	if _, err := New(sd15(t), LCM, 51, 1); err == nil || !strings.Contains(err.Error(), "original_inference_steps") {
		t.Errorf("lcm 51 steps: err = %v", err)
	}
}

// TestAddNoiseAfter: the inpainting blend level after call i is that of
// call i+1, and x0 itself after the last call.
func TestAddNoiseAfter(t *testing.T) {
	for _, k := range []Kind{PNDM, DDIM, Euler, DPMPP2M, LCM} {
		s, err := New(sd15(t), k, 10, 1)
		if err != nil {
			t.Fatal(err)
		}
		x0, z := []float32{0.5, -1}, []float32{1, 2}
		n := len(s.Timesteps())
		for i := 0; i < n-1; i++ {
			if got, want := s.AddNoiseAfter(x0, z, i), s.AddNoise(x0, z, i+1); !slices.Equal(got, want) {
				t.Fatalf("%s: after call %d got %v, want level of call %d %v", k, i, got, i+1, want)
			}
		}
		last := s.AddNoiseAfter(x0, z, n-1)
		if !slices.Equal(last, x0) {
			t.Errorf("%s: after the last call got %v, want x0", k, last)
		}
		last[0] = 7
		if x0[0] != 0.5 {
			t.Errorf("%s: AddNoiseAfter aliases x0", k)
		}
	}
}

// TestPNDMAddNoiseFollowsRepeat: PLMS's repeated timestep means the level
// after calls 0 and 1 is the same (both leave the sample at the second
// grid point).
func TestPNDMAddNoiseFollowsRepeat(t *testing.T) {
	s, err := New(sd15(t), PNDM, 10, 1)
	if err != nil {
		t.Fatal(err)
	}
	a := s.AddNoiseAfter([]float32{0}, []float32{1}, 0)[0]
	b := s.AddNoiseAfter([]float32{0}, []float32{1}, 1)[0]
	if want := float32(math.Sqrt(1 - s.AlphasCumprod()[801])); a != want || b != want {
		t.Errorf("levels after calls 0, 1 = %v, %v; want sqrt(1-ab[801]) = %v", a, b, want)
	}
}
