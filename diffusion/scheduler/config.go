package scheduler

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// maxTrainTimesteps bounds num_train_timesteps (and trained_betas) so that a
// hostile config cannot make New allocate without limit.
const maxTrainTimesteps = 100000

// Config is a diffusers scheduler_config.json. Unknown keys are ignored; a key
// that is missing (or null) takes the default of the class that runs it, as
// diffusers' from_config does when one class is loaded from another's config.
// For a Config built in Go rather than parsed, a zero field counts as missing.
type Config struct {
	ClassName         string    `json:"_class_name"`
	NumTrainTimesteps int       `json:"num_train_timesteps"`
	BetaStart         float64   `json:"beta_start"`
	BetaEnd           float64   `json:"beta_end"`
	BetaSchedule      string    `json:"beta_schedule"` // "linear" or "scaled_linear"
	TrainedBetas      []float64 `json:"trained_betas"` // replaces the beta schedule when set
	PredictionType    string    `json:"prediction_type"`
	TimestepSpacing   string    `json:"timestep_spacing"` // "leading", "trailing" or "linspace"
	StepsOffset       int       `json:"steps_offset"`
	SetAlphaToOne     *bool     `json:"set_alpha_to_one"` // DDIM, PNDM, LCM
	ClipSample        *bool     `json:"clip_sample"`      // DDIM, LCM
	ClipSampleRange   float64   `json:"clip_sample_range"`
	SkipPRKSteps      *bool     `json:"skip_prk_steps"` // PNDM

	// DPM-Solver (DPMSolverMultistepScheduler).
	SolverOrder      int      `json:"solver_order"`
	AlgorithmType    string   `json:"algorithm_type"` // "dpmsolver++"
	SolverType       string   `json:"solver_type"`    // "midpoint" or "heun"
	LowerOrderFinal  *bool    `json:"lower_order_final"`
	EulerAtFinal     *bool    `json:"euler_at_final"`
	LambdaMinClipped *float64 `json:"lambda_min_clipped"` // missing, null or -Infinity: no clipping

	// Euler and DPM-Solver.
	UseKarrasSigmas *bool  `json:"use_karras_sigmas"`
	FinalSigmasType string `json:"final_sigmas_type"` // "zero" or "sigma_min"
	// Euler only: the ends of its Karras schedule (default: the ends of the
	// interpolated sigmas).
	SigmaMin *float64 `json:"sigma_min"`
	SigmaMax *float64 `json:"sigma_max"`

	// LCM.
	OriginalInferenceSteps int     `json:"original_inference_steps"`
	TimestepScaling        float64 `json:"timestep_scaling"`

	// Options this package does not implement; a config that turns one on is
	// rejected rather than silently run differently.
	Thresholding         *bool  `json:"thresholding"`
	RescaleBetasZeroSNR  *bool  `json:"rescale_betas_zero_snr"`
	UseExponentialSigmas *bool  `json:"use_exponential_sigmas"`
	UseBetaSigmas        *bool  `json:"use_beta_sigmas"`
	UseLuLambdas         *bool  `json:"use_lu_lambdas"`
	UseFlowSigmas        *bool  `json:"use_flow_sigmas"`
	InterpolationType    string `json:"interpolation_type"` // "linear" only
	TimestepType         string `json:"timestep_type"`      // "discrete" only
	VarianceType         string `json:"variance_type"`      // null only

	// present holds the keys ParseConfig saw with a non-null value.
	present map[string]bool
}

// Accepted values of the enumerated keys.
var (
	betaSchedules   = []string{"linear", "scaled_linear"}
	predictionTypes = []string{"epsilon", "v_prediction"}
	spacings        = []string{"leading", "trailing", "linspace"}
	algorithmTypes  = []string{"dpmsolver++"}
	solverTypes     = []string{"midpoint", "heun"}
	finalSigmas     = []string{"zero", "sigma_min"}
)

