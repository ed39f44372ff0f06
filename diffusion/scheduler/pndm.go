package scheduler

import (
	"fmt"
	"math"
)

// pndmOrder is the number of Runge-Kutta grid points PNDM warms up with.
const pndmOrder = 4

// pndmMethod is PNDMScheduler: an optional pseudo Runge-Kutta (PRK) warm-up
// followed by pseudo linear multistep (PLMS) steps, both built on the DDIM
// transfer of formula (9) of the PNDM paper.
type pndmMethod struct {
	s          *Sampler
	calls      []float64
	prkCalls   int     // leading calls that are PRK (0 with skip_prk_steps)
	ratio      int     // T // steps
	half       int     // T // steps // 2 (PRK half step)
	final      float64 // alpha_cumprod below timestep 0
	prediction string

	counter  int
	ets      [][]float64 // past model outputs, newest last
	cur      []float64   // cur_sample
	curModel []float64   // PRK running combination of model outputs
}

// buildPNDM builds the call list from the ascending grid of the steps that
// remain after strength skipping (see doc.go): with skip_prk_steps, PLMS
// repeats the second grid point once; otherwise twelve PRK calls over the top
// four grid points come first.
func (s *Sampler) buildPNDM(steps, skip int) error {
	p := &s.p
	full := p.pndmGrid(steps)
	if err := p.checkIndexable(full, steps); err != nil {
		return err
	}
	g := full[:steps-skip]
	m := &pndmMethod{
		s: s, ratio: p.numTrainTimesteps / steps, half: p.numTrainTimesteps / steps / 2,
		final: finalAlpha(p, s.ac), prediction: p.prediction,
	}
	if p.skipPRKSteps {
		m.calls = plmsCalls(g)
	} else {
		if len(g) < pndmOrder {
			return fmt.Errorf("scheduler: pndm with skip_prk_steps=false needs at least %d steps after strength, got %d", pndmOrder, len(g))
		}
		prk := prkCalls(g[len(g)-pndmOrder:], m.half)
		m.prkCalls = len(prk)
		m.calls = append(prk, reversed(g[:len(g)-3])...)
	}
	s.timesteps = m.calls
	s.m = m
	return nil
}

// plmsCalls is diffusers' plms_timesteps for skip_prk_steps: the grid
// descending with its second-highest point repeated.
func plmsCalls(g []float64) []float64 {
	n := len(g)
	calls := append([]float64(nil), g[:n-1]...)
	if n >= 2 {
		calls = append(calls, g[n-2])
	}
	return reversed(append(calls, g[n-1]))
}

// prkCalls is diffusers' prk_timesteps: the top grid points each followed by
// its half step, every point but the first and last repeated, descending.
func prkCalls(top []float64, half int) []float64 {
	var pts []float64
	for _, t := range top {
		pts = append(pts, t, t+float64(half))
	}
	pts = pts[:len(pts)-1]
	var rep []float64
	for _, t := range pts {
		rep = append(rep, t, t)
	}
	return reversed(rep[1 : len(rep)-1])
}

func (m *pndmMethod) inputScale(int) float64 { return 1 }

func (m *pndmMethod) noiseLevel(i int) (float64, float64) {
	ab := m.s.ac[int(m.calls[i])]
	return math.Sqrt(ab), math.Sqrt(1 - ab)
}

func (m *pndmMethod) step(mo, x []float64, i int, _ func() ([]float64, error)) ([]float64, error) {
	var out []float64
	var err error
	if m.counter < m.prkCalls {
		out, err = m.stepPRK(mo, x, i)
	} else {
		out, err = m.stepPLMS(mo, x, i)
	}
	if err != nil {
		return nil, err
	}
	m.counter++
	return out, nil
}

// stepPRK is step_prk: four calls per Runge-Kutta step, all transferring
// from the sample of the step's first call.
func (m *pndmMethod) stepPRK(mo, x []float64, i int) ([]float64, error) {
	t := int(m.calls[i])
	diff := m.half
	if m.counter%2 == 1 {
		diff = 0
	}
	prev := t - diff
	from := int(m.calls[m.counter/4*4])
	switch m.counter % 4 {
	case 0:
		m.curModel = axpy(make([]float64, len(mo)), 1.0/6, mo)
		m.ets = append(m.ets, mo)
		m.cur = x
	case 1, 2:
		axpy(m.curModel, 1.0/3, mo)
	case 3:
		mo = axpy(m.curModel, 1.0/6, mo)
		m.curModel = nil
	}
	return m.transfer(m.cur, from, prev, mo)
}

// stepPLMS is step_plms: Adams-Bashforth combinations of up to four past
// model outputs; its second call redoes the first step with the mean of the
// first two outputs (a Heun-like correction).
func (m *pndmMethod) stepPLMS(mo, x []float64, i int) ([]float64, error) {
	t := int(m.calls[i])
	prev := t - m.ratio
	if m.counter != 1 {
		if len(m.ets) > 3 {
			m.ets = m.ets[len(m.ets)-3:]
		}
		m.ets = append(m.ets, mo)
	} else {
		prev, t = t, t+m.ratio
	}
	e := m.ets
	n := len(e)
	sample := x
	var eff []float64
	switch {
	case n == 1 && m.counter == 0:
		eff = mo
		m.cur = x
	case n == 1 && m.counter == 1:
		eff = combine([]float64{0.5, 0.5}, mo, e[0])
		sample, m.cur = m.cur, nil
	case n == 2:
		eff = combine([]float64{3.0 / 2, -1.0 / 2}, e[1], e[0])
	case n == 3:
		eff = combine([]float64{23.0 / 12, -16.0 / 12, 5.0 / 12}, e[2], e[1], e[0])
	default:
		eff = combine([]float64{55.0 / 24, -59.0 / 24, 37.0 / 24, -9.0 / 24}, e[n-1], e[n-2], e[n-3], e[n-4])
	}
	return m.transfer(sample, t, prev, eff)
}

// transfer is _get_prev_sample: the deterministic DDIM move of sample from
// timestep t to prev with noise estimate mo (v_prediction converted first).
func (m *pndmMethod) transfer(sample []float64, t, prev int, mo []float64) ([]float64, error) {
	if t < 0 || t >= len(m.s.ac) || prev >= len(m.s.ac) {
		return nil, fmt.Errorf("scheduler: pndm timestep %d -> %d outside the train table", t, prev)
	}
	ab := m.s.ac[t]
	abPrev := m.final
	if prev >= 0 {
		abPrev = m.s.ac[prev]
	}
	coef := math.Sqrt(abPrev / ab)
	denom := ab*math.Sqrt(1-abPrev) + math.Sqrt(ab*(1-ab)*abPrev)
	out := make([]float64, len(sample))
	for j := range sample {
		eps := mo[j]
		if m.prediction == "v_prediction" {
			eps = math.Sqrt(ab)*mo[j] + math.Sqrt(1-ab)*sample[j]
		}
		out[j] = coef*sample[j] - (abPrev-ab)*eps/denom
	}
	return out, nil
}

// axpy adds a*x to y in place and returns y.
func axpy(y []float64, a float64, x []float64) []float64 {
	for j := range y {
		y[j] += a * x[j]
	}
	return y
}

// combine returns sum_k w[k]*vs[k].
func combine(w []float64, vs ...[]float64) []float64 {
	out := make([]float64, len(vs[0]))
	for k, v := range vs {
		axpy(out, w[k], v)
	}
	return out
}
