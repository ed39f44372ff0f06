package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"fashiond/bench"
	"fashiond/config"
	"fashiond/diffusion"
)

// diffusionBenchResult is one row of `fashiond bench diffusion`.
type diffusionBenchResult struct {
	Concurrency int     `json:"concurrency"`
	Batching    bool    `json:"batching"`
	Jobs        int     `json:"jobs"`
	Calls       int64   `json:"unet_calls"`
	Rows        int64   `json:"unet_rows"`
	WallSeconds float64 `json:"wall_seconds"`
	StepsPerSec float64 `json:"steps_per_second"` // job steps (UNet calls of jobs) per second, all jobs together
	// Overhead is the mean over jobs of the share of a job's denoising
	// time spent outside the ONNX Runtime calls it rode in (scheduler,
	// tensor assembly, copies, waiting for the other jobs of its batch to
	// step), the join window excluded.
	Overhead       float64 `json:"engine_overhead"`
	BatchedSpeedup float64 `json:"batched_speedup,omitempty"`
	RSSBytes       int64   `json:"rss_bytes"`
}

// cmdBenchDiffusion implements `fashiond bench diffusion`: steps/s at
// several concurrency levels with step batching off and on.
func cmdBenchDiffusion(args []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return runBenchDiffusion(ctx, args, os.Stdout)
}

func runBenchDiffusion(ctx context.Context, args []string, w io.Writer) error {
	fs := flag.NewFlagSet("bench diffusion", flag.ContinueOnError)
	fs.SetOutput(w)
	var cfg config.Config
	cfg.Register(fs)
	model := fs.String("model", "", "installed generative model to measure (fashiond models)")
	folder := fs.String("folder", "", "or an export folder loaded in place (e.g. diffusion/testdata/contract/shape-sd15)")
	size := fs.Int("size", 512, "image side in pixels")
	steps := fs.Int("steps", 10, "steps per job")
	levels := fs.String("jobs", "1,2,4", "comma-separated numbers of concurrent jobs")
	maxBatch := fs.Int("max-batch", 8, "most UNet rows per call with batching on")
	guidance := fs.Float64("guidance", 7.5, "guidance (> 1: two UNet rows per job)")
	jsonOut := fs.String("json", "", "write the results as JSON to this file")
	anchor := fs.String("anchor", "", "diffusers' RESULT lines on the same card (scripts/gpu-check.sh, ../shared/gpu/export_sd.py): print images/s side by side")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := cfg.Finish(); err != nil {
		return err
	}
	conc, err := parseLevels(*levels)
	if err != nil {
		return err
	}
	if (*model == "") == (*folder == "") {
		return fmt.Errorf("bench diffusion: give exactly one of --model NAME or --folder DIR")
	}
	rt, err := openRuntime(ctx, cfg)
	if err != nil {
		return err
	}
	defer rt.Close()
	// --device cuda without usable CUDA: one line saying why, before loading.
	if _, err := rt.Placement("auto"); err != nil {
		return fmt.Errorf("bench diffusion: %w", err)
	}
	open := func(batching bool) (*diffusion.Model, error) {
		opts := diffusion.Options{Batching: batching, MaxBatch: *maxBatch}
		if *model != "" {
			return diffusion.Open(ctx, rt, cfg.ModelsDir, *model, opts)
		}
		return diffusion.Load(ctx, rt, *folder, opts)
	}
	req := diffusion.Request{Prompt: "a linen shirt on a hanger", NegativePrompt: "blurry", Guidance: *guidance, Steps: *steps, Width: *size, Height: *size}
	var results []diffusionBenchResult
	for _, batching := range []bool{false, true} {
		m, err := open(batching)
		if err != nil {
			return err
		}
		if _, err := m.Generate(ctx, req); err != nil { // warm-up
			m.Close()
			return err
		}
		for _, c := range conc {
			r, err := benchLevel(ctx, m, req, c, batching)
			if err != nil {
				m.Close()
				return err
			}
			results = append(results, r)
			fmt.Fprintf(w, "measured %d job(s) with batching %v: %.2f steps/s\n", c, batching, r.StepsPerSec)
		}
		m.Close()
	}
	for i := range results {
		for _, off := range results {
			if results[i].Batching && !off.Batching && off.Concurrency == results[i].Concurrency {
				results[i].BatchedSpeedup = results[i].StepsPerSec / off.StepsPerSec
			}
		}
	}
	printDiffusionBench(w, results, *size, *steps, *guidance)
	if *anchor != "" {
		if err := printAnchorComparison(w, *anchor, results); err != nil {
			return err
		}
	}
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(results, "", "  ")
		return os.WriteFile(*jsonOut, append(b, '\n'), 0o644)
	}
	return nil
}

