package diffusion

import (
	"errors"
	"fmt"
	"math"
)

// Rectified-flow sampling (FASHN VTON, FLUX, SD3 family). Time runs from 0
// (pure noise) to 1 (data); the network predicts the velocity v = dx/dt and
// a solver integrates it over a FlowSchedule's time grid. A new flow model
// family is a new FlowSchedule (ShiftedLinear is FASHN VTON's fixed shift,
// ResolutionShift FLUX's shift by image size) or a new FlowSolver (for
// example UniPC's multistep update), not a new engine: the job loop,
// classifier-free guidance, step batching across jobs (the rowBatcher the
// UNet steps use too), progress and cancel in flowsample.go are shared.

// FlowSchedule is the time grid of a rectified-flow sampler.
type FlowSchedule interface {
	// Times returns steps+1 increasing times from 0 (noise) to 1 (data).
	// tokens is the number of image tokens (patches) the network sees,
	// for schedules whose shift depends on the resolution; others ignore
	// it.
	Times(steps, tokens int) ([]float64, error)
	// String names the schedule for notes and logs.
	String() string
}

// FlowSolver advances a sample along the velocity field. A solver value is
// made per sample (NewState) so multistep solvers can keep a history.
type FlowSolver interface {
	// NewState returns the per-sample stepper of one generation.
	NewState() FlowStepper
	String() string
}

// FlowStepper advances one sample: x (updated in place) from times[i] to
// times[i+1], given the guided velocity v at (x, times[i]).
type FlowStepper interface {
	Step(x, v []float32, times []float64, i int)
}

// ShiftedLinear is FASHN VTON's get_rf_schedule: a linear grid 1 → 0 of
// steps+1 points mapped through time_shift(−mu, 1, t) = e^−mu / (e^−mu +
// 1/t − 1) and reversed, so that 0 → 1 runs with small steps near the
// noise end for positive mu (the sampler spends more of its steps at high
// noise). Mu is independent of the resolution.
type ShiftedLinear struct {
	Mu float64
}

// maxFlowMu bounds a shift: e^±mu must stay finite and meaningful.
const maxFlowMu = 20

// Times implements FlowSchedule. The grid is computed in float64; the
// reference computes it in float32 (torch.linspace), a difference below
// 1e-7 per time.
func (s ShiftedLinear) Times(steps, _ int) ([]float64, error) {
	if steps < 1 {
		return nil, fmt.Errorf("diffusion: flow schedule: steps %d must be at least 1", steps)
	}
	if math.IsNaN(s.Mu) || math.Abs(s.Mu) > maxFlowMu {
		return nil, fmt.Errorf("diffusion: flow schedule: mu %v must be in -%d..%d", s.Mu, maxFlowMu, maxFlowMu)
	}
	out := make([]float64, steps+1)
	e := math.Exp(-s.Mu)
	for i := range out {
		// Reversed linspace(1, 0, steps+1): position i of the output is
		// point steps-i of the linspace, whose value is i/steps.
		t := float64(i) / float64(steps)
		switch {
		case t <= 0:
			out[i] = 0
		case t >= 1:
			out[i] = 1
		default:
			out[i] = e / (e + (1/t - 1))
		}
	}
	return out, nil
}

func (s ShiftedLinear) String() string { return fmt.Sprintf("shifted-linear(mu=%g)", s.Mu) }

// ResolutionShift is FLUX's resolution-dependent shift (diffusers'
// FlowMatchEulerDiscreteScheduler with use_dynamic_shifting and the
// exponential time shift, as FluxPipeline drives it): mu lies on the line
// through (BaseTokens, BaseShift) and (MaxTokens, MaxShift), evaluated at
// the number of image tokens (extrapolated beyond, not clamped), so larger
// pictures spend more of their steps at high noise. diffusers shifts the
// noise levels σ = linspace(1, 1/n, n) (then 0) by e^mu/(e^mu + 1/σ − 1);
// with t = 1 − σ that is the map and the grid of ShiftedLinear at the same
// mu, so only mu differs.
type ResolutionShift struct {
	BaseTokens, MaxTokens int
	BaseShift, MaxShift   float64
}

