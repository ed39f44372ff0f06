package scheduler

import (
	"fmt"
	"math"
	"sort"
)

// dpmMethod is DPMSolverMultistepScheduler with algorithm_type dpmsolver++
// (data prediction): first, second (midpoint or heun) or third order
// multistep updates in lambda = log(alpha/sigma).
type dpmMethod struct {
	sigmas          []float64 // per full-schedule timestep, then the final sigma
	begin           int
	total           int // len of the full timestep list
	order           int
	solverType      string
	lowerOrderFinal bool
	eulerAtFinal    bool
	finalZero       bool
	prediction      string

	outputs        [][]float64 // converted model outputs, newest last
	lowerOrderNums int
}

func (s *Sampler) buildDPM(steps, skip int) error {
	p := &s.p
	table := sigmaTable(s.ac)
	last := dpmLastTimestep(p, s.ac)
	var ts, sig []float64
	if p.karras {
		ts, sig = dpmKarras(table, steps)
	} else {
		ts = p.dpmTimesteps(steps, last)
		sig = make([]float64, len(ts))
		for i, t := range ts {
			sig[i] = npInterp(t, table)
		}
	}
	if err := p.checkIndexable(ts, steps); err != nil {
		return err
	}
	for i := 1; i < len(sig); i++ {
		if !(sig[i] < sig[i-1]) {
			return fmt.Errorf("scheduler: dpm++2m with %d steps and timestep_spacing %q repeats a noise level (timestep %v)", steps, p.spacing, ts[i])
		}
	}
	final := 0.0
	if p.finalSigmasType == "sigma_min" {
		final = table[0]
	}
	s.timesteps = ts[skip:]
	s.m = &dpmMethod{
		sigmas: append(sig, final), begin: skip, total: len(ts), order: p.solverOrder,
		solverType: p.solverType, lowerOrderFinal: p.lowerOrderFinal, eulerAtFinal: p.eulerAtFinal,
		finalZero: p.finalSigmasType == "zero", prediction: p.prediction,
	}
	return nil
}

// dpmLastTimestep is T minus the number of train timesteps whose lambda lies
// below lambda_min_clipped (all of them count when it is -inf).
func dpmLastTimestep(p *params, ac []float64) int {
	if math.IsInf(p.lambdaMinClipped, -1) {
		return p.numTrainTimesteps
	}
	// lambda_t decreases with t; searchsorted on the flipped (ascending) array.
	n := len(ac)
	clipped := sort.Search(n, func(k int) bool {
		a := ac[n-1-k]
		return 0.5*math.Log(a)-0.5*math.Log(1-a) >= p.lambdaMinClipped
	})
	return p.numTrainTimesteps - clipped
}

// dpmKarras is the use_karras_sigmas schedule: Karras sigmas between the
// train table's ends and the rounded timesteps they map back to.
func dpmKarras(table []float64, steps int) (ts, sig []float64) {
	sig = karrasSigmas(table[0], table[len(table)-1], steps)
	logs := make([]float64, len(table))
	for i, v := range table {
		logs[i] = math.Log(v)
	}
	ts = make([]float64, len(sig))
	for i, v := range sig {
		ts[i] = math.RoundToEven(sigmaToT(v, logs))
	}
	return ts, sig
}

// alphaSigma converts a sigma of the sigma table to (alpha_t, sigma_t).
func alphaSigma(sg float64) (float64, float64) {
	a := 1 / math.Sqrt(sg*sg+1)
	return a, sg * a
}

func (d *dpmMethod) inputScale(int) float64 { return 1 }

func (d *dpmMethod) noiseLevel(i int) (float64, float64) { return alphaSigma(d.sigmas[d.begin+i]) }