// benchLevel runs c jobs at once (different seeds) and measures them.
func benchLevel(ctx context.Context, m *diffusion.Model, req diffusion.Request, c int, batching bool) (diffusionBenchResult, error) {
	before := m.Stats()
	res := make([]*diffusion.Result, c)
	errs := make([]error, c)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range c {
		r := req
		r.Seed = uint64(i + 1)
		wg.Go(func() { res[i], errs[i] = m.Generate(ctx, r) })
	}
	wg.Wait()
	wall := time.Since(start)
	for _, err := range errs {
		if err != nil {
			return diffusionBenchResult{}, err
		}
	}
	after := m.Stats()
	out := diffusionBenchResult{Concurrency: c, Batching: batching, Jobs: c, Calls: after.Calls - before.Calls,
		Rows: after.Rows - before.Rows, WallSeconds: wall.Seconds(), RSSBytes: bench.RSSBytes()}
	var jobSteps int
	for _, r := range res {
		jobSteps += r.Timings.Calls
		t := r.Timings
		if d := t.Denoise - t.JoinWait; d > 0 {
			out.Overhead += max(0, 1-t.UNet.Seconds()/d.Seconds()) / float64(c)
		}
	}
	out.StepsPerSec = float64(jobSteps) / wall.Seconds()
	return out, nil
}

func parseLevels(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 64 {
			return nil, fmt.Errorf("bench diffusion: --jobs %q: want numbers in 1..64", s)
		}
		out = append(out, n)
	}
	return out, nil
}

func printDiffusionBench(w io.Writer, rs []diffusionBenchResult, size, steps int, guidance float64) {
	fmt.Fprintf(w, "\ndiffusion: %dx%d, %d steps per job, guidance %g\n", size, size, steps, guidance)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "JOBS\tBATCHING\tSTEPS/S\tUNET CALLS\tROWS/CALL\tOVERHEAD\tBATCHED_SPEEDUP\tRSS")
	for _, r := range rs {
		sp := "-"
		if r.BatchedSpeedup > 0 {
			sp = fmt.Sprintf("%.2fx", r.BatchedSpeedup)
		}
		fmt.Fprintf(tw, "%d\t%v\t%.2f\t%d\t%.2f\t%.1f%%\t%s\t%s\n", r.Concurrency, r.Batching, r.StepsPerSec, r.Calls,
			float64(r.Rows)/float64(max(1, r.Calls)), 100*r.Overhead, sp, diffusion.FormatBytes(r.RSSBytes))
	}
	tw.Flush()
}

// anchorRE reads export_sd.py's "RESULT diffusers images=N wall=Xs images/s=Y" lines.
var anchorRE = regexp.MustCompile(`^RESULT diffusers images=(\d+) wall=([0-9.]+)s images/s=([0-9.]+)`)

// printAnchorComparison prints fashiond's images/s (batching on) beside
// diffusers' at the same number of concurrent images.
func printAnchorComparison(w io.Writer, path string, rs []diffusionBenchResult) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("bench diffusion: --anchor: %w", err)
	}
	anchor := map[int]float64{}
	for _, l := range strings.Split(string(b), "\n") {
		if m := anchorRE.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
			n, _ := strconv.Atoi(m[1])
			anchor[n], _ = strconv.ParseFloat(m[3], 64)
		}
	}
	if len(anchor) == 0 {
		return fmt.Errorf("bench diffusion: --anchor %s has no \"RESULT diffusers images=N wall=Xs images/s=Y\" line", path)
	}
	fmt.Fprintln(w, "\nside by side (images/s, fashiond with batching on):")
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "JOBS\tDIFFUSERS\tFASHIOND\tRATIO")
	for _, r := range rs {
		a, ok := anchor[r.Concurrency]
		if !r.Batching || !ok || r.WallSeconds <= 0 {
			continue
		}
		f := float64(r.Jobs) / r.WallSeconds
		fmt.Fprintf(tw, "%d\t%.3f\t%.3f\t%.2f\n", r.Concurrency, a, f, f/a)
	}
	return tw.Flush()
}
