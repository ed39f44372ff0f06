package inference

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// fakeRunner doubles its input and records the batch size of every call.
// When gate is set the first call blocks until the gate closes (or its
// context ends), so tests can queue requests behind a running batch.
type fakeRunner struct {
	mu      sync.Mutex
	sizes   []int64
	shapes  []string
	gate    chan struct{}
	started chan struct{} // closed when the first call starts
	once    sync.Once
	ctxErr  error // the first call's context error after the gate
	badDim  bool  // return an output with the wrong batch dim
	failBig bool  // fail calls with batch > 1
}

func (f *fakeRunner) Run(ctx context.Context, in []Tensor) ([]Tensor, error) {
	f.mu.Lock()
	f.sizes = append(f.sizes, in[0].Shape[0])
	f.shapes = append(f.shapes, fmt.Sprint(in[0].Shape[1:]))
	first := len(f.sizes) == 1
	f.mu.Unlock()
	if f.failBig && in[0].Shape[0] > 1 {
		return nil, errors.New("Reshape: cannot reshape batch > 1")
	}
	if first && f.gate != nil {
		f.once.Do(func() { close(f.started) })
		select {
		case <-f.gate:
		case <-ctx.Done():
			f.mu.Lock()
			f.ctxErr = ctx.Err()
			f.mu.Unlock()
			return nil, ctx.Err()
		}
	}
	out := make([]Tensor, len(in))
	for i, t := range in {
		d := make([]float32, len(t.Data))
		for j, v := range t.Data {
			d[j] = 2 * v
		}
		shape := slices.Clone(t.Shape)
		if f.badDim {
			shape = append([]int64{1}, int64(len(d)))
		}
		out[i] = Tensor{Shape: shape, Data: d}
	}
	return out, nil
}

func (f *fakeRunner) batchSizes() []int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.sizes)
}

func oneTensor(v float32, dims ...int64) []Tensor {
	t := Tensor{Shape: append([]int64{1}, dims...)}
	t.Data = make([]float32, t.Elements())
	for i := range t.Data {
		t.Data[i] = v + float32(i)
	}
	return []Tensor{t}
}

// waitQueued polls until n requests wait in b (the dispatcher has them).
func waitQueued(t *testing.T, b *Batcher, n int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for b.Stats().Queued != n {
		if time.Now().After(deadline) {
			t.Fatalf("queued %d, want %d", b.Stats().Queued, n)
		}
		time.Sleep(time.Millisecond)
	}
}

type result struct {
	id  int
	out []Tensor
	err error
}

func TestBatcherFillsAndScatters(t *testing.T) {
	f := &fakeRunner{gate: make(chan struct{}), started: make(chan struct{})}
	b := NewBatcher(f, BatchOptions{MaxBatch: 4, MaxDelay: time.Millisecond, Name: "fake"})
	defer b.Close()
	ctx := context.Background()
	results := make(chan result, 7)
	run := func(id int) {
		out, err := b.Run(ctx, oneTensor(float32(100*id), 2, 3))
		results <- result{id, out, err}
	}
	go run(0)
	<-f.started // request 0 runs alone and holds the only run slot
	for id := 1; id < 7; id++ {
		go run(id)
	}
	waitQueued(t, b, 6)
	close(f.gate)
	for range 7 {
		r := <-results
		if r.err != nil {
			t.Fatalf("request %d: %v", r.id, r.err)
		}
		want := oneTensor(float32(100*r.id), 2, 3)[0]
		if !slices.Equal(r.out[0].Shape, want.Shape) {
			t.Fatalf("request %d: shape %v, want %v", r.id, r.out[0].Shape, want.Shape)
		}
		for i, v := range r.out[0].Data {
			if v != 2*want.Data[i] {
				t.Fatalf("request %d got another request's rows: %v", r.id, r.out[0].Data)
			}
		}
	}
	if got := f.batchSizes(); !slices.Equal(got, []int64{1, 4, 2}) {
		t.Fatalf("batch sizes %v, want [1 4 2]", got)
	}
	st := b.Stats()
	if st.Calls != 7 || st.Batches != 3 || st.Items != 7 || st.Queued != 0 {
		t.Fatalf("stats %+v", st)
	}
	if want := 7.0 / 3; st.MeanFill < want-1e-9 || st.MeanFill > want+1e-9 {
		t.Fatalf("mean fill %g, want %g", st.MeanFill, want)
	}
}

func TestBatcherSeparatesShapes(t *testing.T) {
	f := &fakeRunner{gate: make(chan struct{}), started: make(chan struct{})}
	b := NewBatcher(f, BatchOptions{MaxBatch: 8, MaxDelay: time.Millisecond})
	defer b.Close()
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 5)
	start := func(dims ...int64) {
		wg.Go(func() {
			out, err := b.Run(ctx, oneTensor(1, dims...))
			if err == nil && !slices.Equal(out[0].Shape[1:], dims) {
				err = fmt.Errorf("shape %v for dims %v", out[0].Shape, dims)
			}
			errs <- err
		})
	}
	start(4, 4)
	<-f.started
	start(4, 4)
	start(8, 8)
	start(4, 4)
	start(8, 8)
	waitQueued(t, b, 4)
	close(f.gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got := f.batchSizes()
	slices.Sort(got)
	if !slices.Equal(got, []int64{1, 2, 2}) {
		t.Fatalf("batch sizes %v, want one single and two pairs", got)
	}
}

