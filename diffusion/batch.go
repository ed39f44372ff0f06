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

// stepCall is a stepInput waiting for its output.
type stepCall struct {
	in   stepInput
	out  []float32     // rows × 4 × h × w
	ran  time.Duration // time in ONNX Runtime of the calls this rode in
	err  error
	done chan struct{}
	// first is the job's first call (see Options.JoinWindow).
	first    bool
	joinWait time.Duration
}

// stepBatcher gathers the steps of the jobs of one latent size. Jobs join
// before their first step and leave after their last (or when cancelled).
// With batching on, a batch runs when every member has submitted its next
// step, so jobs that started at different times step together; with
// batching off each call runs on its own at once.
type stepBatcher struct {
	m       *Model
	h, w    int
	mu      sync.Mutex
	members int
	pending []*stepCall
	running bool
}

// batcherFor returns the batcher of a latent size.
func (m *Model) batcherFor(h, w int) *stepBatcher {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := [2]int{h, w}
	b := m.batchers[key]
	if b == nil {
		b = &stepBatcher{m: m, h: h, w: w}
		m.batchers[key] = b
	}
	return b
}

func (b *stepBatcher) join() {
	b.mu.Lock()
	b.members++
	b.mu.Unlock()
}

func (b *stepBatcher) leave() {
	b.mu.Lock()
	b.members--
	b.maybeRunLocked()
	b.mu.Unlock()
}

// submit queues a call and waits for its output or the end of ctx. A
// cancelled call leaves the queue; one already running is computed with
// its batch and dropped.
func (b *stepBatcher) submit(ctx context.Context, c *stepCall) error {
	if !b.m.opts.Batching {
		b.m.runCalls(ctx, []*stepCall{c})
		return c.err
	}
	if c.first && b.m.sig.tsScalar && b.m.opts.JoinWindow > 0 {
		// Jobs submitted together start in phase: with a rank-0 timestep
		// only jobs at the same step can share a call.
		t0 := time.Now()
		select {
		case <-time.After(b.m.opts.JoinWindow):
		case <-ctx.Done():
			return ctx.Err()
		}
		c.joinWait = time.Since(t0)
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
		b.pending = slices.DeleteFunc(b.pending, func(p *stepCall) bool { return p == c })
		b.mu.Unlock()
		return ctx.Err()
	}
}

// maybeRunLocked starts a batch when every member is waiting.
func (b *stepBatcher) maybeRunLocked() {
	if b.running || len(b.pending) == 0 || len(b.pending) < b.members {
		return
	}
	batch := b.pending
	b.pending = nil
	b.running = true
	go func() {
		// The batch is not tied to one job's context: a cancelled job
		// must not fail the others. Each job stops waiting on its own.
		b.m.runCalls(context.Background(), batch)
		b.mu.Lock()
		b.running = false
		b.maybeRunLocked()
		b.mu.Unlock()
	}()
}

// rowRef is one UNet row: row r of call c.
type rowRef struct {
	c *stepCall
	r int
}

// runCalls runs the rows of calls in UNet calls of at most MaxBatch rows
// (and, for rank-0 timesteps, of one timestep each), then completes every
// call.
func (m *Model) runCalls(ctx context.Context, calls []*stepCall) {
	for _, c := range calls {
		c.out = make([]float32, c.in.rows*latentChannels*c.in.h*c.in.w)
	}
	// Chunks run at once: with a rank-0 timestep, jobs at different steps
	// cannot share a call, and running their calls side by side is what
	// unbatched jobs would get.
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, chunk := range m.chunks(calls) {
		wg.Go(func() {
			ran, err := m.runChunk(ctx, chunk)
			mu.Lock()
			defer mu.Unlock()
			seen := map[*stepCall]bool{}
			for _, r := range chunk {
				if err != nil {
					r.c.err = err
				}
				if !seen[r.c] {
					seen[r.c] = true
					r.c.ran += ran
				}
			}
		})
	}
	wg.Wait()
	for _, c := range calls {
		close(c.done)
	}
}

// chunks splits the rows of calls into UNet batches.
func (m *Model) chunks(calls []*stepCall) [][]rowRef {
	groups := [][]*stepCall{calls}
	if m.sig.tsScalar {
		groups = nil
		for _, c := range calls {
			i := slices.IndexFunc(groups, func(g []*stepCall) bool { return g[0].in.t == c.in.t })
			if i < 0 {
				groups = append(groups, []*stepCall{c})
			} else {
				groups[i] = append(groups[i], c)
			}
		}
	}
	var out [][]rowRef
	for _, g := range groups {
		var cur []rowRef
		for _, c := range g {
			for r := range c.in.rows {
				if len(cur) == m.opts.MaxBatch {
					out = append(out, cur)
					cur = nil
				}
				cur = append(cur, rowRef{c, r})
			}
		}
		if len(cur) > 0 {
			out = append(out, cur)
		}
	}
	return out
}

// runChunk runs one UNet call over the given rows and scatters the output
// (chunks write disjoint rows); it returns the time inside ONNX Runtime.
func (m *Model) runChunk(ctx context.Context, rows []rowRef) (time.Duration, error) {
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
		return ran, fmt.Errorf("diffusion: %s: %w", m.unet.rel, err)
	}
	per := len(out[0].F32) / len(rows)
	for k, r := range rows {
		copy(r.c.out[r.r*per:(r.r+1)*per], out[0].F32[k*per:(k+1)*per])
	}
	return ran, nil
}

// unetInputs concatenates the rows into the UNet's input tensors.
func (m *Model) unetInputs(rows []rowRef) ([]inference.Value, []int64) {
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
