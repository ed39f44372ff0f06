package scheduler

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
)

// sd2JSON is an SD-2 style v-prediction config (EulerDiscreteScheduler
// carrying the PNDM-era keys, no timestep_spacing).
const sd2JSON = `{
  "_class_name": "EulerDiscreteScheduler",
  "_diffusers_version": "0.10.0.dev0",
  "beta_end": 0.012,
  "beta_schedule": "scaled_linear",
  "beta_start": 0.00085,
  "clip_sample": false,
  "num_train_timesteps": 1000,
  "prediction_type": "v_prediction",
  "set_alpha_to_one": false,
  "skip_prk_steps": true,
  "steps_offset": 1,
  "trained_betas": null
}`

// lcmJSON is SimianLuo/LCM_Dreamshaper_v7's scheduler config.
const lcmJSON = `{
  "_class_name": "LCMScheduler",
  "_diffusers_version": "0.22.0.dev0",
  "beta_end": 0.012,
  "beta_schedule": "scaled_linear",
  "beta_start": 0.00085,
  "clip_sample": false,
  "clip_sample_range": 1.0,
  "dynamic_thresholding_ratio": 0.995,
  "num_train_timesteps": 1000,
  "original_inference_steps": 50,
  "prediction_type": "epsilon",
  "rescale_betas_zero_snr": false,
  "sample_max_value": 1.0,
  "set_alpha_to_one": true,
  "steps_offset": 1,
  "thresholding": false,
  "timestep_scaling": 10.0,
  "timestep_spacing": "leading",
  "trained_betas": null
}`

// dpmJSON is a DPM-Solver++ config as Python's json writes it, with the
// non-standard -Infinity.
const dpmJSON = `{
  "_class_name": "DPMSolverMultistepScheduler",
  "algorithm_type": "dpmsolver++",
  "beta_end": 0.012,
  "beta_schedule": "scaled_linear",
  "beta_start": 0.00085,
  "euler_at_final": false,
  "final_sigmas_type": "zero",
  "lambda_min_clipped": -Infinity,
  "lower_order_final": true,
  "num_train_timesteps": 1000,
  "prediction_type": "epsilon",
  "solver_order": 2,
  "solver_type": "midpoint",
  "steps_offset": 1,
  "timestep_spacing": "leading",
  "use_karras_sigmas": true,
  "variance_type": null
}`

func TestParseConfigs(t *testing.T) {
	cases := []struct {
		name      string
		js        string
		kind      Kind
		pred      string
		steps     int
		firstTwo  []float64
		lastCalls float64
	}{
		{"sd15", sd15JSON, PNDM, "epsilon", 50, []float64{981, 961}, 1},
		// SD-2 names no spacing: Euler's default linspace, so 999 first.
		{"sd2", sd2JSON, Euler, "v_prediction", 25, []float64{999, 957.375}, 0},
		{"lcm", lcmJSON, LCM, "epsilon", 4, []float64{999, 759}, 259},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := mustParse(t, c.js)
			k, err := KindOf(cfg.ClassName)
			if err != nil || k != c.kind {
				t.Fatalf("KindOf(%q) = %q, %v", cfg.ClassName, k, err)
			}
			s, err := New(cfg, "", c.steps, 1)
			if err != nil {
				t.Fatal(err)
			}
			if s.p.prediction != c.pred || s.Kind() != c.kind {
				t.Errorf("kind %s prediction %q, want %s %q", s.Kind(), s.p.prediction, c.kind, c.pred)
			}
			ts := s.Timesteps()
			if !slices.Equal(ts[:2], c.firstTwo) || ts[len(ts)-1] != c.lastCalls {
				t.Errorf("timesteps start %v end %v, want %v ... %v", ts[:2], ts[len(ts)-1], c.firstTwo, c.lastCalls)
			}
		})
	}
}

// TestParseDPMInfinity: -Infinity reads as null (no clipping) and the
// Karras schedule runs from sigma_max to sigma_min.
func TestParseDPMInfinity(t *testing.T) {
	cfg := mustParse(t, dpmJSON)
	if cfg.LambdaMinClipped != nil || cfg.UseKarrasSigmas == nil || !*cfg.UseKarrasSigmas {
		t.Fatalf("lambda_min_clipped %v, use_karras_sigmas %v", cfg.LambdaMinClipped, cfg.UseKarrasSigmas)
	}
	s, err := New(cfg, "", 20, 1)
	if err != nil {
		t.Fatal(err)
	}
	m := s.m.(*dpmMethod)
	if math.Abs(m.sigmas[0]-14.614641229333639) > 1e-9 || math.Abs(m.sigmas[19]-0.029167158151720367) > 1e-9 || m.sigmas[20] != 0 {
		t.Errorf("karras sigmas run %v .. %v, then %v", m.sigmas[0], m.sigmas[19], m.sigmas[20])
	}
	if ts := s.Timesteps(); ts[0] != 999 || ts[19] != 0 {
		t.Errorf("karras timesteps run %v .. %v, want 999 .. 0", ts[0], ts[19])
	}
}

