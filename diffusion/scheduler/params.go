package scheduler

import (
	"fmt"
	"math"
)

// params is a Config resolved for one class: every key has a value, either
// the config's own or the class default from diffusers' __init__ signature.
type params struct {
	kind              Kind
	numTrainTimesteps int
	betaStart         float64
	betaEnd           float64
	betaSchedule      string
	trainedBetas      []float64
	prediction        string
	spacing           string
	stepsOffset       int
	setAlphaToOne     bool
	clipSample        bool
	clipSampleRange   float64
	skipPRKSteps      bool
	solverOrder       int
	solverType        string
	lowerOrderFinal   bool
	eulerAtFinal      bool
	karras            bool
	finalSigmasType   string
	lambdaMinClipped  float64
	sigmaMin          *float64
	sigmaMax          *float64
	originalSteps     int
	timestepScaling   float64
}

// Class defaults shared by every supported class (diffusers __init__).
const (
	defaultTrainTimesteps  = 1000
	defaultBetaStart       = 0.0001
	defaultBetaEnd         = 0.02
	lcmBetaStart           = 0.00085
	lcmBetaEnd             = 0.012
	defaultClipRange       = 1.0
	defaultSolverOrder     = 2
	defaultOriginalSteps   = 50
	defaultTimestepScaling = 10.0
)

// classDefaults returns the diffusers defaults of the class behind kind.
func classDefaults(kind Kind) params {
	p := params{
		kind:              kind,
		numTrainTimesteps: defaultTrainTimesteps,
		betaStart:         defaultBetaStart,
		betaEnd:           defaultBetaEnd,
		betaSchedule:      "linear",
		prediction:        "epsilon",
		spacing:           "leading",
		clipSampleRange:   defaultClipRange,
		solverOrder:       defaultSolverOrder,
		solverType:        "midpoint",
		lowerOrderFinal:   true,
		finalSigmasType:   "zero",
		lambdaMinClipped:  math.Inf(-1),
		originalSteps:     defaultOriginalSteps,
		timestepScaling:   defaultTimestepScaling,
	}
	switch kind {
	case Euler, EulerAncestral, DPMPP2M:
		p.spacing = "linspace"
	case DDIM:
		p.clipSample = true
		p.setAlphaToOne = true
	case LCM:
		p.betaStart, p.betaEnd, p.betaSchedule = lcmBetaStart, lcmBetaEnd, "scaled_linear"
		p.setAlphaToOne = true
	}
	return p
}

// resolve applies the keys c gives over the defaults of kind.
func resolve(c Config, kind Kind) (params, error) {
	if err := c.check(); err != nil {
		return params{}, err
	}
	p := classDefaults(kind)
	p.applyCommon(&c)
	p.applySolver(&c)
	return p, p.applyTrainedBetas(c.TrainedBetas, c.set("num_train_timesteps", c.NumTrainTimesteps != 0))
}

// applyCommon takes the keys every class shares.
func (p *params) applyCommon(c *Config) {
	if c.set("num_train_timesteps", c.NumTrainTimesteps != 0) {
		p.numTrainTimesteps = c.NumTrainTimesteps
	}
	if c.set("beta_start", c.BetaStart != 0) {
		p.betaStart = c.BetaStart
	}
	if c.set("beta_end", c.BetaEnd != 0) {
		p.betaEnd = c.BetaEnd
	}
	setString(&p.betaSchedule, c.BetaSchedule)
	setString(&p.prediction, c.PredictionType)
	setString(&p.spacing, c.TimestepSpacing)
	p.stepsOffset = c.StepsOffset
	setBool(&p.setAlphaToOne, c.SetAlphaToOne)
	setBool(&p.clipSample, c.ClipSample)
	if c.set("clip_sample_range", c.ClipSampleRange != 0) {
		p.clipSampleRange = c.ClipSampleRange
	}
}

// applySolver takes the per-method keys.
func (p *params) applySolver(c *Config) {
	setBool(&p.skipPRKSteps, c.SkipPRKSteps)
	setString(&p.solverType, c.SolverType)
	setString(&p.finalSigmasType, c.FinalSigmasType)
	setBool(&p.lowerOrderFinal, c.LowerOrderFinal)
	setBool(&p.eulerAtFinal, c.EulerAtFinal)
	setBool(&p.karras, c.UseKarrasSigmas)
	if c.set("solver_order", c.SolverOrder != 0) {
		p.solverOrder = c.SolverOrder
	}
	if c.LambdaMinClipped != nil {
		p.lambdaMinClipped = *c.LambdaMinClipped
	}
	p.sigmaMin, p.sigmaMax = c.SigmaMin, c.SigmaMax
	if c.set("original_inference_steps", c.OriginalInferenceSteps != 0) {
		p.originalSteps = c.OriginalInferenceSteps
	}
	if c.set("timestep_scaling", c.TimestepScaling != 0) {
		p.timestepScaling = c.TimestepScaling
	}
}

// applyTrainedBetas takes explicit betas; their count is the train length.
func (p *params) applyTrainedBetas(betas []float64, lengthGiven bool) error {
	if betas == nil {
		return nil
	}
	if lengthGiven && len(betas) != p.numTrainTimesteps {
		return fmt.Errorf("scheduler config: trained_betas has %d values but num_train_timesteps is %d",
			len(betas), p.numTrainTimesteps)
	}
	p.trainedBetas = append([]float64(nil), betas...)
	p.numTrainTimesteps = len(betas)
	return nil
}

func setString(dst *string, v string) {
	if v != "" {
		*dst = v
	}
}

func setBool(dst *bool, v *bool) {
	if v != nil {
		*dst = *v
	}
}

// alphasCumprod is diffusers' train-time table: betas from the schedule
// (linear: linspace(b0, b1); scaled_linear: linspace(sqrt b0, sqrt b1)^2) and
// the running product of 1-beta. diffusers computes it in float32 with torch;
// here it is float64 (differences are ~1e-7 relative).
func (p *params) alphasCumprod() []float64 {
	n := p.numTrainTimesteps
	var betas []float64
	switch {
	case p.trainedBetas != nil:
		betas = p.trainedBetas
	case p.betaSchedule == "scaled_linear":
		betas = npLinspace(math.Sqrt(p.betaStart), math.Sqrt(p.betaEnd), n)
		for i, b := range betas {
			betas[i] = b * b
		}
	default:
		betas = npLinspace(p.betaStart, p.betaEnd, n)
	}
	ac := make([]float64, n)
	prod := 1.0
	for i, b := range betas {
		prod *= 1 - b
		ac[i] = prod
	}
	return ac
}

// sigmaTable is sqrt((1-ab)/ab) for every train timestep.
func sigmaTable(ac []float64) []float64 {
	s := make([]float64, len(ac))
	for i, a := range ac {
		s[i] = math.Sqrt((1 - a) / a)
	}
	return s
}
