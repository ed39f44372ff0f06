package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"time"

	"fashiond/config"
	"fashiond/inference"
)

// batchBench is what the step-batching benchmarks (`bench diffusion`,
// `bench fashn`) share: the model to measure (installed or a folder), the
// levels of concurrent jobs, the rows per call with batching on, the JSON
// file, and the runtime.
type batchBench struct {
	name     string // "bench diffusion"
	cfg      config.Config
	fs       *flag.FlagSet
	model    *string
	folder   *string
	levels   *string
	maxBatch *int
	jsonOut  *string
	conc     []int
}

// newBatchBench registers the shared flags on a new flag set; what names
// the model kind and the network ("UNet", "transformer") in the help.
func newBatchBench(name, what, network, folderExample, levels string, w io.Writer) *batchBench {
	b := &batchBench{name: name, fs: flag.NewFlagSet(name, flag.ContinueOnError)}
	b.fs.SetOutput(w)
	b.cfg.Register(b.fs)
	b.model = b.fs.String("model", "", "installed "+what+" model to measure (fashiond models)")
	b.folder = b.fs.String("folder", "", "or an export folder loaded in place"+folderExample)
	b.levels = b.fs.String("jobs", levels, "comma-separated numbers of concurrent jobs")
	b.maxBatch = b.fs.Int("max-batch", 8, "most "+network+" rows per call with batching on")
	b.jsonOut = b.fs.String("json", "", "write the results as JSON to this file")
	return b
}

// batchBenches are the `fashiond bench` subcommands built on batchBench.
var batchBenches = map[string]func(context.Context, []string, io.Writer) error{
	"diffusion": runBenchDiffusion,
	"fashn":     runBenchFashn,
}

// runInterruptible runs a bench on standard output until it ends or is
// interrupted.
func runInterruptible(run func(context.Context, []string, io.Writer) error, args []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return run(ctx, args, os.Stdout)
}

// start reads args (the caller registered its own flags first), checks
// them and opens the runtime they ask for.
func (b *batchBench) start(ctx context.Context, args []string) (*inference.Runtime, error) {
	if err := b.parse(args); err != nil {
		return nil, err
	}
	return b.runtime(ctx)
}

// parse reads args and checks them.
func (b *batchBench) parse(args []string) error {
	if err := b.fs.Parse(args); err != nil {
		return err
	}
	if err := b.cfg.Finish(); err != nil {
		return err
	}
	var err error
	if b.conc, err = parseLevels(b.name, *b.levels); err != nil {
		return err
	}
	if (*b.model == "") == (*b.folder == "") {
		return fmt.Errorf("%s: give exactly one of --model NAME or --folder DIR", b.name)
	}
	return nil
}

// runtime opens the ONNX Runtime the flags ask for; with --device cuda and
// no usable CUDA it fails with one line saying why, before any loading.
func (b *batchBench) runtime(ctx context.Context) (*inference.Runtime, error) {
	rt, err := openRuntime(ctx, b.cfg)
	if err != nil {
		return nil, err
	}
	if _, err := rt.Placement("auto"); err != nil {
		rt.Close()
		return nil, fmt.Errorf("%s: %w", b.name, err)
	}
	return rt, nil
}

// writeJSON writes the results to --json, when given.
func (b *batchBench) writeJSON(results any) error {
	if *b.jsonOut == "" {
		return nil
	}
	out, _ := json.MarshalIndent(results, "", "  ")
	return os.WriteFile(*b.jsonOut, append(out, '\n'), 0o644)
}

// runJobs runs c jobs at once, job i with seed i+1, and returns the wall
// time and each job's own time; the first error wins.
func runJobs(c int, job func(seed uint64) error) (time.Duration, []time.Duration, error) {
	errs := make([]error, c)
	took := make([]time.Duration, c)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range c {
		wg.Go(func() {
			t0 := time.Now()
			errs[i] = job(uint64(i + 1))
			took[i] = time.Since(t0)
		})
	}
	wg.Wait()
	wall := time.Since(start)
	for _, err := range errs {
		if err != nil {
			return wall, took, err
		}
	}
	return wall, took, nil
}

// batchedSpeedups sets each batched row's speedup over the unbatched row
// of the same number of jobs: rate is the row's jobs, batching and
// throughput, set stores the speedup.
func batchedSpeedups[R any](rs []R, rate func(R) (jobs int, batching bool, perSec float64), set func(*R, float64)) {
	for i := range rs {
		jobs, on, r := rate(rs[i])
		for _, off := range rs {
			if oj, ob, or := rate(off); on && !ob && oj == jobs && or > 0 {
				set(&rs[i], r/or)
			}
		}
	}
}

// parseLevels reads --jobs: comma-separated numbers in 1..64.
func parseLevels(name, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 64 {
			return nil, fmt.Errorf("%s: --jobs %q: want numbers in 1..64", name, s)
		}
		out = append(out, n)
	}
	return out, nil
}