// TestLambdaMinClipped: a finite clip drops the train timesteps whose
// log-SNR lies below it from the top of the linspace schedule.
func TestLambdaMinClipped(t *testing.T) {
	cfg := withKeys(t, `"lambda_min_clipped": -2.5`)
	s, err := New(cfg, DPMPP2M, 10, 1)
	if err != nil {
		t.Fatal(err)
	}
	ac := s.AlphasCumprod()
	last := 0
	for k, a := range ac {
		if 0.5*math.Log(a/(1-a)) >= -2.5 {
			last = k + 1
		}
	}
	// linspace(0, last-1, 11) reversed, the last point dropped.
	if ts := s.Timesteps(); last >= 1000 || ts[0] != float64(last-1) || ts[1] != math.RoundToEven(float64(last-1)/10*9) {
		t.Errorf("timesteps start %v, want linspace(0, %d, 11) reversed", ts[:2], last-1)
	}
}

// TestFromConfigDefaults: overriding the class keeps the keys the config
// gives and takes the new class's defaults for the others, as diffusers'
// from_config does.
func TestFromConfigDefaults(t *testing.T) {
	sd := sd15(t)
	bare := mustParse(t, `{"_class_name": "PNDMScheduler", "beta_schedule": "scaled_linear", "beta_start": 0.00085, "beta_end": 0.012}`)
	cases := []struct {
		name string
		cfg  Config
		kind Kind
		chk  func(p params) bool
	}{
		{"sd15 ddim keeps set_alpha_to_one=false", sd, DDIM, func(p params) bool { return !p.setAlphaToOne && !p.clipSample }},
		{"sd15 euler takes linspace", sd, Euler, func(p params) bool { return p.spacing == "linspace" && p.stepsOffset == 1 }},
		{"sd15 pndm keeps leading", sd, PNDM, func(p params) bool { return p.spacing == "leading" && p.skipPRKSteps }},
		{"bare ddim clips and sets alpha to one", bare, DDIM, func(p params) bool { return p.clipSample && p.setAlphaToOne }},
		{"bare pndm runs prk", bare, PNDM, func(p params) bool { return !p.skipPRKSteps && !p.setAlphaToOne }},
		{"bare dpm defaults", bare, DPMPP2M, func(p params) bool {
			return p.solverOrder == 2 && p.lowerOrderFinal && p.finalSigmasType == "zero" && math.IsInf(p.lambdaMinClipped, -1)
		}},
		{"empty lcm takes lcm betas", mustParse(t, `{}`), LCM, func(p params) bool {
			return p.betaSchedule == "scaled_linear" && p.betaStart == 0.00085 && p.originalSteps == 50 && p.timestepScaling == 10
		}},
		{"empty euler takes linear betas", Config{}, Euler, func(p params) bool { return p.betaSchedule == "linear" && p.betaStart == 0.0001 }},
	}
	for _, c := range cases {
		p, err := resolve(c.cfg, c.kind)
		if err != nil || !c.chk(p) {
			t.Errorf("%s: %+v, %v", c.name, p, err)
		}
	}
}

