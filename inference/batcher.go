package inference

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ErrClosed is returned by a Batcher or Pool after Close.
var ErrClosed = errors.New("inference: runner closed")

// BatchOptions are the limits of one model's dynamic batcher.
type BatchOptions struct {
	// MaxBatch is the most items (sum of dim 0) in one call; <= 1 turns
	// batching off (calls pass straight through).
	MaxBatch int
	// MaxDelay is how long the first request of a batch waits for others
	// (default 4 ms; keep it under 10 ms).
	MaxDelay time.Duration
	// Name labels errors.
	Name string
	// Parallel is the most batches running at once (default 1: requests
	// that arrive while a batch runs gather into the next one).
	Parallel int
}

// BatchStats describe a batcher's work so far.
type BatchStats struct {
	Calls     int64   // Run calls
	Batches   int64   // calls made to the underlying runner
	Items     int64   // items (dim-0 rows) those calls carried
	Cancelled int64   // requests whose context ended before their result
	Queued    int64   // requests waiting now
	Fallbacks int64   // batches that failed and were rerun one request at a time
	MeanFill  float64 // Items / Batches: mean items per underlying call
}

// Batcher gathers concurrent Run calls of equal input shape into one call
// of the underlying runner: inputs are concatenated on dim 0 and outputs
// split back. Requests wait at most MaxDelay for company. It implements
// Runner; Close is idempotent and nil-safe.
type Batcher struct {
	r    Runner
	opt  BatchOptions
	reqs chan *batchReq
	free chan struct{} // a running batch finished
	quit chan struct{}
	done chan struct{} // dispatcher exited
	once sync.Once
	runs sync.WaitGroup

	calls, batches, items, cancelled, queued, fallbacks atomic.Int64
}

type batchReq struct {
	ctx    context.Context
	inputs []Tensor
	n      int64
	key    string
	enq    time.Time
	res    chan batchRes // buffered 1
	state  atomic.Int32  // reqQueued, reqTaken, reqAbandoned
}

type batchRes struct {
	out []Tensor
	err error
}

const (
	reqQueued int32 = iota
	reqTaken
	reqAbandoned
)

// NewBatcher starts a batcher over r (typically a Session whose graph has a
// symbolic batch dimension).
func NewBatcher(r Runner, opt BatchOptions) *Batcher {
	if opt.MaxDelay <= 0 {
		opt.MaxDelay = 4 * time.Millisecond
	}
	if opt.Parallel <= 0 {
		opt.Parallel = 1
	}
	if opt.Name == "" {
		opt.Name = "model"
	}
	b := &Batcher{
		r:    r,
		opt:  opt,
		reqs: make(chan *batchReq),
		free: make(chan struct{}, opt.Parallel),
		quit: make(chan struct{}),
		done: make(chan struct{}),
	}
	go b.dispatch()
	return b
}

// Stats returns the counters so far.
func (b *Batcher) Stats() BatchStats {
	if b == nil {
		return BatchStats{}
	}
	s := BatchStats{Calls: b.calls.Load(), Batches: b.batches.Load(), Items: b.items.Load(), Cancelled: b.cancelled.Load(), Queued: b.queued.Load(), Fallbacks: b.fallbacks.Load()}
	if s.Batches > 0 {
		s.MeanFill = float64(s.Items) / float64(s.Batches)
	}
	return s
}

