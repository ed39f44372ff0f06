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
	"fashiond/models"
)

const benchUsage = `usage: fashiond bench [flags]

Runs model stages (and registered pipeline stages) over images: warm-up,
N iterations at a concurrency level, batching off and/or on; prints p50/p95
latency, throughput, mean batch fill and RSS; --json and --chart save them.

Stages: %s
(diffusion: ` + "`fashiond bench diffusion --help`" + `: steps/s at 1, 2 and 4 concurrent
jobs with step batching off and on, engine overhead, RSS)
By default a representative subset runs, in about a minute on a 2-core
CPU: %s.
--full measures every stage but upscale-1k-4k-sr-quality (about 45 minutes
on a CPU); --stages picks any stages, upscale-1k-4k-sr-quality included
(minutes per iteration on a CPU: use --iters 1). Ctrl-C stops the run and prints (and saves, with --json and
--chart) what was measured so far; a second Ctrl-C quits at once.

`

// cmdBench implements `fashiond bench`.
func cmdBench(args []string) error {
	if len(args) > 0 && args[0] == "diffusion" {
		return cmdBenchDiffusion(args[1:])
	}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var cfg config.Config
	// ORT, model, device and log flags come from the shared config; the
	// bench's own --concurrency and --batching replace the worker's.
	cfg.Register(fs)
	stages := fs.String("stages", "", "comma-separated stages (default: a representative subset; see --full)")
	full := fs.Bool("full", false, "measure every stage but upscale-1k-4k-sr-quality (about 45 minutes on a CPU)")
	imagesFlag := fs.String("images", "", "comma-separated image files (default: the photos in TESTDATA/images)")
	testdata := fs.String("testdata", envOr("FASHIOND_TESTDATA", "../shared/testdata"), "test data directory for the default images (FASHIOND_TESTDATA)")
	iters := fs.Int("iters", 20, "measured iterations per stage and mode")
	warmup := fs.Int("warmup", 2, "unmeasured warm-up iterations per stage and mode")
	conc := fs.Int("concurrency", 4, "requests in flight at once")
	batching := fs.String("batching", "both", "dynamic batching: on, off or both (both measures batched_speedup)")
	poolSize := fs.Int("pool-size", 0, "sessions per model when not batched (0: the repository default, 2)")
	jsonOut := fs.String("json", "", "write the results as JSON to this file")
	chartOut := fs.String("chart", "", "draw the results as a PNG chart to this file")
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
	list, err := benchStages(*stages, *full)
	if err != nil {
		return err
	}
	cfg.UpscalePolicy = "auto"
	cfg.Concurrency = 1
	if err := cfg.Finish(); err != nil {
		return err
	}
	benchEnv.testdata, benchEnv.presets = *testdata, filepath.Join(cfg.DataDir, "presets")
	var modes []bool
	switch *batching {
	case "off":
		modes = []bool{false}
	case "on":
		modes = []bool{true}
	case "both":
		modes = []bool{false, true}
	default:
		return fmt.Errorf("bench: --batching must be on, off or both, not %q", *batching)
	}
	level := slog.LevelWarn
	if cfg.LogLevel == "debug" {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	paths, err := benchImages(*imagesFlag, *testdata)
	if err != nil {
		return err
	}
	var imgs []image.Image
	var names []string
	for _, p := range paths {
		img, err := decodeFile(p)
		if err != nil {
			return fmt.Errorf("bench: %s: %w", p, err)
		}
		imgs = append(imgs, img)
		names = append(names, filepath.Base(p))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // a second Ctrl-C quits at once
	}()
	rt, err := inference.Open(ctx, inference.Config{
		LibPath: cfg.ORTLib, IntraOpThreads: cfg.IntraOpThreads, Device: cfg.Device,
		CUDADeviceID: cfg.CUDADeviceID, CUDAMemLimit: cfg.CUDAMemLimit, CUDNNConvSearch: cfg.CUDNNConvAlgo,
	}, log)
	if err != nil {
		return err
	}
	defer rt.Close()
	rep, err := bench.Run(ctx, bench.Options{
		Stages: list, Images: imgs, ImageNames: names,
		Iters: *iters, Warmup: *warmup, Concurrency: *conc, Modes: modes,
		Device: cfg.Device, Progress: os.Stderr, Log: log,
		OpenSuite: func(ctx context.Context, batching bool) (*models.Suite, error) {
			return models.NewSuite(ctx, rt, cfg.ModelsDir, models.SuiteOptions{
				Batching: batching, UpscalePolicy: cfg.UpscalePolicy, PoolSize: *poolSize, Log: log,
			})
		},
	})
	if rep == nil {
		return err
	}
	if werr := writeReport(rep, *jsonOut, *chartOut); werr != nil {
		return werr
	}
	if rep.Interrupted {
		return errors.New("interrupted; the table above (and --json/--chart) holds what was measured so far")
	}
	return err
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