// ParseConfig parses and checks a scheduler_config.json. Python's json writes
// -Infinity for DPM-Solver's default lambda_min_clipped; such non-standard
// number tokens (NaN, Infinity, -Infinity) are read as null.
func ParseConfig(data []byte) (Config, error) {
	clean := sanitizeJSON(data)
	var c Config
	if err := json.Unmarshal(clean, &c); err != nil {
		return Config{}, fmt.Errorf("scheduler config: %w", err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(clean, &raw); err != nil {
		return Config{}, fmt.Errorf("scheduler config: %w", err)
	}
	c.present = make(map[string]bool, len(raw))
	for k, v := range raw {
		if !bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			c.present[k] = true
		}
	}
	if err := c.check(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// set reports whether key counts as given: seen by ParseConfig, or non-zero
// (a value set in Go).
func (c *Config) set(key string, nonZero bool) bool {
	return c.present[key] || nonZero
}

// check validates the keys that are given, naming the key and the accepted
// values in each error.
func (c *Config) check() error {
	enums := []struct {
		key, val string
		ok       []string
	}{
		{"beta_schedule", c.BetaSchedule, betaSchedules},
		{"prediction_type", c.PredictionType, predictionTypes},
		{"timestep_spacing", c.TimestepSpacing, spacings},
		{"algorithm_type", c.AlgorithmType, algorithmTypes},
		{"solver_type", c.SolverType, solverTypes},
		{"final_sigmas_type", c.FinalSigmasType, finalSigmas},
		{"interpolation_type", c.InterpolationType, []string{"linear"}},
		{"timestep_type", c.TimestepType, []string{"discrete"}},
	}
	for _, e := range enums {
		if c.set(e.key, e.val != "") && !contains(e.ok, e.val) {
			return enumError(e.key, e.val, e.ok)
		}
	}
	if c.set("variance_type", c.VarianceType != "") {
		return fmt.Errorf("scheduler config: variance_type %q is not supported (supported: null)", c.VarianceType)
	}
	if err := c.checkUnsupported(); err != nil {
		return err
	}
	return c.checkNumbers()
}

// checkUnsupported rejects switched-on options this package does not implement.
func (c *Config) checkUnsupported() error {
	flags := []struct {
		key string
		v   *bool
	}{
		{"thresholding", c.Thresholding},
		{"rescale_betas_zero_snr", c.RescaleBetasZeroSNR},
		{"use_exponential_sigmas", c.UseExponentialSigmas},
		{"use_beta_sigmas", c.UseBetaSigmas},
		{"use_lu_lambdas", c.UseLuLambdas},
		{"use_flow_sigmas", c.UseFlowSigmas},
	}
	for _, f := range flags {
		if f.v != nil && *f.v {
			return fmt.Errorf("scheduler config: %s=true is not supported (supported: false)", f.key)
		}
	}
	return nil
}

// checkNumbers validates the numeric keys that are given.
func (c *Config) checkNumbers() error {
	if c.set("num_train_timesteps", c.NumTrainTimesteps != 0) &&
		(c.NumTrainTimesteps < 2 || c.NumTrainTimesteps > maxTrainTimesteps) {
		return fmt.Errorf("scheduler config: num_train_timesteps %d is out of range [2, %d]", c.NumTrainTimesteps, maxTrainTimesteps)
	}
	if c.StepsOffset < 0 || c.StepsOffset > maxTrainTimesteps {
		return fmt.Errorf("scheduler config: steps_offset %d is out of range [0, %d]", c.StepsOffset, maxTrainTimesteps)
	}
	for _, b := range []struct {
		key string
		v   float64
	}{{"beta_start", c.BetaStart}, {"beta_end", c.BetaEnd}} {
		if c.set(b.key, b.v != 0) && !(b.v > 0 && b.v < 1) {
			return fmt.Errorf("scheduler config: %s %v must be in (0, 1)", b.key, b.v)
		}
	}
	if len(c.TrainedBetas) > maxTrainTimesteps || (c.TrainedBetas != nil && len(c.TrainedBetas) < 2) {
		return fmt.Errorf("scheduler config: trained_betas has %d values, want 2..%d", len(c.TrainedBetas), maxTrainTimesteps)
	}
	for i, b := range c.TrainedBetas {
		if !(b > 0 && b < 1) {
			return fmt.Errorf("scheduler config: trained_betas[%d] %v must be in (0, 1)", i, b)
		}
	}
	return c.checkSolverNumbers()
}

// checkSolverNumbers validates the per-method numeric keys.
func (c *Config) checkSolverNumbers() error {
	if c.set("clip_sample_range", c.ClipSampleRange != 0) && !(c.ClipSampleRange > 0) {
		return fmt.Errorf("scheduler config: clip_sample_range %v must be > 0", c.ClipSampleRange)
	}
	if c.set("solver_order", c.SolverOrder != 0) && (c.SolverOrder < 1 || c.SolverOrder > 3) {
		return fmt.Errorf("scheduler config: solver_order %d is not supported (supported: 1, 2, 3)", c.SolverOrder)
	}
	if c.set("original_inference_steps", c.OriginalInferenceSteps != 0) &&
		(c.OriginalInferenceSteps < 1 || c.OriginalInferenceSteps > maxTrainTimesteps) {
		return fmt.Errorf("scheduler config: original_inference_steps %d is out of range [1, %d]", c.OriginalInferenceSteps, maxTrainTimesteps)
	}
	if c.set("timestep_scaling", c.TimestepScaling != 0) && !(c.TimestepScaling > 0 && !math.IsInf(c.TimestepScaling, 1)) {
		return fmt.Errorf("scheduler config: timestep_scaling %v must be a positive number", c.TimestepScaling)
	}
	for _, v := range []struct {
		key string
		v   *float64
	}{{"sigma_min", c.SigmaMin}, {"sigma_max", c.SigmaMax}} {
		if v.v != nil && !(*v.v > 0 && !math.IsInf(*v.v, 1)) {
			return fmt.Errorf("scheduler config: %s %v must be a positive number", v.key, *v.v)
		}
	}
	if c.LambdaMinClipped != nil && math.IsNaN(*c.LambdaMinClipped) {
		return fmt.Errorf("scheduler config: lambda_min_clipped is NaN")
	}
	return nil
}

func enumError(key, val string, ok []string) error {
	q := make([]string, len(ok))
	for i, s := range ok {
		q[i] = fmt.Sprintf("%q", s)
	}
	return fmt.Errorf("scheduler config: %s %q is not supported (supported: %s)", key, val, strings.Join(q, ", "))
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// sanitizeJSON replaces the bare tokens NaN, Infinity and -Infinity that
// Python's json module writes (outside strings) with null.
func sanitizeJSON(data []byte) []byte {
	var out []byte // allocated on the first replacement
	inString, escaped := false, false
	for i := 0; i < len(data); i++ {
		ch := data[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case ch == '\\':
				escaped = true
			case ch == '"':
				inString = false
			}
			if out != nil {
				out = append(out, ch)
			}
			continue
		}
		if ch == '"' {
			inString = true
		} else if n := nonFiniteToken(data[i:]); n > 0 {
			if out == nil {
				out = append(make([]byte, 0, len(data)), data[:i]...)
			}
			out = append(out, "null"...)
			i += n - 1
			continue
		}
		if out != nil {
			out = append(out, ch)
		}
	}
	if out == nil {
		return data
	}
	return out
}

// nonFiniteToken returns the length of a NaN/Infinity/-Infinity token at the
// start of b, or 0.
func nonFiniteToken(b []byte) int {
	for _, tok := range []string{"-Infinity", "Infinity", "NaN"} {
		if bytes.HasPrefix(b, []byte(tok)) {
			return len(tok)
		}
	}
	return 0
}