// step follows DPMSolverMultistepScheduler.step: convert the output to an x0
// prediction, then use the highest order the history and lower_order_final
// allow.
func (d *dpmMethod) step(mo, x []float64, i int, _ func() ([]float64, error)) ([]float64, error) {
	idx := d.begin + i
	lowerFinal := idx == d.total-1 && (d.eulerAtFinal || (d.lowerOrderFinal && d.total < 15) || d.finalZero)
	lowerSecond := idx == d.total-2 && d.lowerOrderFinal && d.total < 15
	a, sg := alphaSigma(d.sigmas[idx])
	x0 := make([]float64, len(mo))
	for j := range mo {
		if d.prediction == "v_prediction" {
			x0[j] = a*x[j] - sg*mo[j]
		} else {
			x0[j] = (x[j] - sg*mo[j]) / a
		}
	}
	d.outputs = append(d.outputs, x0)
	if len(d.outputs) > d.order {
		d.outputs = d.outputs[1:]
	}
	var out []float64
	switch {
	case d.order == 1 || d.lowerOrderNums < 1 || lowerFinal:
		out = d.firstOrder(x, idx)
	case d.order == 2 || d.lowerOrderNums < 2 || lowerSecond:
		out = d.secondOrder(x, idx)
	default:
		out = d.thirdOrder(x, idx)
	}
	if d.lowerOrderNums < d.order {
		d.lowerOrderNums++
	}
	return out, nil
}

// lambda is log(alpha_t/sigma_t) at sigmas[k].
func (d *dpmMethod) lambda(k int) float64 {
	a, sg := alphaSigma(d.sigmas[k])
	return math.Log(a) - math.Log(sg)
}

// firstOrder is the DPM-Solver++ first-order (DDIM-equivalent) update.
func (d *dpmMethod) firstOrder(x []float64, idx int) []float64 {
	at, st := alphaSigma(d.sigmas[idx+1])
	_, s0 := alphaSigma(d.sigmas[idx])
	h := math.Log(at) - math.Log(st) - d.lambda(idx)
	m0 := d.outputs[len(d.outputs)-1]
	out := make([]float64, len(x))
	for j := range x {
		out[j] = st/s0*x[j] - at*(math.Exp(-h)-1)*m0[j]
	}
	return out
}

// secondOrder is the multistep second-order update (midpoint or heun).
func (d *dpmMethod) secondOrder(x []float64, idx int) []float64 {
	at, st := alphaSigma(d.sigmas[idx+1])
	_, s0 := alphaSigma(d.sigmas[idx])
	lt := math.Log(at) - math.Log(st)
	l0, l1 := d.lambda(idx), d.lambda(idx-1)
	h, h0 := lt-l0, l0-l1
	r0 := h0 / h
	n := len(d.outputs)
	m0, m1 := d.outputs[n-1], d.outputs[n-2]
	em := math.Exp(-h) - 1
	c1 := -0.5 * at * em // midpoint
	if d.solverType == "heun" {
		c1 = at * (em/h + 1)
	}
	out := make([]float64, len(x))
	for j := range x {
		d1 := (m0[j] - m1[j]) / r0
		out[j] = st/s0*x[j] - at*em*m0[j] + c1*d1
	}
	return out
}

// thirdOrder is the multistep third-order update.
func (d *dpmMethod) thirdOrder(x []float64, idx int) []float64 {
	at, st := alphaSigma(d.sigmas[idx+1])
	_, s0 := alphaSigma(d.sigmas[idx])
	lt := math.Log(at) - math.Log(st)
	l0, l1, l2 := d.lambda(idx), d.lambda(idx-1), d.lambda(idx-2)
	h, h0, h1 := lt-l0, l0-l1, l1-l2
	r0, r1 := h0/h, h1/h
	n := len(d.outputs)
	m0, m1, m2 := d.outputs[n-1], d.outputs[n-2], d.outputs[n-3]
	em := math.Exp(-h) - 1
	out := make([]float64, len(x))
	for j := range x {
		d10 := (m0[j] - m1[j]) / r0
		d11 := (m1[j] - m2[j]) / r1
		dd1 := d10 + r0/(r0+r1)*(d10-d11)
		dd2 := (d10 - d11) / (r0 + r1)
		out[j] = st/s0*x[j] - at*em*m0[j] + at*(em/h+1)*dd1 - at*((em+h)/(h*h)-0.5)*dd2
	}
	return out
}