func TestBatcherCancelWhileQueued(t *testing.T) {
	f := &fakeRunner{gate: make(chan struct{}), started: make(chan struct{})}
	b := NewBatcher(f, BatchOptions{MaxBatch: 4, MaxDelay: time.Millisecond})
	defer b.Close()
	bg := context.Background()
	results := make(chan result, 4)
	go func() { out, err := b.Run(bg, oneTensor(0, 3)); results <- result{0, out, err} }()
	<-f.started
	ctx, cancel := context.WithCancel(bg)
	cancelled := make(chan error, 1)
	go func() { _, err := b.Run(ctx, oneTensor(10, 3)); cancelled <- err }()
	for id := 2; id < 4; id++ {
		go func() { out, err := b.Run(bg, oneTensor(float32(10*id), 3)); results <- result{id, out, err} }()
	}
	waitQueued(t, b, 3)
	cancel()
	select {
	case err := <-cancelled:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled request returned %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("cancelled request still waiting behind the running batch")
	}
	close(f.gate)
	for range 3 {
		r := <-results
		if r.err != nil {
			t.Fatalf("request %d poisoned: %v", r.id, r.err)
		}
		if r.out[0].Data[0] != float32(20*r.id) {
			t.Fatalf("request %d got %v", r.id, r.out[0].Data)
		}
	}
	if got := f.batchSizes(); !slices.Equal(got, []int64{1, 2}) {
		t.Fatalf("batch sizes %v, want [1 2] (the cancelled request dropped)", got)
	}
	if st := b.Stats(); st.Cancelled != 1 || st.Queued != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestBatcherCancelWhileRunning(t *testing.T) {
	// Every member of the running batch gives up: the runner's context ends.
	f := &fakeRunner{gate: make(chan struct{}), started: make(chan struct{})}
	b := NewBatcher(f, BatchOptions{MaxBatch: 4, MaxDelay: time.Millisecond})
	defer b.Close()
	defer close(f.gate)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := b.Run(ctx, oneTensor(0, 3)); done <- err }()
	<-f.started
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run returned %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		f.mu.Lock()
		err := f.ctxErr
		f.mu.Unlock()
		if err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("runner context not cancelled after its only member left")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestBatcherErrors(t *testing.T) {
	ctx := context.Background()
	b := NewBatcher(&fakeRunner{}, BatchOptions{MaxBatch: 4})
	for _, tc := range []struct {
		name string
		in   []Tensor
	}{
		{"no inputs", nil},
		{"scalar", []Tensor{{Shape: nil, Data: []float32{1}}}},
		{"short data", []Tensor{{Shape: []int64{1, 3}, Data: []float32{1}}}},
		{"mixed batch", []Tensor{{Shape: []int64{1, 1}, Data: []float32{1}}, {Shape: []int64{2, 1}, Data: []float32{1, 2}}}},
	} {
		if _, err := b.Run(ctx, tc.in); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	b.Close()
	if _, err := b.Run(ctx, oneTensor(1, 2)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Run after Close: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	var nilB *Batcher
	if err := nilB.Close(); err != nil {
		t.Fatal(err)
	}
	if nilB.Stats() != (BatchStats{}) {
		t.Fatal("nil stats")
	}

	// A graph that does not batch on dim 0 is reported, not mis-split.
	f := &fakeRunner{badDim: true, gate: make(chan struct{}), started: make(chan struct{})}
	b2 := NewBatcher(f, BatchOptions{MaxBatch: 4, MaxDelay: time.Millisecond})
	defer b2.Close()
	errs := make(chan error, 3)
	go func() { _, err := b2.Run(ctx, oneTensor(1, 2)); errs <- err }()
	<-f.started
	for range 2 {
		go func() { _, err := b2.Run(ctx, oneTensor(1, 2)); errs <- err }()
	}
	waitQueued(t, b2, 2)
	close(f.gate)
	// The lone first request succeeds and the two batched ones fail, in
	// whatever order the goroutines report.
	var ok, failed int
	for range 3 {
		if err := <-errs; err == nil {
			ok++
		} else {
			failed++
		}
	}
	if ok != 1 || failed != 2 {
		t.Fatalf("%d requests succeeded and %d failed, want the single one to succeed and the mis-shaped batch of 2 to fail", ok, failed)
	}
}

func TestBatcherFallsBackToSingleRuns(t *testing.T) {
	f := &fakeRunner{failBig: true, gate: make(chan struct{}), started: make(chan struct{})}
	b := NewBatcher(f, BatchOptions{MaxBatch: 4, MaxDelay: time.Millisecond})
	defer b.Close()
	ctx := context.Background()
	results := make(chan result, 3)
	for id := range 3 {
		go func() {
			out, err := b.Run(ctx, oneTensor(float32(10*id), 2))
			results <- result{id, out, err}
		}()
		if id == 0 {
			<-f.started
		}
	}
	waitQueued(t, b, 2)
	close(f.gate)
	for range 3 {
		r := <-results
		if r.err != nil || r.out[0].Data[0] != float32(20*r.id) {
			t.Fatalf("request %d: %v %v", r.id, r.out, r.err)
		}
	}
	if got := f.batchSizes(); !slices.Equal(got, []int64{1, 2, 1, 1}) {
		t.Fatalf("calls %v, want [1 2 1 1] (failed pair rerun singly)", got)
	}
	if st := b.Stats(); st.Fallbacks != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestBatcherCloseFailsQueued(t *testing.T) {
	f := &fakeRunner{gate: make(chan struct{}), started: make(chan struct{})}
	b := NewBatcher(f, BatchOptions{MaxBatch: 4, MaxDelay: time.Hour})
	ctx := context.Background()
	first := make(chan error, 1)
	go func() { _, err := b.Run(ctx, oneTensor(0, 1)); first <- err }()
	// MaxDelay is an hour: the lone request waits in the queue.
	waitQueued(t, b, 1)
	closed := make(chan struct{})
	go func() { b.Close(); close(closed) }()
	if err := <-first; !errors.Is(err, ErrClosed) {
		t.Fatalf("queued request got %v on Close", err)
	}
	<-closed
}

// realSpec is the selfie segmentation graph, original and rewritten.
func realSpecs(t *testing.T) (orig, batch SessionSpec) {
	orig = SessionSpec{Name: "selfie_segmentation", Path: modelPath(t, "selfie_segmentation.onnx"), Inputs: []string{"input_1:0"}, Outputs: []string{"activation_10"}}
	batch = orig
	batch.Path = modelPath(t, "selfie_segmentation.batch.onnx")
	return orig, batch
}

func TestBatcherRealModelMatchesSingleRuns(t *testing.T) {
	rt := testRuntime(t)
	ctx := context.Background()
	origSpec, batchSpec := realSpecs(t)
	orig, err := rt.NewSession(ctx, origSpec)
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	bs, err := rt.NewSession(ctx, batchSpec)
	if err != nil {
		t.Fatal(err)
	}
	defer bs.Close()
	b := NewBatcher(bs, BatchOptions{MaxBatch: 4, MaxDelay: 5 * time.Millisecond, Name: "selfie"})
	defer b.Close()
	const n = 6
	imgs := randomImages(n, []int64{1, 256, 256, 3}, 11)
	outs := make([][]Tensor, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { outs[i], errs[i] = b.Run(ctx, imgs[i:i+1]) })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		want, err := orig.Run(ctx, imgs[i:i+1])
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(outs[i][0].Shape, []int64{1, 256, 256, 1}) {
			t.Fatalf("image %d: shape %v", i, outs[i][0].Shape)
		}
		if d := maxAbsDiff(want[0].Data, outs[i][0].Data); d > 1e-4 {
			t.Fatalf("image %d: batched result differs from a single run by %g", i, d)
		}
	}
	st := b.Stats()
	if st.Calls != n || st.Items != n || st.Batches < 2 || st.Batches > n {
		t.Fatalf("stats %+v", st)
	}
	t.Logf("stats %+v", st)
}

func TestPool(t *testing.T) {
	rt := testRuntime(t)
	ctx := context.Background()
	spec, _ := realSpecs(t)
	p, err := NewPool(ctx, rt, spec, 2)
	if err != nil {
		t.Fatal(err)
	}
	if p.Size() != 2 || p.Device() != "cpu" {
		t.Fatalf("size %d device %q", p.Size(), p.Device())
	}
	single, err := rt.NewSession(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer single.Close()
	imgs := randomImages(4, []int64{1, 256, 256, 3}, 5)
	outs := make([][]Tensor, len(imgs))
	errs := make([]error, len(imgs))
	var wg sync.WaitGroup
	for i := range imgs {
		wg.Go(func() { outs[i], errs[i] = p.Run(ctx, imgs[i:i+1]) })
	}
	wg.Wait()
	for i := range imgs {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		want, err := single.Run(ctx, imgs[i:i+1])
		if err != nil {
			t.Fatal(err)
		}
		if d := maxAbsDiff(want[0].Data, outs[i][0].Data); d != 0 {
			t.Fatalf("image %d: pool result differs by %g", i, d)
		}
	}
	// A cancelled caller waiting for a session returns at once.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := p.Run(cctx, imgs[:1]); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Run: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	if _, err := p.Run(ctx, imgs[:1]); !errors.Is(err, ErrClosed) {
		t.Fatalf("Run after Close: %v", err)
	}
	var nilP *Pool
	if err := nilP.Close(); err != nil || nilP.Size() != 0 {
		t.Fatal("nil pool")
	}
}
