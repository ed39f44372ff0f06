package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"

	"fashiond/bench"
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

// runBenchDiffusion implements `fashiond bench diffusion`: steps/s at
// several concurrency levels with step batching off and on.
func runBenchDiffusion(ctx context.Context, args []string, w io.Writer) error {
	b := newBatchBench("bench diffusion", "generative", "UNet", " (e.g. diffusion/testdata/contract/shape-sd15)", "1,2,4", w)
	size := b.fs.Int("size", 512, "image side in pixels")
	steps := b.fs.Int("steps", 10, "steps per job")
	guidance := b.fs.Float64("guidance", 7.5, "guidance (> 1: two UNet rows per job)")
	anchor := b.fs.String("anchor", "", "diffusers' RESULT lines on the same card (scripts/gpu-check.sh, ../shared/gpu/export_sd.py): print images/s side by side")
	rt, err := b.start(ctx, args)
	if err != nil {
		return err
	}
	defer rt.Close()
	open := func(batching bool) (*diffusion.Model, error) {
		opts := diffusion.Options{Batching: batching, MaxBatch: *b.maxBatch}
		if *b.model != "" {
			return diffusion.Open(ctx, rt, b.cfg.ModelsDir, *b.model, opts)
		}
		return diffusion.Load(ctx, rt, *b.folder, opts)
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
		for _, c := range b.conc {
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
	batchedSpeedups(results, func(r diffusionBenchResult) (int, bool, float64) { return r.Concurrency, r.Batching, r.StepsPerSec },
		func(r *diffusionBenchResult, s float64) { r.BatchedSpeedup = s })
	printDiffusionBench(w, results, *size, *steps, *guidance)
	if *anchor != "" {
		if err := printAnchorComparison(w, *anchor, results); err != nil {
			return err
		}
	}
	return b.writeJSON(results)
}

// benchLevel runs c jobs at once (different seeds) and measures them.
func benchLevel(ctx context.Context, m *diffusion.Model, req diffusion.Request, c int, batching bool) (diffusionBenchResult, error) {
	before := m.Stats()
	res := make([]*diffusion.Result, c)
	wall, _, err := runJobs(c, func(seed uint64) error {
		r := req
		r.Seed = seed
		var err error
		res[seed-1], err = m.Generate(ctx, r)
		return err
	})
	if err != nil {
		return diffusionBenchResult{}, err
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
