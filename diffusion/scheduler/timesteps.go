package scheduler

import (
	"fmt"
	"math"
)

// baseGrid is the descending timestep table that DDIM, Euler and
// Euler-ancestral set_timesteps build for n steps (before any class-specific
// rounding to float32 or int): leading uses the integer step ratio T//n plus
// steps_offset, trailing counts down from T by T/n and subtracts 1, linspace
// spreads n points over [0, T-1].
func (p *params) baseGrid(n int) []float64 {
	t := p.numTrainTimesteps
	switch p.spacing {
	case "linspace":
		return reversed(npLinspace(0, float64(t-1), n))
	case "trailing":
		return addAll(roundAll(npArange(float64(t), 0, -float64(t)/float64(n))), -1)
	default: // leading
		return addAll(reversed(scaledRange(n, t/n)), float64(p.stepsOffset))
	}
}

// ddimTimesteps is DDIMScheduler.set_timesteps: integer timesteps, descending.
func (p *params) ddimTimesteps(n int) []float64 {
	g := p.baseGrid(n)
	if p.spacing == "linspace" {
		roundAll(g)
	}
	return g
}

// eulerTimesteps is EulerDiscreteScheduler / EulerAncestralDiscreteScheduler
// set_timesteps: float32 timesteps, descending (linspace gives fractions).
func (p *params) eulerTimesteps(n int) []float64 {
	return float32s(p.baseGrid(n))
}

// pndmGrid is PNDMScheduler._timesteps: the same integer grid as DDIM but in
// ascending order (PNDM builds its call list from it).
func (p *params) pndmGrid(n int) []float64 {
	return reversed(p.ddimTimesteps(n))
}

// dpmTimesteps is DPMSolverMultistepScheduler.set_timesteps (no Karras):
// it spaces n+1 points and drops the last, so leading and linspace differ
// from the other classes (e.g. 20 linspace steps end at 50, not 0).
func (p *params) dpmTimesteps(n int, lastTimestep int) []float64 {
	var g []float64
	switch p.spacing {
	case "linspace":
		g = reversed(roundAll(npLinspace(0, float64(lastTimestep-1), n+1)))
		g = g[:n]
	case "trailing":
		step := float64(p.numTrainTimesteps) / float64(n)
		g = addAll(roundAll(npArange(float64(lastTimestep), 0, -step)), -1)
	default: // leading
		ratio := lastTimestep / (n + 1)
		g = reversed(scaledRange(n+1, ratio))[:n]
		addAll(g, float64(p.stepsOffset))
	}
	return g
}

// lcmTimesteps is LCMScheduler.set_timesteps with strength 1: the
// distillation schedule k*i-1 (i = 1..original_inference_steps, k = T //
// original_inference_steps), descending, sampled at floor(linspace(0, len, n,
// endpoint=False)). timestep_spacing and steps_offset do not apply to LCM.
func (p *params) lcmTimesteps(n int) ([]float64, error) {
	orig := p.originalSteps
	t := p.numTrainTimesteps
	if orig > t {
		return nil, fmt.Errorf("scheduler: original_inference_steps %d exceeds num_train_timesteps %d", orig, t)
	}
	if n > orig {
		return nil, fmt.Errorf("scheduler: steps %d exceeds LCM original_inference_steps %d", n, orig)
	}
	k := t / orig
	origin := make([]float64, orig) // descending
	for i := range origin {
		origin[i] = float64((orig-i)*k - 1)
	}
	idx := npLinspaceOpen(0, float64(orig), n)
	out := make([]float64, n)
	for i, x := range idx {
		out[i] = origin[int(math.Floor(x))]
	}
	return out, nil
}

// checkIndexable verifies that integer-indexed timesteps fall inside the
// train table (diffusers would index out of range or wrap around).
func (p *params) checkIndexable(ts []float64, steps int) error {
	for _, t := range ts {
		if t < 0 || t >= float64(p.numTrainTimesteps) {
			return fmt.Errorf("scheduler: %s with %d steps, timestep_spacing %q and steps_offset %d gives timestep %v outside [0, %d)",
				p.kind, steps, p.spacing, p.stepsOffset, t, p.numTrainTimesteps)
		}
	}
	return nil
}

// karrasSigmas is the Karras et al. (2022) rho=7 schedule of n sigmas from
// sigmaMax down to sigmaMin.
func karrasSigmas(sigmaMin, sigmaMax float64, n int) []float64 {
	const rho = 7.0
	ramp := npLinspace(0, 1, n)
	minInv := math.Pow(sigmaMin, 1/rho)
	maxInv := math.Pow(sigmaMax, 1/rho)
	out := make([]float64, n)
	for i, r := range ramp {
		out[i] = math.Pow(maxInv+r*(minInv-maxInv), rho)
	}
	return out
}

// sigmaToT maps a sigma back to a (fractional) timestep by linear
// interpolation in log-sigma between the neighbouring train timesteps, as
// diffusers' _sigma_to_t does.
func sigmaToT(sigma float64, logSigmas []float64) float64 {
	ls := math.Log(math.Max(sigma, 1e-10))
	low := 0
	for i, v := range logSigmas {
		if ls-v >= 0 {
			low = i
		}
	}
	if low > len(logSigmas)-2 {
		low = len(logSigmas) - 2
	}
	lo, hi := logSigmas[low], logSigmas[low+1]
	w := (lo - ls) / (lo - hi)
	w = math.Max(0, math.Min(1, w))
	return (1-w)*float64(low) + w*float64(low+1)
}
