package diffusion

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"fashiond/inference"
)

// BatchObserver receives every UNet call of a Model: its rows (the jobs'
// rows it carried), the most it could carry (Options.MaxBatch) and its time
// in ONNX Runtime. Package metrics implements it; it must not block.
type BatchObserver interface {
	UNetCall(model string, rows, maxRows int, took time.Duration, err error)
}

// stepInput is one job's rows for one UNet call.
type stepInput struct {
	rows   int
	h, w   int       // latent size
	sample []float32 // rows × inChannels × h × w
	t      float64
	hidden []float32 // rows × seqLen × hidden
	tcond  []float32 // rows × condDim, or nil
}

// stepCall is a stepInput waiting for its output (rows × 4 × h × w).
type stepCall struct {
	batchCall
	in stepInput
	// first is the job's first call (see Options.JoinWindow).
	first    bool
	joinWait time.Duration
}

// batchCall is what every batched call carries: its row count, and once
// done, its output (rows × the network's per-row output), the time in the
// runtime of the network calls it rode in and the first error.
type batchCall struct {
	nrows int
	out   []float32
	ran   time.Duration
	err   error
	done  chan struct{}
}

func newBatchCall(rows int) batchCall { return batchCall{nrows: rows, done: make(chan struct{})} }

func (c *batchCall) base() *batchCall { return c }

// batched is a call type a rowBatcher serves.
type batched interface {
	comparable
	base() *batchCall
}

// rowRef is one network row: row r of call c.
type rowRef[C batched] struct {
	c C
	r int
}

// rowBatcher gathers the calls of the jobs sharing one network (the UNet
// of one latent size, a flow model's transformer): each job's call is its
// rows for one step, and a network call concatenates the rows of several
// jobs, each job keeping its own state. Jobs join before their first step
// and leave after their last (or when cancelled). With batching on, a
// batch runs when every member has submitted its next step, so jobs that
// started at different times step together; with batching off each call
// runs on its own at once. A cancelled job leaves at once; a batch it was
// part of still completes for the others.
type rowBatcher[C batched] struct {
	batching bool
	maxRows  int
	// together, when set, says whether two calls' rows may share a network
	// call (a rank-0 timestep: only the same timestep); nil, any may.
	together func(a, b C) bool
	// run makes one network call over rows and returns rows × per floats
	// and the time spent in the runtime.
	run func(ctx context.Context, rows []rowRef[C]) ([]float32, time.Duration, error)

	mu      sync.Mutex
	members int
	pending []C
	running bool
}

func (b *rowBatcher[C]) join() {
	b.mu.Lock()
	b.members++
	b.mu.Unlock()
}

func (b *rowBatcher[C]) leave() {
	b.mu.Lock()
	b.members--
	b.maybeRunLocked()
	b.mu.Unlock()
}

// submit queues a call and waits for its output or the end of ctx. A
// cancelled call leaves the queue; one already running is computed with
// its batch and dropped.
func (b *rowBatcher[C]) submit(ctx context.Context, c C) error {
	if !b.batching {
		b.runCalls(ctx, []C{c})
		return c.base().err
	}
	b.mu.Lock()
	b.pending = append(b.pending, c)
	b.maybeRunLocked()
	b.mu.Unlock()
	select {
	case <-c.base().done:
		return c.base().err
	case <-ctx.Done():
		b.mu.Lock()
		b.pending = slices.DeleteFunc(b.pending, func(p C) bool { return p == c })
		b.mu.Unlock()
		return ctx.Err()
	}
}

// maybeRunLocked starts a batch when every member is waiting.
func (b *rowBatcher[C]) maybeRunLocked() {
	if b.running || len(b.pending) == 0 || len(b.pending) < b.members {
		return
	}
	batch := b.pending
	b.pending = nil
	b.running = true
	go func() {
		// The batch is not tied to one job's context: a cancelled job
		// must not fail the others. Each job stops waiting on its own.
		b.runCalls(context.Background(), batch)
		b.mu.Lock()
		b.running = false
		b.maybeRunLocked()
		b.mu.Unlock()
	}()
}

// runCalls runs the rows of calls in network calls of at most maxRows rows
// (of calls that may go together), scatters the outputs and completes
// every call. Chunks run at once: jobs that cannot share a call get what
// unbatched jobs would.
func (b *rowBatcher[C]) runCalls(ctx context.Context, calls []C) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, chunk := range b.chunks(calls) {
		wg.Go(func() {
			out, ran, err := b.run(ctx, chunk)
			if err == nil && (len(out) == 0 || len(out)%len(chunk) != 0) {
				err = fmt.Errorf("diffusion: the network returned %d values for %d rows", len(out), len(chunk))
			}
			mu.Lock()
			defer mu.Unlock()
			scatter(chunk, out, ran, err)
		})
	}
	wg.Wait()
	for _, c := range calls {
		close(c.base().done)
	}
}

// scatter copies a network call's output rows into their calls and adds
// its time to each call once.
func scatter[C batched](chunk []rowRef[C], out []float32, ran time.Duration, err error) {
	seen := map[C]bool{}
	for k, r := range chunk {
		c := r.c.base()
		if !seen[r.c] {
			seen[r.c] = true
			c.ran += ran
		}
		if err != nil {
			c.err = err
			continue
		}
		per := len(out) / len(chunk)
		if c.out == nil {
			c.out = make([]float32, c.nrows*per)
		}
		copy(c.out[r.r*per:(r.r+1)*per], out[k*per:(k+1)*per])
	}
}

