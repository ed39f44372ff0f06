// Package bench measures model stages (and, through RegisterStage, whole
// pipelines) for ML engineers: warm-up, N iterations at a concurrency level,
// batching on and/or off, latency percentiles, throughput, mean batch fill
// and resident memory. `fashiond bench` is its command line.
package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// stageFunc runs one iteration of a stage. i is the iteration number
// (stages cycle their inputs with it).
type stageFunc func(ctx context.Context, i int) error

var (
	regMu    sync.Mutex
	registry = map[string]func(ctx context.Context) error{}
)

// RegisterStage adds a named stage (for example a whole pipeline run) that
// `fashiond bench --stages NAME` can run. fn runs one iteration; it must be
// safe to call concurrently. Registering a built-in name or the same name
// twice panics (a programming error, caught at start-up).
func RegisterStage(name string, fn func(ctx context.Context) error) {
	regMu.Lock()
	defer regMu.Unlock()
	if name == "" || fn == nil {
		panic("bench: RegisterStage needs a name and a function")
	}
	if _, ok := registry[name]; ok || isBuiltin(name) {
		panic("bench: stage " + name + " registered twice")
	}
	registry[name] = fn
}

func registered(name string) (func(ctx context.Context) error, bool) {
	regMu.Lock()
	defer regMu.Unlock()
	fn, ok := registry[name]
	return fn, ok
}

// RegisteredStages lists the stages added with RegisterStage, sorted.
func RegisteredStages() []string {
	regMu.Lock()
	defer regMu.Unlock()
	var out []string
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Result is the measurement of one stage in one batching mode.
type Result struct {
	Stage       string  `json:"stage"`
	Batching    bool    `json:"batching"`
	Iters       int     `json:"iters"`
	Concurrency int     `json:"concurrency"`
	Errors      int     `json:"errors"`
	FirstError  string  `json:"first_error,omitempty"`
	P50MS       float64 `json:"p50_ms"`
	P95MS       float64 `json:"p95_ms"`
	MeanMS      float64 `json:"mean_ms"`
	Throughput  float64 `json:"throughput_per_s"`
	// MeanBatchFill is the mean number of requests per model call over the
	// stage (1 without batching; 0 when the stage ran no model).
	MeanBatchFill float64 `json:"mean_batch_fill"`
	RSSMB         float64 `json:"rss_mb"`
	WallS         float64 `json:"wall_s"`
	// Partial: the run was interrupted (Ctrl-C) during this measurement;
	// the numbers cover the Iters iterations that finished.
	Partial bool `json:"partial,omitempty"`
}

// measure runs warmup+iters calls of fn with the given concurrency and
// returns latency and throughput (warm-up excluded). progress is called
// after every measured iteration.
func measure(ctx context.Context, fn stageFunc, warmup, iters, conc int, progress func(done int)) (Result, error) {
	if iters < 1 {
		return Result{}, errors.New("bench: iterations must be at least 1")
	}
	conc = max(1, conc)
	// Warm-up: each worker once at least when warmup > 0, concurrently, so
	// every pool session and the batcher see traffic.
	if warmup > 0 {
		var wg sync.WaitGroup
		var werr atomic.Value
		var next atomic.Int64
		for w := 0; w < min(conc, warmup); w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1)) - 1
					if i >= warmup || ctx.Err() != nil {
						return
					}
					if err := fn(ctx, i); err != nil {
						werr.CompareAndSwap(nil, err)
						return
					}
				}
			}()
		}
		wg.Wait()
		if err, _ := werr.Load().(error); err != nil {
			return Result{}, fmt.Errorf("warm-up: %w", err)
		}
	}
	lat := make([]time.Duration, iters)
	errs := make([]error, iters)
	var next, done atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < min(conc, iters); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= iters {
					return
				}
				if err := ctx.Err(); err != nil {
					errs[i] = err
					continue
				}
				t0 := time.Now()
				errs[i] = fn(ctx, warmup+i)
				lat[i] = time.Since(t0)
				if progress != nil {
					progress(int(done.Add(1)))
				}
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	r := Result{Iters: iters, Concurrency: conc, WallS: wall.Seconds()}
	cut := ctx.Err() != nil
	var ok []time.Duration
	for i, err := range errs {
		switch {
		case err == nil:
			ok = append(ok, lat[i])
		case cut && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
			// Not run, or cut short by the interruption: not a measurement.
		default:
			r.Errors++
			if r.FirstError == "" {
				r.FirstError = err.Error()
			}
		}
	}
	if cut {
		// What was measured before the interruption is kept, marked partial.
		r.Iters, r.Partial = len(ok)+r.Errors, true
		summarize(&r, ok, wall)
		return r, ctx.Err()
	}
	if len(ok) == 0 {
		return r, fmt.Errorf("every iteration failed: %s", r.FirstError)
	}
	summarize(&r, ok, wall)
	return r, nil
}

// summarize fills r's latency percentiles, mean and throughput from the
// successful iterations' latencies (nothing when there are none).
func summarize(r *Result, ok []time.Duration, wall time.Duration) {
	if len(ok) == 0 {
		return
	}
	slices.Sort(ok)
	r.P50MS = ms(percentile(ok, 0.50))
	r.P95MS = ms(percentile(ok, 0.95))
	var sum time.Duration
	for _, d := range ok {
		sum += d
	}
	r.MeanMS = ms(sum / time.Duration(len(ok)))
	r.Throughput = float64(len(ok)) / wall.Seconds()
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// percentile of sorted durations, nearest rank.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	k := int(float64(len(sorted))*p+0.999999) - 1
	return sorted[min(max(k, 0), len(sorted)-1)]
}

// RSSBytes is this process's resident set size (Linux /proc), 0 elsewhere.
func RSSBytes() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			fields := strings.Fields(v)
			if len(fields) > 0 {
				kb, _ := strconv.ParseInt(fields[0], 10, 64)
				return kb * 1024
			}
		}
	}
	return 0
}

// progressBar draws "stage [#####-----] 12/20" on w, overwriting the line.
type progressBar struct {
	w     io.Writer
	label string
	total int
	mu    sync.Mutex
	start time.Time
}

func newProgress(w io.Writer, label string, total int) *progressBar {
	p := &progressBar{w: w, label: label, total: total, start: time.Now()}
	p.draw(0)
	return p
}

func (p *progressBar) draw(done int) {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	const width = 30
	n := width * done / max(1, p.total)
	fmt.Fprintf(p.w, "\r%-34s [%s%s] %d/%d %5.1fs", p.label, strings.Repeat("#", n), strings.Repeat("-", width-n), done, p.total, time.Since(p.start).Seconds())
}

func (p *progressBar) finish() {
	if p == nil || p.w == nil {
		return
	}
	fmt.Fprintln(p.w)
}
