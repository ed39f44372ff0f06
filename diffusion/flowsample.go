package diffusion

import (
	"context"
	"fmt"
	"time"
)

// flowNet is a velocity network: it computes the velocity of rows, each
// row its own state, time and conditions, and returns rows × len(x) floats
// and the time spent inside the runtime.
type flowNet interface {
	velocity(ctx context.Context, rows []flowRow) ([]float32, time.Duration, error)
}

// flowRow is one network row: the state x at time t, conditioned on cond.
type flowRow struct {
	x    []float32
	t    float64
	cond *flowCond
}

// flowCond is what a row is conditioned on: float planes in the network's
// input order and a class label. The unconditional rows of classifier-free
// guidance carry zero planes and class 0.
type flowCond struct {
	planes [][]float32
	class  int64
}

// flowCall is one job's rows for one step, waiting for their velocities.
type flowCall struct {
	batchCall
	rows []flowRow
}

// flowBatcher gathers the steps of the jobs of one flow model. Rows carry
// their own time, so jobs at different steps share a call.
type flowBatcher = rowBatcher[*flowCall]

// newFlowBatcher serves net's calls, at most maxRows rows each; observe,
// when set, is told of every network call.
func newFlowBatcher(net flowNet, maxRows int, batching bool, observe func(rows int, took time.Duration, err error)) *flowBatcher {
	return &flowBatcher{batching: batching, maxRows: maxRows,
		run: func(ctx context.Context, refs []rowRef[*flowCall]) ([]float32, time.Duration, error) {
			rows := make([]flowRow, len(refs))
			for k, r := range refs {
				rows[k] = r.c.rows[r.r]
			}
			out, ran, err := net.velocity(ctx, rows)
			if observe != nil {
				observe(len(rows), ran, err)
			}
			return out, ran, err
		}}
}

// flowJob is one flow generation in flight: samples states advanced
// together, each with its own noise and stepper, sharing the conditions.
type flowJob struct {
	x        [][]float32 // per sample: the state, from noise to data
	steppers []FlowStepper
	cond     *flowCond
	uncond   *flowCond
	times    []float64
	guidance FlowGuidance
	progress func(done, total int)
	tm       Timings
}

// newFlowJob starts samples states from noise (one slice per sample) on
// the schedule's grid.
func newFlowJob(noise [][]float32, solver FlowSolver, times []float64, g FlowGuidance, cond, uncond *flowCond) *flowJob {
	j := &flowJob{x: noise, times: times, guidance: g, cond: cond, uncond: uncond}
	for range noise {
		j.steppers = append(j.steppers, solver.NewState())
	}
	return j
}

// sampleFlow integrates the job's states from time 0 to 1 through the
// batcher, reporting progress before each step (done, total) and once at
// the end, and clamps the result into [-1, 1]. The job stops at the first
// step after ctx ends.
func sampleFlow(ctx context.Context, b *flowBatcher, j *flowJob) error {
	t0 := time.Now()
	defer func() { j.tm.Denoise = time.Since(t0) }()
	n := len(j.times) - 1
	b.join()
	defer b.leave()
	for i := range n {
		if err := ctx.Err(); err != nil {
			return err
		}
		if j.progress != nil {
			j.progress(i, n)
		}
		guided := j.guidance.guidedAt(i, n)
		rows := make([]flowRow, 0, 2*len(j.x))
		for _, x := range j.x {
			rows = append(rows, flowRow{x: x, t: j.times[i], cond: j.cond})
		}
		if guided {
			for _, x := range j.x {
				rows = append(rows, flowRow{x: x, t: j.times[i], cond: j.uncond})
			}
		}
		call := &flowCall{batchCall: newBatchCall(len(rows)), rows: rows}
		if err := b.submit(ctx, call); err != nil {
			return err
		}
		j.tm.UNet += call.ran
		j.tm.Calls++
		if err := j.apply(call, guided, i); err != nil {
			return err
		}
	}
	if j.progress != nil {
		j.progress(n, n)
	}
	for _, x := range j.x {
		clampUnit(x)
	}
	return nil
}

// apply advances every sample with its (guided) velocity.
func (j *flowJob) apply(call *flowCall, guided bool, i int) error {
	per := len(j.x[0])
	want := len(call.rows) * per
	if len(call.out) != want {
		return fmt.Errorf("diffusion: flow step %d: the network returned %d values for %d rows of %d", i, len(call.out), len(call.rows), per)
	}
	s := len(j.x)
	for k, x := range j.x {
		v := call.out[k*per : (k+1)*per]
		if guided {
			v = j.guidance.combine(v, call.out[(s+k)*per:(s+k+1)*per])
		}
		j.steppers[k].Step(x, v, j.times, i)
	}
	return nil
}
