package bench

import (
	"context"
	"errors"
	"image/color"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	cases := []struct {
		p    float64
		want time.Duration
	}{{0.5, 50 * time.Millisecond}, {0.95, 95 * time.Millisecond}, {1, 100 * time.Millisecond}, {0, time.Millisecond}}
	for _, c := range cases {
		if got := percentile(d, c.p); got != c.want {
			t.Errorf("p%.0f = %v, want %v", c.p*100, got, c.want)
		}
	}
	if percentile(nil, 0.5) != 0 {
		t.Error("empty percentile")
	}
	if got := percentile([]time.Duration{7}, 0.95); got != 7 {
		t.Errorf("single %v", got)
	}
}

func TestMeasureCountsAndConcurrency(t *testing.T) {
	var calls, inflight, peak atomic.Int64
	fn := func(ctx context.Context, i int) error {
		calls.Add(1)
		n := inflight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(2 * time.Millisecond)
		inflight.Add(-1)
		return nil
	}
	var progressed atomic.Int64
	r, err := measure(context.Background(), fn, 3, 20, 4, func(int) { progressed.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 23 || r.Iters != 20 || progressed.Load() != 20 {
		t.Errorf("calls %d, iters %d, progress %d", calls.Load(), r.Iters, progressed.Load())
	}
	if peak.Load() < 2 || peak.Load() > 4 {
		t.Errorf("peak concurrency %d, want 2..4", peak.Load())
	}
	if r.P50MS < 2 || r.P95MS < r.P50MS || r.Throughput <= 0 {
		t.Errorf("result %+v", r)
	}
}

func TestMeasureErrors(t *testing.T) {
	boom := errors.New("boom")
	_, err := measure(context.Background(), func(context.Context, int) error { return boom }, 0, 3, 1, nil)
	if err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("err %v", err)
	}
	_, err = measure(context.Background(), func(context.Context, int) error { return boom }, 1, 3, 1, nil)
	if err == nil || !strings.Contains(err.Error(), "warm-up") {
		t.Errorf("warm-up err %v", err)
	}
	odd := func(_ context.Context, i int) error {
		if i%2 == 1 {
			return boom
		}
		return nil
	}
	r, err := measure(context.Background(), odd, 0, 10, 2, nil)
	if err != nil || r.Errors != 5 || r.FirstError != "boom" {
		t.Errorf("partial failures: %+v, %v", r, err)
	}
	if _, err := measure(context.Background(), odd, 0, 0, 1, nil); err == nil {
		t.Error("0 iterations accepted")
	}
}

func TestRegisterStage(t *testing.T) {
	RegisterStage("test-pipeline", func(ctx context.Context) error { return nil })
	if _, ok := registered("test-pipeline"); !ok {
		t.Fatal("not registered")
	}
	found := false
	for _, n := range RegisteredStages() {
		found = found || n == "test-pipeline"
	}
	if !found {
		t.Error("RegisteredStages misses it")
	}
	for _, name := range []string{"test-pipeline", "pose"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("registering %q again did not panic", name)
				}
			}()
			RegisterStage(name, func(ctx context.Context) error { return nil })
		}()
	}
	if _, err := Run(context.Background(), Options{Stages: []string{"nosuch"}, Images: nil}); err == nil {
		t.Error("Run without OpenSuite/images succeeded")
	}
}

func TestChartDrawsBars(t *testing.T) {
	sp := 1.5
	rep := &Report{Device: "cpu", CPUs: 2, Concurrency: 4, Iters: 10, RSSAllModelsMB: 900, Stages: []StageReport{
		{Stage: "pose", BatchedSpeedup: &sp, Runs: []Result{
			{Stage: "pose", P50MS: 20, P95MS: 30, Throughput: 40},
			{Stage: "pose", Batching: true, P50MS: 15, P95MS: 25, Throughput: 60},
		}},
		{Stage: "upscale-1k-4k-lanczos", Runs: []Result{{P50MS: 900, P95MS: 1100, Throughput: 1.1}}},
	}}
	img := rep.Chart()
	count := func(c color.RGBA) int {
		n := 0
		for i := 0; i < len(img.Pix); i += 4 {
			if img.Pix[i] == c.R && img.Pix[i+1] == c.G && img.Pix[i+2] == c.B {
				n++
			}
		}
		return n
	}
	on, off, text := count(colOn), count(colOff), count(colText)
	if on < 1000 || off < 1000 || text < 500 {
		t.Errorf("chart looks empty: %d on, %d off, %d text pixels", on, off, text)
	}
	var sb strings.Builder
	if err := rep.WriteTable(&sb); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sb.String(), "1.50x") || !strings.Contains(sb.String(), "upscale-1k-4k-lanczos") {
		t.Errorf("table:\n%s", sb.String())
	}
}

// TestMeasureInterrupted: an interruption (Ctrl-C) mid-stage keeps what
// finished, marked partial, and reports the context's error.
func TestMeasureInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var calls atomic.Int64
	fn := func(ctx context.Context, i int) error {
		if calls.Add(1) == 8 { // 2 warm-up + 6 measured
			cancel()
			return ctx.Err()
		}
		time.Sleep(time.Millisecond)
		return nil
	}
	r, err := measure(ctx, fn, 2, 100, 1, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if !r.Partial || r.Iters != 5 || r.Errors != 0 || r.P50MS < 1 || r.Throughput <= 0 {
		t.Fatalf("partial result %+v, want 5 clean iterations with latencies", r)
	}
}

// TestAssemblePartial: stages never measured are left out; a partial run
// gets no batched_speedup; the table says the run was interrupted.
func TestAssemblePartial(t *testing.T) {
	results := map[string][]Result{
		"pose":   {{Stage: "pose", Throughput: 10, MeanBatchFill: 1}, {Stage: "pose", Batching: true, Throughput: 20, MeanBatchFill: 2}},
		"selfie": {{Stage: "selfie", Throughput: 10, MeanBatchFill: 1}, {Stage: "selfie", Batching: true, Throughput: 5, MeanBatchFill: 2, Partial: true, Iters: 3}},
	}
	got := assemble([]string{"pose", "selfie", "parse"}, results)
	if len(got) != 2 || got[0].Stage != "pose" || got[1].Stage != "selfie" {
		t.Fatalf("stages %+v", got)
	}
	if got[0].BatchedSpeedup == nil || *got[0].BatchedSpeedup != 2 || got[1].BatchedSpeedup != nil {
		t.Fatalf("speedups %v %v, want 2 and none", got[0].BatchedSpeedup, got[1].BatchedSpeedup)
	}
	var sb strings.Builder
	rep := &Report{Stages: got, Interrupted: true}
	if err := rep.WriteTable(&sb); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(sb.String(), "INTERRUPTED") || !strings.Contains(sb.String(), "on (partial, 3 iters)") {
		t.Fatalf("table:\n%s", sb.String())
	}
}

func TestQuickStagesAreBuiltin(t *testing.T) {
	full := DefaultStages()
	for _, s := range QuickStages() {
		if !isBuiltin(s) || !slices.Contains(full, s) {
			t.Errorf("quick stage %q is not a default built-in stage", s)
		}
	}
	if slices.Contains(QuickStages(), "upscale-1k-4k-sr-fast") {
		t.Error("the quick set holds the whole-image SR upscale")
	}
}
