package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"image"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	_ "image/jpeg"
	_ "image/png"

	_ "golang.org/x/image/webp"

	"fashiond/bench"
	"fashiond/config"
	"fashiond/inference"
	"fashiond/perception"
)

const benchUsage = `usage: fashiond bench [flags]

Runs model stages (and registered pipeline stages) over images: warm-up,
N iterations at a concurrency level, batching off and/or on; prints p50/p95
latency, throughput, mean batch fill and RSS; --json and --chart save them.

Stages: %s
(diffusion: ` + "`fashiond bench diffusion --help`" + `: steps/s at 1, 2 and 4 concurrent
jobs with step batching off and on, engine overhead, RSS; fashn: ` + "`fashiond bench fashn --help`" + `:
seconds per FASHN VTON image and images/s at 1 and 4 concurrent jobs)
By default a representative subset runs, in about a minute on a 2-core
CPU: %s.
--full measures every stage but upscale-1k-4k-sr-quality (about 45 minutes
on a CPU); --stages picks any stages, upscale-1k-4k-sr-quality included
(minutes per iteration on a CPU: use --iters 1). Ctrl-C stops the run and prints (and saves, with --json and
--chart) what was measured so far; a second Ctrl-C quits at once.

`

// benchFlags are the bench's own flags.
type benchFlags struct {
	stages, images, testdata string
	full                     bool
	iters, warmup, conc      int
	batching                 string
	poolSize                 int
	jsonOut, chartOut        string
}

// register adds the bench's own flags to fs (the shared config's are
// registered apart).
func (f *benchFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.stages, "stages", "", "comma-separated stages (default: a representative subset; see --full)")
	fs.BoolVar(&f.full, "full", false, "measure every stage but upscale-1k-4k-sr-quality (about 45 minutes on a CPU)")
	fs.StringVar(&f.images, "images", "", "comma-separated image files (default: the photos in TESTDATA/images)")
	fs.StringVar(&f.testdata, "testdata", envOr("FASHIOND_TESTDATA", "../shared/testdata"), "test data directory for the default images (FASHIOND_TESTDATA)")
	fs.IntVar(&f.iters, "iters", 20, "measured iterations per stage and mode")
	fs.IntVar(&f.warmup, "warmup", 2, "unmeasured warm-up iterations per stage and mode")
	fs.IntVar(&f.conc, "concurrency", 4, "requests in flight at once")
	fs.StringVar(&f.batching, "batching", "both", "dynamic batching: on, off or both (both measures batched_speedup)")
	fs.IntVar(&f.poolSize, "pool-size", 0, "sessions per model when not batched (0: the repository default, 2)")
	fs.StringVar(&f.jsonOut, "json", "", "write the results as JSON to this file")
	fs.StringVar(&f.chartOut, "chart", "", "draw the results as a PNG chart to this file")
}

// cmdBench implements `fashiond bench`.
func cmdBench(args []string) error {
	if len(args) > 0 {
		if run, ok := batchBenches[args[0]]; ok {
			return runInterruptible(run, args[1:])
		}
	}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var cfg config.Config
	// ORT, model, device and log flags come from the shared config; the
	// bench's own --concurrency and --batching replace the worker's.
	cfg.Register(fs)
	var f benchFlags
	f.register(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), benchUsage, strings.Join(append(bench.BuiltinStages(), bench.RegisteredStages()...), ", "),
			strings.Join(bench.QuickStages(), ", "))
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("bench: unexpected arguments %v", fs.Args())
	}
	list, err := benchStages(f.stages, f.full)
	if err != nil {
		return err
	}
	cfg.UpscalePolicy = "auto"
	cfg.Concurrency = 1
	if err := cfg.Finish(); err != nil {
		return err
	}
	benchEnv.testdata, benchEnv.presets = f.testdata, filepath.Join(cfg.DataDir, "presets")
	modes, err := benchModes(f.batching)
	if err != nil {
		return err
	}
	return runBench(cfg, f, list, modes)
}