// chunks splits the rows of calls into network calls.
func (b *rowBatcher[C]) chunks(calls []C) [][]rowRef[C] {
	groups := [][]C{calls}
	if b.together != nil {
		groups = nil
		for _, c := range calls {
			i := slices.IndexFunc(groups, func(g []C) bool { return b.together(g[0], c) })
			if i < 0 {
				groups = append(groups, []C{c})
			} else {
				groups[i] = append(groups[i], c)
			}
		}
	}
	var out [][]rowRef[C]
	for _, g := range groups {
		var cur []rowRef[C]
		for _, c := range g {
			for r := range c.base().nrows {
				if len(cur) == b.maxRows {
					out = append(out, cur)
					cur = nil
				}
				cur = append(cur, rowRef[C]{c, r})
			}
		}
		if len(cur) > 0 {
			out = append(out, cur)
		}
	}
	return out
}

// stepBatcher is the batcher of the UNet calls of one latent size.
type stepBatcher = rowBatcher[*stepCall]

// batcherFor returns the batcher of a latent size.
func (m *Model) batcherFor(h, w int) *stepBatcher {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := [2]int{h, w}
	b := m.batchers[key]
	if b == nil {
		b = &stepBatcher{batching: m.opts.Batching, maxRows: m.opts.MaxBatch, run: m.runChunk}
		if m.sig.tsScalar {
			b.together = func(a, b *stepCall) bool { return a.in.t == b.in.t }
		}
		m.batchers[key] = b
	}
	return b
}

// submitStep queues a UNet call on b. With a rank-0 timestep only jobs at
// the same step can share a call, so a job's first call waits
// Options.JoinWindow for jobs submitted together to start in phase.
func (m *Model) submitStep(ctx context.Context, b *stepBatcher, c *stepCall) error {
	if m.opts.Batching && c.first && m.sig.tsScalar && m.opts.JoinWindow > 0 {
		t0 := time.Now()
		select {
		case <-time.After(m.opts.JoinWindow):
		case <-ctx.Done():
			return ctx.Err()
		}
		c.joinWait = time.Since(t0)
	}
	return b.submit(ctx, c)
}

// runChunk makes one UNet call over the given rows; it returns the output
// and the time inside ONNX Runtime.
func (m *Model) runChunk(ctx context.Context, rows []rowRef[*stepCall]) ([]float32, time.Duration, error) {
	in, outShape := m.unetInputs(rows)
	t0 := time.Now()
	out, err := m.unet.run(ctx, in, [][]int64{outShape})
	ran := time.Since(t0)
	m.stats.calls.Add(1)
	m.stats.rows.Add(int64(len(rows)))
	m.stats.runNanos.Add(int64(ran))
	if m.opts.Observer != nil {
		m.opts.Observer.UNetCall(m.name, len(rows), m.opts.MaxBatch, ran, err)
	}
	if err != nil {
		return nil, ran, fmt.Errorf("diffusion: %s: %w", m.unet.rel, err)
	}
	return out[0].F32, ran, nil
}

// unetInputs concatenates the rows into the UNet's input tensors.
func (m *Model) unetInputs(rows []rowRef[*stepCall]) ([]inference.Value, []int64) {
	B := int64(len(rows))
	first := rows[0].c
	h, w := int64(first.in.h), int64(first.in.w)
	per := len(first.in.sample) / first.in.rows
	hidPer := len(first.in.hidden) / first.in.rows
	var sample, hidden, tcond []float32
	ts := make([]float64, 0, len(rows))
	for _, r := range rows {
		sample = append(sample, r.c.in.sample[r.r*per:(r.r+1)*per]...)
		hidden = append(hidden, r.c.in.hidden[r.r*hidPer:(r.r+1)*hidPer]...)
		if m.sig.condDim > 0 {
			tcond = append(tcond, r.c.in.tcond[r.r*m.sig.condDim:(r.r+1)*m.sig.condDim]...)
		}
		ts = append(ts, r.c.in.t)
	}
	in := []inference.Value{
		{DType: m.unet.in[0].DType, Shape: []int64{B, int64(m.sig.inChannels), h, w}, F32: sample},
		m.timestepValue(ts),
		{DType: m.unet.in[2].DType, Shape: []int64{B, int64(m.sig.seqLen), int64(m.sig.hidden)}, F32: hidden},
	}
	if m.sig.condDim > 0 {
		in = append(in, inference.Value{DType: m.unet.in[3].DType, Shape: []int64{B, int64(m.sig.condDim)}, F32: tcond})
	}
	return in, []int64{B, latentChannels, h, w}
}

// timestepValue is the timestep tensor in the graph's convention: rank 0
// (the chunk shares one timestep) or one per row; float timesteps as they
// are, integer ones truncated as numpy's astype does.
func (m *Model) timestepValue(ts []float64) inference.Value {
	v := inference.Value{DType: m.sig.tsType, Shape: []int64{int64(len(ts))}}
	if m.sig.tsScalar {
		v.Shape, ts = []int64{}, ts[:1]
	}
	for _, t := range ts {
		if v.DType.IsFloat() {
			v.F32 = append(v.F32, float32(t))
		} else {
			v.I64 = append(v.I64, int64(t))
		}
	}
	return v
}