// TestTrainedBetas: explicit betas equal to the linear schedule give the
// linear schedule's table.
func TestTrainedBetas(t *testing.T) {
	betas := npLinspace(0.0001, 0.02, 1000)
	js, err := json.Marshal(map[string]any{"_class_name": "DDIMScheduler", "trained_betas": betas, "beta_schedule": "nonsense-ignored?"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseConfig(js); err == nil {
		t.Fatal("a bad beta_schedule must fail even beside trained_betas")
	}
	js, _ = json.Marshal(map[string]any{"_class_name": "DDIMScheduler", "trained_betas": betas})
	a, err := New(mustParse(t, string(js)), "", 10, 1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(Config{}, DDIM, 10, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.AlphasCumprod(), b.AlphasCumprod()) {
		t.Error("trained_betas table differs from the linear schedule")
	}
}

func TestConfigErrors(t *testing.T) {
	cases := []struct {
		name string
		js   string
		want []string // substrings of the error
	}{
		{"beta_schedule", `{"beta_schedule": "squaredcos_cap_v2"}`, []string{"beta_schedule", "squaredcos_cap_v2", `"linear"`, `"scaled_linear"`}},
		{"prediction_type", `{"prediction_type": "sample"}`, []string{"prediction_type", `"epsilon"`, `"v_prediction"`}},
		{"timestep_spacing", `{"timestep_spacing": "karras"}`, []string{"timestep_spacing", `"leading"`, `"trailing"`, `"linspace"`}},
		{"algorithm_type", `{"algorithm_type": "sde-dpmsolver++"}`, []string{"algorithm_type", `"dpmsolver++"`}},
		{"solver_type", `{"solver_type": "bh2"}`, []string{"solver_type", `"midpoint"`}},
		{"final_sigmas_type", `{"final_sigmas_type": "max"}`, []string{"final_sigmas_type", `"sigma_min"`}},
		{"thresholding", `{"thresholding": true}`, []string{"thresholding"}},
		{"rescale", `{"rescale_betas_zero_snr": true}`, []string{"rescale_betas_zero_snr"}},
		{"solver_order", `{"solver_order": 4}`, []string{"solver_order", "1, 2, 3"}},
		{"beta_start", `{"beta_start": 1.5}`, []string{"beta_start"}},
		{"trained_betas", `{"trained_betas": [0.1, 1.0]}`, []string{"trained_betas[1]"}},
		{"trained_betas length", `{"trained_betas": [0.1, 0.2], "num_train_timesteps": 1000}`, []string{"trained_betas", "num_train_timesteps"}},
		{"num_train_timesteps", `{"num_train_timesteps": 0}`, []string{"num_train_timesteps"}},
		{"variance_type", `{"variance_type": "learned_range"}`, []string{"variance_type"}},
		{"interpolation_type", `{"interpolation_type": "log_linear"}`, []string{"interpolation_type", `"linear"`}},
		{"wrong type", `{"clip_sample": "yes"}`, []string{"scheduler config"}},
		{"not json", `{"beta_start": }`, []string{"scheduler config"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := ParseConfig([]byte(c.js))
			if err == nil {
				// Some errors only surface once the class is known.
				_, err = New(cfg, DDIM, 10, 1)
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestKinds(t *testing.T) {
	for _, kc := range kindClasses {
		if k, err := KindOf(kc.class); err != nil || k != kc.kind {
			t.Errorf("KindOf(%q) = %q, %v", kc.class, k, err)
		}
		if k, err := ParseKind(" " + strings.ToUpper(string(kc.kind)) + " "); err != nil || k != kc.kind {
			t.Errorf("ParseKind(%q) = %q, %v", kc.kind, k, err)
		}
	}
	_, err := New(mustParse(t, `{"_class_name": "LMSDiscreteScheduler"}`), "", 10, 1)
	for _, w := range []string{"_class_name", "LMSDiscreteScheduler", "PNDMScheduler", "LCMScheduler"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("unknown class error %v lacks %q", err, w)
		}
	}
	if _, err := ParseKind("heun"); err == nil || !strings.Contains(err.Error(), "dpm++2m") {
		t.Errorf("ParseKind(heun) = %v", err)
	}
	if _, err := New(Config{}, Kind("heun"), 10, 1); err == nil {
		t.Error("New accepted an unknown kind")
	}
	// An unknown class is fine when the method is chosen explicitly.
	if _, err := New(mustParse(t, `{"_class_name": "LMSDiscreteScheduler"}`), Euler, 10, 1); err != nil {
		t.Errorf("explicit kind over an unknown class: %v", err)
	}
}

func TestSanitizeJSON(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"a": -Infinity}`, `{"a": null}`},
		{`[NaN, Infinity, 1]`, `[null, null, 1]`},
		{`{"s": "NaN -Infinity \" Infinity"}`, `{"s": "NaN -Infinity \" Infinity"}`},
		{`{"s": "a\\", "b": NaN}`, `{"s": "a\\", "b": null}`},
		{`{"a": 1}`, `{"a": 1}`},
	}
	for _, c := range cases {
		if got := string(sanitizeJSON([]byte(c.in))); got != c.want {
			t.Errorf("sanitizeJSON(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}

// FuzzParseConfig: parsing never panics, valid JSON passes the sanitiser
// unchanged, and any accepted config either builds and runs every method
// or is refused with an error.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{sd15JSON, sd2JSON, lcmJSON, dpmJSON, `{}`, `{"trained_betas": [0.5, 0.5]}`,
		`{"num_train_timesteps": 2, "timestep_spacing": "trailing", "steps_offset": 5}`, `{"lambda_min_clipped": 3}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if json.Valid(data) && !bytes.Equal(sanitizeJSON(data), data) {
			t.Fatalf("sanitizer changed valid JSON %q", data)
		}
		cfg, err := ParseConfig(data)
		if err != nil {
			return
		}
		for _, kc := range kindClasses {
			s, err := New(cfg, kc.kind, 2, 1)
			if err != nil {
				continue
			}
			x := []float32{0.5, -0.5}
			for i := range s.Timesteps() {
				if x, err = s.Step([]float32{0.1, 0.2}, s.ScaleModelInput(x, i), i, gaussian(1)); err != nil {
					t.Fatalf("%s step %d: %v", kc.kind, i, err)
				}
			}
		}
	})
}