// benchModes reads --batching: the batching modes to measure.
func benchModes(batching string) ([]bool, error) {
	switch batching {
	case "off":
		return []bool{false}, nil
	case "on":
		return []bool{true}, nil
	case "both":
		return []bool{false, true}, nil
	}
	return nil, fmt.Errorf("bench: --batching must be on, off or both, not %q", batching)
}

// runBench loads the images, opens the runtime and measures the stages
// in list under each batching mode; Ctrl-C stops it with what was
// measured, a second Ctrl-C quits at once.
func runBench(cfg config.Config, f benchFlags, list []string, modes []bool) error {
	level := slog.LevelWarn
	if cfg.LogLevel == "debug" {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	imgs, names, err := loadBenchImages(f.images, f.testdata)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // a second Ctrl-C quits at once
	}()
	rt, err := inference.Open(ctx, runtimeConfig(cfg), log)
	if err != nil {
		return err
	}
	defer rt.Close()
	rep, err := bench.Run(ctx, bench.Options{
		Stages: list, Images: imgs, ImageNames: names,
		Iters: f.iters, Warmup: f.warmup, Concurrency: f.conc, Modes: modes,
		Device: cfg.Device, Progress: os.Stderr, Log: log,
		OpenSuite: func(ctx context.Context, batching bool) (*perception.Suite, error) {
			return perception.NewSuite(ctx, rt, cfg.ModelsDir, perception.SuiteOptions{
				Batching: batching, UpscalePolicy: cfg.UpscalePolicy, PoolSize: f.poolSize, Log: log,
			})
		},
	})
	if rep == nil {
		return err
	}
	if werr := writeReport(rep, f.jsonOut, f.chartOut); werr != nil {
		return werr
	}
	if rep.Interrupted {
		return errors.New("interrupted; the table above (and --json/--chart) holds what was measured so far")
	}
	return err
}

// loadBenchImages decodes the --images list, or the photos in
// testdata/images, with their file names.
func loadBenchImages(list, testdata string) ([]image.Image, []string, error) {
	paths, err := benchImages(list, testdata)
	if err != nil {
		return nil, nil, err
	}
	var imgs []image.Image
	var names []string
	for _, p := range paths {
		img, err := decodeFile(p)
		if err != nil {
			return nil, nil, fmt.Errorf("bench: %s: %w", p, err)
		}
		imgs = append(imgs, img)
		names = append(names, filepath.Base(p))
	}
	return imgs, names, nil
}

// benchStages returns the stages to run: --stages, all but the slowest
// (nil: bench.DefaultStages) with --full, else the representative subset.
func benchStages(stages string, full bool) ([]string, error) {
	var list []string
	for _, s := range strings.Split(stages, ",") {
		if s = strings.TrimSpace(s); s != "" {
			list = append(list, s)
		}
	}
	switch {
	case full && len(list) > 0:
		return nil, errors.New("bench: --full and --stages exclude each other")
	case full:
		return nil, nil
	case len(list) == 0:
		return bench.QuickStages(), nil
	}
	return list, nil
}

// writeReport prints rep and saves it as JSON and a chart where asked.
func writeReport(rep *bench.Report, jsonOut, chartOut string) error {
	if err := rep.WriteTable(os.Stdout); err != nil {
		return err
	}
	if jsonOut != "" {
		if err := rep.WriteJSON(jsonOut); err != nil {
			return err
		}
	}
	if chartOut != "" {
		if err := rep.WriteChart(chartOut); err != nil {
			return err
		}
	}
	return nil
}

func envOr(k, d string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return d
}

// benchImages is the --images list, or the photos in testdata/images.
func benchImages(list, testdata string) ([]string, error) {
	if list != "" {
		var out []string
		for _, p := range strings.Split(list, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
		return out, nil
	}
	dir := filepath.Join(testdata, "images")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("bench: no --images and no test photos: %w (set --testdata or FASHIOND_TESTDATA)", err)
	}
	var out []string
	for _, e := range ents {
		switch strings.ToLower(filepath.Ext(e.Name())) {
		case ".jpg", ".jpeg", ".png", ".webp":
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		return nil, fmt.Errorf("bench: no images in %s", dir)
	}
	return out, nil
}

func decodeFile(p string) (image.Image, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	img, _, err := image.Decode(f)
	return img, err
}
