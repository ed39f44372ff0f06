package scheduler

import "math"

// eulerMethod is EulerDiscreteScheduler (ancestral=false) and
// EulerAncestralDiscreteScheduler (ancestral=true) in sigma space: the
// sample is x0 + sigma*eps and the model sees x/sqrt(sigma^2+1).
type eulerMethod struct {
	sigmas     []float64 // one per full-schedule timestep, then the final sigma
	begin      int       // index of call 0 in sigmas (img2img skip)
	ancestral  bool
	prediction string
}

// buildEuler computes the timesteps and sigmas of set_timesteps: sigmas are
// sqrt((1-ab)/ab) interpolated at the (possibly fractional) timesteps, or the
// Karras schedule between the end sigmas for Euler with use_karras_sigmas;
// the final sigma is 0 ("zero") or the train-table minimum ("sigma_min").
func (s *Sampler) buildEuler(steps, skip int) error {
	p := &s.p
	table := sigmaTable(s.ac)
	ts := p.eulerTimesteps(steps)
	sig := make([]float64, len(ts))
	for i, t := range ts {
		sig[i] = npInterp(t, table)
	}
	ancestral := s.kind == EulerAncestral
	if p.karras && !ancestral {
		lo, hi := sig[len(sig)-1], sig[0]
		if p.sigmaMin != nil {
			lo = *p.sigmaMin
		}
		if p.sigmaMax != nil {
			hi = *p.sigmaMax
		}
		ts, sig = eulerKarras(table, lo, hi, steps)
	}
	last := 0.0
	if p.finalSigmasType == "sigma_min" && !ancestral {
		last = table[0]
	}
	sig = append(sig, last)
	maxSigma := 0.0
	for _, v := range sig {
		maxSigma = math.Max(maxSigma, v)
	}
	s.initNoiseSigma = maxSigma
	if p.spacing == "leading" {
		s.initNoiseSigma = math.Sqrt(maxSigma*maxSigma + 1)
	}
	s.timesteps = ts[skip:]
	s.m = &eulerMethod{sigmas: sig, begin: skip, ancestral: ancestral, prediction: p.prediction}
	return nil
}

// eulerKarras is the Karras schedule from hi down to lo, each sigma mapped
// back to a float32 timestep.
func eulerKarras(table []float64, lo, hi float64, steps int) (ts, out []float64) {
	out = karrasSigmas(lo, hi, steps)
	logs := make([]float64, len(table))
	for i, v := range table {
		logs[i] = math.Log(v)
	}
	ts = make([]float64, len(out))
	for i, v := range out {
		ts[i] = float64(float32(sigmaToT(v, logs)))
	}
	return ts, out
}

func (e *eulerMethod) inputScale(i int) float64 {
	sg := e.sigmas[e.begin+i]
	return 1 / math.Sqrt(sg*sg+1)
}

func (e *eulerMethod) noiseLevel(i int) (float64, float64) { return 1, e.sigmas[e.begin+i] }

// step is one Euler step to the next sigma; the ancestral variant steps to
// sigma_down and adds sigma_up of fresh noise (drawn on every step).
func (e *eulerMethod) step(mo, x []float64, i int, draw func() ([]float64, error)) ([]float64, error) {
	from, to := e.sigmas[e.begin+i], e.sigmas[e.begin+i+1]
	target, up := to, 0.0
	var z []float64
	if e.ancestral {
		up = math.Sqrt(to * to * (from*from - to*to) / (from * from))
		target = math.Sqrt(to*to - up*up)
		var err error
		if z, err = draw(); err != nil {
			return nil, err
		}
	}
	out := make([]float64, len(x))
	for j := range x {
		x0 := x[j] - from*mo[j]
		if e.prediction == "v_prediction" {
			x0 = mo[j]*(-from/math.Sqrt(from*from+1)) + x[j]/(from*from+1)
		}
		out[j] = x[j] + (x[j]-x0)/from*(target-from)
		if z != nil {
			out[j] += z[j] * up
		}
	}
	return out, nil
}
