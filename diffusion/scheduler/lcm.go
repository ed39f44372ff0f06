package scheduler

import "math"

// lcmSigmaData is sigma_data of the consistency-model boundary conditions.
const lcmSigmaData = 0.5

// lcmMethod is LCMScheduler: each call predicts x0, applies the boundary
// condition denoised = c_out*x0 + c_skip*x, and (except on the last call of
// the full schedule) re-noises denoised to the next timestep's level.
type lcmMethod struct {
	s          *Sampler
	ts         []float64 // full schedule
	begin      int
	scaling    float64
	prediction string
	clip       bool
	clipRange  float64
}

func (s *Sampler) buildLCM(steps, skip int) error {
	p := &s.p
	ts, err := p.lcmTimesteps(steps)
	if err != nil {
		return err
	}
	if err := p.checkIndexable(ts, steps); err != nil {
		return err
	}
	s.timesteps = ts[skip:]
	s.m = &lcmMethod{
		s: s, ts: ts, begin: skip, scaling: p.timestepScaling,
		prediction: p.prediction, clip: p.clipSample, clipRange: p.clipSampleRange,
	}
	return nil
}

// lcmBoundary returns c_skip and c_out for timestep t.
func lcmBoundary(t, scaling float64) (cSkip, cOut float64) {
	st := t * scaling
	d2 := lcmSigmaData * lcmSigmaData
	return d2 / (st*st + d2), st / math.Sqrt(st*st+d2)
}

func (l *lcmMethod) inputScale(int) float64 { return 1 }

func (l *lcmMethod) noiseLevel(i int) (float64, float64) {
	ab := l.s.ac[int(l.ts[l.begin+i])]
	return math.Sqrt(ab), math.Sqrt(1 - ab)
}

func (l *lcmMethod) step(mo, x []float64, i int, draw func() ([]float64, error)) ([]float64, error) {
	idx := l.begin + i
	t := l.ts[idx]
	prev := t
	if idx+1 < len(l.ts) {
		prev = l.ts[idx+1]
	}
	ab := l.s.ac[int(t)]
	abPrev := l.s.ac[int(prev)]
	cSkip, cOut := lcmBoundary(t, l.scaling)
	out := make([]float64, len(x))
	for j := range x {
		x0 := predictX0(l.prediction, mo[j], x[j], ab)
		if l.clip {
			x0 = clamp(x0, l.clipRange)
		}
		out[j] = cOut*x0 + cSkip*x[j]
	}
	if idx == len(l.ts)-1 {
		return out, nil
	}
	z, err := draw()
	if err != nil {
		return nil, err
	}
	for j := range out {
		out[j] = math.Sqrt(abPrev)*out[j] + math.Sqrt(1-abPrev)*z[j]
	}
	return out, nil
}

// GuidanceEmbedding is the w-embedding an LCM UNet with time_cond_proj_dim
// takes as timestep_cond: diffusers' get_guidance_scale_embedding applied, as
// the LCM pipeline does, to guidanceScale - 1. With w = (guidanceScale-1)*1000
// and half = dim/2 it is [sin(w*f_k) | cos(w*f_k)] for
// f_k = exp(-k*ln(10000)/(half-1)), zero-padded to an odd dim; the arithmetic
// is rounded to float32 at each step as torch does, since w*f_k reaches
// thousands of radians.
func GuidanceEmbedding(guidanceScale float64, dim int) []float32 {
	out := make([]float32, dim)
	half := dim / 2
	if half == 0 {
		return out
	}
	w := float32(float32(guidanceScale-1) * 1000)
	base := float32(math.Log(10000))
	if half > 1 {
		base /= float32(half - 1)
	}
	for k := 0; k < half; k++ {
		f := float32(math.Exp(float64(float32(k) * -base)))
		arg := float64(w * f)
		out[k] = float32(math.Sin(arg))
		out[half+k] = float32(math.Cos(arg))
	}
	return out
}
