package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"fashiond/bench"
	"fashiond/diffusion"
)

// fashnBenchResult is one row of `fashiond bench fashn`.
type fashnBenchResult struct {
	Jobs           int     `json:"jobs"`
	Batching       bool    `json:"batching"`
	Steps          int     `json:"steps"`
	WallSeconds    float64 `json:"wall_seconds"`
	SecondsPerJob  float64 `json:"seconds_per_image_mean"` // mean over jobs of a job's own time
	ImagesPerSec   float64 `json:"images_per_second"`
	Calls          int64   `json:"transformer_calls"`
	Rows           int64   `json:"transformer_rows"`
	BatchedSpeedup float64 `json:"batched_speedup,omitempty"`
	RSSBytes       int64   `json:"rss_bytes"`
}

// runBenchFashn implements `fashiond bench fashn`: a FASHN VTON model's
// time per image and images/s at several concurrency levels, step batching
// off and on, on synthetic inputs (a gradient person, a flat garment, empty
// pose maps; a random-weight export measures the same work).
func runBenchFashn(ctx context.Context, args []string, w io.Writer) error {
	b := newBatchBench("bench fashn", "fashn-vton", "transformer", "", "1,4", w)
	steps := b.fs.Int("steps", 30, "steps per image")
	rt, err := b.start(ctx, args)
	if err != nil {
		return err
	}
	defer rt.Close()
	var results []fashnBenchResult
	for _, batching := range []bool{false, true} {
		opts := diffusion.Options{Batching: batching, MaxBatch: *b.maxBatch}
		var m *diffusion.FashnModel
		if *b.model != "" {
			m, err = diffusion.OpenFashnVTON(ctx, rt, b.cfg.ModelsDir, *b.model, opts)
		} else {
			m, err = diffusion.LoadFashnVTON(ctx, rt, *b.folder, opts)
		}
		if err != nil {
			return err
		}
		rs, err := benchFashnModel(ctx, w, m, *steps, b.conc, batching)
		m.Close()
		if err != nil {
			return err
		}
		results = append(results, rs...)
	}
	batchedSpeedups(results, func(r fashnBenchResult) (int, bool, float64) { return r.Jobs, r.Batching, r.ImagesPerSec },
		func(r *fashnBenchResult, s float64) { r.BatchedSpeedup = s })
	printFashnBench(w, results)
	return b.writeJSON(results)
}

// benchFashnModel warms up (one 1-step image) and measures each level.
func benchFashnModel(ctx context.Context, w io.Writer, m *diffusion.FashnModel, steps int, conc []int, batching bool) ([]fashnBenchResult, error) {
	req := fashnBenchRequest(m.Layout())
	warm := req
	warm.Steps = 1
	if _, err := m.TryOn(ctx, warm); err != nil {
		return nil, err
	}
	req.Steps = steps
	var out []fashnBenchResult
	for _, c := range conc {
		before := m.Stats()
		wall, took, err := runJobs(c, func(seed uint64) error {
			r := req
			r.Seed = seed
			_, err := m.TryOn(ctx, r)
			return err
		})
		if err != nil {
			return nil, err
		}
		res := fashnBenchResult{Jobs: c, Batching: batching, Steps: steps, WallSeconds: wall.Seconds(),
			ImagesPerSec: float64(c) / wall.Seconds(), RSSBytes: bench.RSSBytes()}
		for _, d := range took {
			res.SecondsPerJob += d.Seconds() / float64(c)
		}
		after := m.Stats()
		res.Calls, res.Rows = after.Calls-before.Calls, after.Rows-before.Rows
		fmt.Fprintf(w, "measured %d job(s) with batching %v: %.2f s per image, %.3f images/s\n", c, batching, res.SecondsPerJob, res.ImagesPerSec)
		out = append(out, res)
	}
	return out, nil
}

// fashnBenchRequest is a synthetic input at the model's size.
func fashnBenchRequest(l diffusion.FashnLayout) diffusion.FashnRequest {
	hw := l.Width * l.Height
	person, garment, pose := make([]float32, 3*hw), make([]float32, 3*hw), make([]float32, hw)
	for i := range person {
		person[i] = float32(i%hw)/float32(hw)*2 - 1
		garment[i] = 0.2
	}
	for i := range pose {
		pose[i] = -1
	}
	return diffusion.FashnRequest{Person: person, Garment: garment, PersonPose: pose, GarmentPose: pose, Category: diffusion.CategoryTops}
}

func printFashnBench(w io.Writer, rs []fashnBenchResult) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nJOBS\tBATCHING\tSTEPS\tS/IMAGE\tIMAGES/S\tCALLS\tROWS/CALL\tBATCHED_SPEEDUP\tRSS")
	for _, r := range rs {
		sp := "-"
		if r.BatchedSpeedup > 0 {
			sp = fmt.Sprintf("%.2fx", r.BatchedSpeedup)
		}
		fmt.Fprintf(tw, "%d\t%v\t%d\t%.2f\t%.3f\t%d\t%.2f\t%s\t%s\n", r.Jobs, r.Batching, r.Steps, r.SecondsPerJob, r.ImagesPerSec,
			r.Calls, float64(r.Rows)/float64(max(1, r.Calls)), sp, diffusion.FormatBytes(r.RSSBytes))
	}
	tw.Flush()
}
