package scheduler

import "math"

// ddimMethod is DDIMScheduler: integer timesteps; each step goes from t to
// t - T//steps (the final alpha below 0), whatever the spacing.
type ddimMethod struct {
	s          *Sampler
	ts         []float64 // the calls
	ratio      int       // T // steps
	final      float64   // alpha_cumprod used below timestep 0
	prediction string
	clip       bool
	clipRange  float64
}

func (s *Sampler) buildDDIM(steps, skip int) error {
	p := &s.p
	ts := p.ddimTimesteps(steps)
	if err := p.checkIndexable(ts, steps); err != nil {
		return err
	}
	s.timesteps = ts[skip:]
	s.m = &ddimMethod{
		s: s, ts: s.timesteps, ratio: p.numTrainTimesteps / steps, final: finalAlpha(p, s.ac),
		prediction: p.prediction, clip: p.clipSample, clipRange: p.clipSampleRange,
	}
	return nil
}

// finalAlpha is final_alpha_cumprod: 1 with set_alpha_to_one, else ab[0].
func finalAlpha(p *params, ac []float64) float64 {
	if p.setAlphaToOne {
		return 1
	}
	return ac[0]
}

func (d *ddimMethod) inputScale(int) float64 { return 1 }

func (d *ddimMethod) noiseLevel(i int) (float64, float64) {
	ab := d.s.ac[int(d.ts[i])]
	return math.Sqrt(ab), math.Sqrt(1 - ab)
}

// step is formula (12) of the DDIM paper with diffusers' clipping of the
// predicted x0 and eta-scaled variance (noise drawn only when eta > 0).
func (d *ddimMethod) step(mo, x []float64, i int, draw func() ([]float64, error)) ([]float64, error) {
	t := int(d.ts[i])
	prev := t - d.ratio
	ab := d.s.ac[t]
	abPrev := d.final
	if prev >= 0 {
		abPrev = d.s.ac[prev]
	}
	variance := (1 - abPrev) / (1 - ab) * (1 - ab/abPrev)
	std := d.s.eta * math.Sqrt(variance)
	var z []float64
	if d.s.eta > 0 {
		var err error
		if z, err = draw(); err != nil {
			return nil, err
		}
	}
	dir := math.Sqrt(1 - abPrev - std*std)
	out := make([]float64, len(x))
	for j := range x {
		x0 := predictX0(d.prediction, mo[j], x[j], ab)
		eps := mo[j]
		if d.prediction == "v_prediction" {
			eps = math.Sqrt(ab)*mo[j] + math.Sqrt(1-ab)*x[j]
		}
		if d.clip {
			x0 = clamp(x0, d.clipRange)
		}
		out[j] = math.Sqrt(abPrev)*x0 + dir*eps
		if z != nil {
			out[j] += std * z[j]
		}
	}
	return out, nil
}
