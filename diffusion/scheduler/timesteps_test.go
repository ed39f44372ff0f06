package scheduler

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// sd15JSON is runwayml/stable-diffusion-v1-5 scheduler/scheduler_config.json.
const sd15JSON = `{
  "_class_name": "PNDMScheduler",
  "_diffusers_version": "0.6.0",
  "beta_end": 0.012,
  "beta_schedule": "scaled_linear",
  "beta_start": 0.00085,
  "num_train_timesteps": 1000,
  "set_alpha_to_one": false,
  "skip_prk_steps": true,
  "steps_offset": 1,
  "trained_betas": null,
  "clip_sample": false
}`

func mustParse(t *testing.T, js string) Config {
	t.Helper()
	c, err := ParseConfig([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// withKeys returns the SD-1.5 config with extra keys merged in.
func withKeys(t *testing.T, extra string) Config {
	t.Helper()
	return mustParse(t, strings.TrimSuffix(sd15JSON, "}")+", "+extra+"}")
}

// countdown is start, start-step, ... for n values.
func countdown(start, step float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = start - float64(i)*step
	}
	return out
}

// The expected tables below follow diffusers' set_timesteps as read from
// scheduling_{pndm,ddim,euler_discrete,dpmsolver_multistep,lcm}.py, worked
// through with numpy's rules (round half to even, float32 casts). The PNDM
// 20-step table is the one diffusers prints for SD 1.5 (diffusers issue
// #9090); LCM 4 steps is LCM-Dreamshaper's well-known 999, 759, 499, 259.
var (
	pndm50  = append([]float64{981, 961}, countdown(961, 20, 49)...)
	pndm20  = []float64{951, 901, 901, 851, 801, 751, 701, 651, 601, 551, 501, 451, 401, 351, 301, 251, 201, 151, 101, 51, 1}
	euler30 = []float64{999, 964.5516967773438, 930.1034545898438, 895.6551513671875, 861.2069091796875,
		826.7586059570312, 792.3103637695312, 757.862060546875, 723.413818359375, 688.9655151367188,
		654.5172119140625, 620.0689697265625, 585.6206665039062, 551.1724243164062, 516.72412109375,
		482.2758483886719, 447.82757568359375, 413.3793029785156, 378.9310302734375, 344.4827575683594,
		310.03448486328125, 275.5862121582031, 241.13792419433594, 206.6896514892578, 172.2413787841797,
		137.79310607910156, 103.3448257446289, 68.89655303955078, 34.44827651977539, 0}
	// arange(1000, 0, -62.5) has halves: 812.5 rounds to 812 (even), not 813.
	trailing16    = []float64{999, 937, 874, 811, 749, 687, 624, 561, 499, 437, 374, 311, 249, 187, 124, 61}
	dpm20Linspace = []float64{999, 949, 899, 849, 799, 749, 699, 649, 599, 549, 500, 450, 400, 350, 300, 250, 200, 150, 100, 50}
	dpm20Leading  = []float64{941, 894, 847, 800, 753, 706, 659, 612, 565, 518, 471, 424, 377, 330, 283, 236, 189, 142, 95, 48}
)

func TestTimestepTables(t *testing.T) {
	cases := []struct {
		name  string
		cfg   func(t *testing.T) Config
		kind  Kind
		steps int
		want  []float64
	}{
		{"pndm-sd15-50", sd15, "", 50, pndm50},
		{"pndm-sd15-20", sd15, "", 20, pndm20},
		{"ddim-sd15-50", sd15, DDIM, 50, countdown(981, 20, 50)},
		{"euler-sd15-30-linspace", sd15, Euler, 30, euler30},
		{"euler-a-sd15-30-linspace", sd15, EulerAncestral, 30, euler30},
		{"euler-leading-50", spacing("leading"), Euler, 50, countdown(981, 20, 50)},
		{"ddim-trailing-10", spacing("trailing"), DDIM, 10, countdown(999, 100, 10)},
		{"euler-trailing-16", spacing("trailing"), Euler, 16, trailing16},
		{"ddim-trailing-16", spacing("trailing"), DDIM, 16, trailing16},
		{"pndm-trailing-10", spacing("trailing"), PNDM, 10, []float64{999, 899, 899, 799, 699, 599, 499, 399, 299, 199, 99}},
		{"ddim-linspace-5", spacing("linspace"), DDIM, 5, []float64{999, 749, 500, 250, 0}},
		{"pndm-linspace-5", spacing("linspace"), PNDM, 5, []float64{999, 749, 749, 500, 250, 0}},
		{"dpm-sd15-20-linspace", sd15, DPMPP2M, 20, dpm20Linspace},
		{"dpm-leading-20", spacing("leading"), DPMPP2M, 20, dpm20Leading},
		{"dpm-trailing-10", spacing("trailing"), DPMPP2M, 10, countdown(999, 100, 10)},
		{"lcm-4", sd15, LCM, 4, []float64{999, 759, 499, 259}},
		{"lcm-8", sd15, LCM, 8, []float64{999, 879, 759, 639, 499, 379, 259, 139}},
		{"lcm-6", sd15, LCM, 6, []float64{999, 839, 679, 499, 339, 179}},
		{"pndm-prk-50", prk, PNDM, 50, append([]float64{981, 971, 971, 961, 961, 951, 951, 941, 941, 931, 931, 921}, countdown(921, 20, 47)...)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := New(c.cfg(t), c.kind, c.steps, 1)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Timesteps(); !slices.Equal(got, c.want) {
				t.Errorf("timesteps (%d)\n got %v\nwant %v (%d)", len(got), got, c.want, len(c.want))
			}
		})
	}
}

func sd15(t *testing.T) Config { return mustParse(t, sd15JSON) }

func spacing(sp string) func(t *testing.T) Config {
	return func(t *testing.T) Config { return withKeys(t, `"timestep_spacing": "`+sp+`"`) }
}

func prk(t *testing.T) Config {
	return mustParse(t, strings.Replace(sd15JSON, `"skip_prk_steps": true`, `"skip_prk_steps": false`, 1))
}

// TestTrailing61 pins a numpy quirk diffusers inherits: arange(1000, 0,
// -1000/61) has 62 elements (1000/(1000/61) rounds above 61), the last ~0,
// giving timestep -1. Euler interpolates it (62 calls, as diffusers);
// integer-indexed methods refuse it instead of indexing out of range.
func TestTrailing61(t *testing.T) {
	cfg := spacing("trailing")(t)
	s, err := New(cfg, Euler, 61, 1)
	if err != nil {
		t.Fatal(err)
	}
	ts := s.Timesteps()
	if len(ts) != 62 || ts[61] != -1 || ts[60] != 15 {
		t.Errorf("euler trailing 61: %d calls ending %v", len(ts), ts[len(ts)-3:])
	}
	if _, err := New(cfg, DDIM, 61, 1); err == nil || !strings.Contains(err.Error(), "timestep -1") {
		t.Errorf("ddim trailing 61: err = %v, want timestep -1 refused", err)
	}
}

// TestSigmasAndInitNoise checks the SD beta table against k-diffusion's
// well-known sigma range and diffusers' init_noise_sigma rules.
func TestSigmasAndInitNoise(t *testing.T) {
	s, err := New(sd15(t), Euler, 30, 1)
	if err != nil {
		t.Fatal(err)
	}
	ac := s.AlphasCumprod()
	sigma := func(k int) float64 { return math.Sqrt((1 - ac[k]) / ac[k]) }
	checks := []struct {
		name      string
		got, want float64
	}{
		{"sigma_min", sigma(0), 0.029167158151720367},
		{"sigma_max", sigma(999), 14.614641229333639},
		{"alphas_cumprod[999]", ac[999], 0.004660098513077238},
		{"euler linspace init sigma = sigma_max", s.InitNoiseSigma(), 14.614641229333639},
		{"euler input scale, call 0", float64(s.ScaleModelInput([]float32{1}, 0)[0]), 1 / math.Sqrt(14.614641229333639*14.614641229333639+1)},
		{"euler input scale, call 1 (t=964.55)", float64(s.ScaleModelInput([]float32{1}, 1)[0]), 1 / math.Sqrt(11.917559036894597*11.917559036894597+1)},
	}
	lead, err := New(spacing("leading")(t), Euler, 50, 1)
	if err != nil {
		t.Fatal(err)
	}
	checks = append(checks, struct {
		name      string
		got, want float64
	}{"euler leading init sigma = sqrt(sigma(981)^2+1)", lead.InitNoiseSigma(), 13.158464122127848})
	for _, c := range []Kind{PNDM, DDIM, DPMPP2M, LCM} {
		o, err := New(sd15(t), c, 10, 1)
		if err != nil {
			t.Fatal(err)
		}
		checks = append(checks, struct {
			name      string
			got, want float64
		}{string(c) + " init sigma", o.InitNoiseSigma(), 1})
	}
	for _, c := range checks {
		if math.Abs(c.got-c.want) > 1e-6*math.Max(1, math.Abs(c.want)) {
			t.Errorf("%s = %.10g, want %.10g", c.name, c.got, c.want)
		}
	}
}

// TestScaleModelInputIdentity: the variance-preserving methods pass the
// input through, as a new slice.
func TestScaleModelInputIdentity(t *testing.T) {
	for _, k := range []Kind{PNDM, DDIM, DPMPP2M, LCM} {
		s, err := New(sd15(t), k, 4, 1)
		if err != nil {
			t.Fatal(err)
		}
		x := []float32{1.5, -2, 0.25}
		got := s.ScaleModelInput(x, 1)
		got[0] = 9
		if x[0] != 1.5 || got[1] != -2 || got[2] != 0.25 {
			t.Errorf("%s: ScaleModelInput not an identity copy: %v (x now %v)", k, got, x)
		}
	}
}

// TestKarrasTables: use_karras_sigmas (rho 7) between the sigma ends, each
// sigma mapped back to a timestep by log-sigma interpolation; Euler keeps
// float32 fractions, DPM rounds. The last Euler value is ~1e-15, not 0.
func TestKarrasTables(t *testing.T) {
	karras := `"use_karras_sigmas": true`
	cases := []struct {
		name string
		cfg  string
		kind Kind
		n    int
		want []float64
		tol  float64
	}{
		{"euler-10", karras, Euler, 10, []float64{999, 916.283935546875, 815.044677734375, 687.1527709960938,
			523.1980590820312, 327.14599609375, 145.9380645751953, 40.8564338684082, 6.732296943664551, 0}, 1e-9},
		{"euler-6-sigma-range", karras + `, "sigma_min": 0.1, "sigma_max": 10.0`, Euler, 6, []float64{933.5067749023438,
			791.5223388671875, 593.543212890625, 327.90435791015625, 93.99012756347656, 10.382196426391602}, 1e-9},
		{"dpm-10", karras, DPMPP2M, 10, []float64{999, 916, 815, 687, 523, 327, 146, 41, 7, 0}, 0},
	}
	for _, c := range cases {
		s, err := New(withKeys(t, c.cfg), c.kind, c.n, 1)
		if err != nil {
			t.Fatal(err)
		}
		got := s.Timesteps()
		for i := range c.want {
			if len(got) != len(c.want) || math.Abs(got[i]-c.want[i]) > c.tol {
				t.Fatalf("%s: timesteps %v, want %v", c.name, got, c.want)
			}
		}
	}
}