// Run queues the inputs (every tensor with the same dim 0, usually 1) and
// returns this request's slice of the batched outputs. A context that ends
// while queued or running returns its error at once; the others in the
// batch are unaffected.
func (b *Batcher) Run(ctx context.Context, inputs []Tensor) ([]Tensor, error) {
	if b == nil {
		return nil, errors.New("inference: nil batcher")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b.calls.Add(1)
	n, key, err := batchKey(inputs)
	if err != nil {
		return nil, fmt.Errorf("inference: %s: %w", b.opt.Name, err)
	}
	select {
	case <-b.quit:
		return nil, ErrClosed
	default:
	}
	if b.opt.MaxBatch <= 1 || n >= int64(b.opt.MaxBatch) {
		b.batches.Add(1)
		b.items.Add(n)
		return b.call(ctx, inputs)
	}
	req := &batchReq{ctx: ctx, inputs: inputs, n: n, key: key, enq: time.Now(), res: make(chan batchRes, 1)}
	select {
	case b.reqs <- req:
	case <-ctx.Done():
		b.cancelled.Add(1)
		return nil, ctx.Err()
	case <-b.quit:
		return nil, ErrClosed
	}
	select {
	case r := <-req.res:
		return r.out, r.err
	case <-ctx.Done():
		req.state.Store(reqAbandoned)
		b.cancelled.Add(1)
		return nil, ctx.Err()
	}
}

// Close stops the batcher: queued requests fail with ErrClosed, running
// batches finish. It does not close the underlying runner.
func (b *Batcher) Close() error {
	if b == nil {
		return nil
	}
	b.once.Do(func() {
		close(b.quit)
		<-b.done
		b.runs.Wait()
	})
	return nil
}

func (b *Batcher) call(ctx context.Context, inputs []Tensor) (out []Tensor, err error) {
	err = guard(func() error {
		var e error
		out, e = b.r.Run(ctx, inputs)
		return e
	})
	return out, err
}

// batchKey checks the inputs and returns their common dim 0 and a key of
// the remaining dimensions: only requests with equal keys share a batch.
func batchKey(inputs []Tensor) (int64, string, error) {
	if len(inputs) == 0 {
		return 0, "", errors.New("no inputs")
	}
	var (
		n  int64 = -1
		sb strings.Builder
	)
	for i, t := range inputs {
		if len(t.Shape) == 0 || t.Shape[0] < 1 {
			return 0, "", fmt.Errorf("input %d: shape %v has no batch dimension", i, t.Shape)
		}
		if int64(len(t.Data)) != t.Elements() {
			return 0, "", fmt.Errorf("input %d: shape %v needs %d values, got %d", i, t.Shape, t.Elements(), len(t.Data))
		}
		if n >= 0 && t.Shape[0] != n {
			return 0, "", fmt.Errorf("input %d: batch %d differs from input 0's %d", i, t.Shape[0], n)
		}
		n = t.Shape[0]
		sb.WriteByte('|')
		for _, d := range t.Shape[1:] {
			sb.WriteString(strconv.FormatInt(d, 10))
			sb.WriteByte('x')
		}
	}
	return n, sb.String(), nil
}

type batchGroup struct {
	reqs  []*batchReq
	items int64
}

func (b *Batcher) dispatch() {
	defer close(b.done)
	groups := map[string]*batchGroup{}
	var order []string // keys in arrival order of their oldest request
	running := 0
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()

	// fire starts every group that is full or whose oldest request has
	// waited MaxDelay, while run slots are free, and re-arms the timer.
	fire := func() {
		now := time.Now()
		for running < b.opt.Parallel {
			started := false
			for i, k := range order {
				g := groups[k]
				b.dropAbandoned(g)
				if len(g.reqs) == 0 {
					delete(groups, k)
					order = append(order[:i], order[i+1:]...)
					started = true // order changed: rescan
					break
				}
				if g.items < int64(b.opt.MaxBatch) && now.Sub(g.reqs[0].enq) < b.opt.MaxDelay {
					continue
				}
				batch := b.take(g, int64(b.opt.MaxBatch))
				if len(g.reqs) == 0 {
					delete(groups, k)
					order = append(order[:i], order[i+1:]...)
				}
				if len(batch) > 0 {
					running++
					b.runs.Add(1)
					go b.runBatch(batch)
				}
				started = true
				break
			}
			if !started {
				break
			}
		}
		timer.Stop()
		if running < b.opt.Parallel && len(order) > 0 {
			oldest := groups[order[0]].reqs[0].enq
			for _, k := range order[1:] {
				if e := groups[k].reqs[0].enq; e.Before(oldest) {
					oldest = e
				}
			}
			timer.Reset(max(time.Until(oldest.Add(b.opt.MaxDelay)), 0))
		}
	}

	for {
		select {
		case r := <-b.reqs:
			g := groups[r.key]
			if g == nil {
				g = &batchGroup{}
				groups[r.key] = g
				order = append(order, r.key)
			}
			g.reqs = append(g.reqs, r)
			g.items += r.n
			b.queued.Add(1)
			fire()
		case <-b.free:
			running--
			fire()
		case <-timer.C:
			fire()
		case <-b.quit:
			for _, g := range groups {
				for _, r := range g.reqs {
					if r.state.CompareAndSwap(reqQueued, reqTaken) {
						r.res <- batchRes{err: ErrClosed}
					}
					b.queued.Add(-1)
				}
			}
			return
		}
	}
}

func (b *Batcher) dropAbandoned(g *batchGroup) {
	kept := g.reqs[:0]
	g.items = 0
	for _, r := range g.reqs {
		if r.state.Load() == reqAbandoned {
			b.queued.Add(-1)
			continue
		}
		kept = append(kept, r)
		g.items += r.n
	}
	clear(g.reqs[len(kept):])
	g.reqs = kept
}

// take removes up to max items of live requests from the front of g (at
// least one request, whatever its size).
func (b *Batcher) take(g *batchGroup, max int64) []*batchReq {
	var (
		batch []*batchReq
		items int64
		i     int
	)
	for i = 0; i < len(g.reqs); i++ {
		r := g.reqs[i]
		if len(batch) > 0 && items+r.n > max {
			break
		}
		b.queued.Add(-1)
		if !r.state.CompareAndSwap(reqQueued, reqTaken) {
			continue // abandoned meanwhile
		}
		batch = append(batch, r)
		items += r.n
	}
	rest := append([]*batchReq(nil), g.reqs[i:]...)
	g.reqs = rest
	g.items = 0
	for _, r := range rest {
		g.items += r.n
	}
	return batch
}

func (b *Batcher) runBatch(batch []*batchReq) {
	defer func() {
		b.free <- struct{}{}
		b.runs.Done()
	}()
	// The batch runs until every member has given up.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	live := atomic.Int64{}
	live.Store(int64(len(batch)))
	for _, r := range batch {
		stop := context.AfterFunc(r.ctx, func() {
			if live.Add(-1) == 0 {
				cancel()
			}
		})
		defer stop()
	}
	var total int64
	for _, r := range batch {
		total += r.n
	}
	b.batches.Add(1)
	b.items.Add(total)

	inputs := batch[0].inputs
	if len(batch) > 1 {
		inputs = concat(batch)
	}
	out, err := b.call(ctx, inputs)
	if err != nil && len(batch) > 1 && ctx.Err() == nil {
		// The graph failed at this batch size: run the members one by one,
		// so a batch problem costs speed, never results.
		b.fallbacks.Add(1)
		for _, r := range batch {
			if r.ctx.Err() != nil {
				r.res <- batchRes{err: r.ctx.Err()}
				continue
			}
			o, e := b.call(r.ctx, r.inputs)
			r.res <- batchRes{out: o, err: e}
		}
		return
	}
	if err != nil {
		for _, r := range batch {
			r.res <- batchRes{err: err}
		}
		return
	}
	if len(batch) == 1 {
		batch[0].res <- batchRes{out: out}
		return
	}
	parts, err := split(out, batch, total)
	for i, r := range batch {
		if err != nil {
			r.res <- batchRes{err: fmt.Errorf("inference: %s: %w", b.opt.Name, err)}
			continue
		}
		r.res <- batchRes{out: parts[i]}
	}
}

func concat(batch []*batchReq) []Tensor {
	first := batch[0].inputs
	out := make([]Tensor, len(first))
	for j := range first {
		var total int64
		size := 0
		for _, r := range batch {
			total += r.n
			size += len(r.inputs[j].Data)
		}
		data := make([]float32, 0, size)
		for _, r := range batch {
			data = append(data, r.inputs[j].Data...)
		}
		shape := append([]int64{total}, first[j].Shape[1:]...)
		out[j] = Tensor{Shape: shape, Data: data}
	}
	return out
}

func split(out []Tensor, batch []*batchReq, total int64) ([][]Tensor, error) {
	parts := make([][]Tensor, len(batch))
	for i := range parts {
		parts[i] = make([]Tensor, len(out))
	}
	for j, t := range out {
		if len(t.Shape) == 0 || t.Shape[0] != total || int64(len(t.Data))%total != 0 {
			return nil, fmt.Errorf("output %d has shape %v, not batch %d: the graph does not batch on dim 0", j, t.Shape, total)
		}
		per := int64(len(t.Data)) / total
		var off int64
		for i, r := range batch {
			data := make([]float32, r.n*per)
			copy(data, t.Data[off*per:(off+r.n)*per])
			shape := append([]int64{r.n}, t.Shape[1:]...)
			parts[i][j] = Tensor{Shape: shape, Data: data}
			off += r.n
		}
	}
	return parts, nil
}
