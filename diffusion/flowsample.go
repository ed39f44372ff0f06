package diffusion

import (
	"context"
	"fmt"
	"slices"
	"sync"
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
	rows []flowRow
	out  []float32
	ran  time.Duration
	err  error
	done chan struct{}
}

// flowBatcher gathers the steps of the jobs of one flow model. Rows carry
// their own time, so jobs at different steps share a call. With batching
// on, a batch runs when every member has submitted its next step (jobs
// that started at different times step together); with batching off each
// call runs alone at once. A cancelled job leaves at once; a batch it was
// part of still completes for the others.
type flowBatcher struct {
	net      flowNet
	maxRows  int
	batching bool
	// observe, when set, is told of every network call.
	observe func(rows int, took time.Duration, err error)

	mu      sync.Mutex
	members int
	pending []*flowCall
	running bool
}

func (b *flowBatcher) join() {
	b.mu.Lock()
	b.members++
	b.mu.Unlock()
}

func (b *flowBatcher) leave() {
	b.mu.Lock()
	b.members--
	b.maybeRunLocked()
	b.mu.Unlock()
}

// submit queues a call and waits for its output or the end of ctx.
func (b *flowBatcher) submit(ctx context.Context, c *flowCall) error {
	if !b.batching {
		b.runCalls(ctx, []*flowCall{c})
		return c.err
	}
	b.mu.Lock()
	b.pending = append(b.pending, c)
	b.maybeRunLocked()
	b.mu.Unlock()
	select {
	case <-c.done:
		return c.err
	case <-ctx.Done():
		b.mu.Lock()
		b.pending = slices.DeleteFunc(b.pending, func(p *flowCall) bool { return p == c })
		b.maybeRunLocked()
		b.mu.Unlock()
		return ctx.Err()
	}
}

// maybeRunLocked starts a batch when every member is waiting.
func (b *flowBatcher) maybeRunLocked() {
	if b.running || len(b.pending) == 0 || len(b.pending) < b.members {
		return
	}
	batch := b.pending
	b.pending = nil
	b.running = true
	go func() {
		// Not tied to one job's context: a cancelled job must not fail
		// the others.
		b.runCalls(context.Background(), batch)
		b.mu.Lock()
		b.running = false
		b.maybeRunLocked()
		b.mu.Unlock()
	}()
}

// runCalls runs the calls' rows in network calls of at most maxRows rows,
// in order, and completes every call.
func (b *flowBatcher) runCalls(ctx context.Context, calls []*flowCall) {
	defer func() {
		for _, c := range calls {
			close(c.done)
		}
	}()
	type ref struct {
		c *flowCall
		r int
	}
	var refs []ref
	for _, c := range calls {
		for r := range c.rows {
			refs = append(refs, ref{c, r})
		}
		c.out = make([]float32, 0, len(c.rows)*len(c.rows[0].x))
	}
	for start := 0; start < len(refs); start += b.maxRows {
		chunk := refs[start:min(len(refs), start+b.maxRows)]
		rows := make([]flowRow, len(chunk))
		for k, r := range chunk {
			rows[k] = r.c.rows[r.r]
		}
		out, ran, err := b.net.velocity(ctx, rows)
		if b.observe != nil {
			b.observe(len(rows), ran, err)
		}
		seen := map[*flowCall]bool{}
		per := len(rows[0].x)
		for k, r := range chunk {
			if !seen[r.c] {
				seen[r.c] = true
				r.c.ran += ran
			}
			if err != nil {
				r.c.err = err
				continue
			}
			r.c.out = append(r.c.out, out[k*per:(k+1)*per]...)
		}
	}
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
		call := &flowCall{rows: rows, done: make(chan struct{})}
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