// FluxShift is FLUX.1's scheduler configuration: mu 0.5 at 256 image
// tokens, 1.15 at 4096.
var FluxShift = ResolutionShift{BaseTokens: 256, MaxTokens: 4096, BaseShift: 0.5, MaxShift: 1.15}

// Mu is the shift at tokens image tokens (diffusers' calculate_shift).
func (s ResolutionShift) Mu(tokens int) (float64, error) {
	if tokens < 1 {
		return 0, fmt.Errorf("diffusion: flow schedule: %d image tokens, want at least 1", tokens)
	}
	if s.MaxTokens <= s.BaseTokens {
		return 0, fmt.Errorf("diffusion: flow schedule: max tokens %d must exceed base tokens %d", s.MaxTokens, s.BaseTokens)
	}
	m := (s.MaxShift - s.BaseShift) / float64(s.MaxTokens-s.BaseTokens)
	b := s.BaseShift - m*float64(s.BaseTokens)
	return float64(tokens)*m + b, nil
}

// Times implements FlowSchedule: ShiftedLinear at Mu(tokens).
func (s ResolutionShift) Times(steps, tokens int) ([]float64, error) {
	mu, err := s.Mu(tokens)
	if err != nil {
		return nil, err
	}
	return ShiftedLinear{Mu: mu}.Times(steps, tokens)
}

func (s ResolutionShift) String() string {
	return fmt.Sprintf("resolution-shift(mu=%g@%d..%g@%d tokens)", s.BaseShift, s.BaseTokens, s.MaxShift, s.MaxTokens)
}

// Euler is the first-order solver x += (t[i+1] − t[i])·v, FASHN VTON's.
type Euler struct{}

// NewState implements FlowSolver; Euler keeps no state.
func (Euler) NewState() FlowStepper { return eulerStep{} }

func (Euler) String() string { return "euler" }

type eulerStep struct{}

// Step computes x + dt·v in float32, as the reference does (dt is a Python
// float multiplied into a float32 tensor).
func (eulerStep) Step(x, v []float32, times []float64, i int) {
	dt := float32(times[i+1] - times[i])
	for k := range x {
		x[k] += dt * v[k]
	}
}

// FlowGuidance is classifier-free guidance for a flow model.
type FlowGuidance struct {
	// Scale combines v = v_u + Scale·(v_c − v_u). 1 runs the conditional
	// rows alone (the same velocity, half the work).
	Scale float64
	// SkipLast turns guidance off (v = v_c) on the last SkipLast steps, as
	// FASHN VTON does against colour saturation.
	SkipLast int
}

// maxFlowGuidance bounds a guidance scale.
const maxFlowGuidance = 20

func (g FlowGuidance) check(steps int) error {
	switch {
	case math.IsNaN(g.Scale) || math.IsInf(g.Scale, 0) || g.Scale < 0 || g.Scale > maxFlowGuidance:
		return fmt.Errorf("diffusion: guidance %v must be in 0..%d", g.Scale, maxFlowGuidance)
	case g.SkipLast < 0 || g.SkipLast > steps:
		return fmt.Errorf("diffusion: skip_guidance_last %d must be in 0..%d (the steps)", g.SkipLast, steps)
	}
	return nil
}

// guidedAt says whether step i of steps runs the unconditional rows.
func (g FlowGuidance) guidedAt(i, steps int) bool {
	if g.Scale == 1 {
		return false
	}
	return g.SkipLast <= 0 || i < steps-g.SkipLast
}

// combine returns v_u + Scale·(v_c − v_u) in float32 (into vc).
func (g FlowGuidance) combine(vc, vu []float32) []float32 {
	if len(vc) != len(vu) {
		panic(errors.New("diffusion: guidance rows differ in size"))
	}
	w := float32(g.Scale)
	for k := range vc {
		vc[k] = vu[k] + w*(vc[k]-vu[k])
	}
	return vc
}

// clampUnit clamps x into [-1, 1] (the reference's final clamp_).
func clampUnit(x []float32) {
	for k, v := range x {
		switch {
		case v < -1:
			x[k] = -1
		case v > 1:
			x[k] = 1
		}
	}
}
