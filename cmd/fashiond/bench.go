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
(default: all but upscale-1k-4k-sr-quality, which takes minutes per
iteration on a CPU: ask for it with --stages and --iters 1)

`

// cmdBench implements `fashiond bench`.
func cmdBench(args []string) error {
	if len(args) > 0 && args[0] == "diffusion" {
		return cmdBenchDiffusion(args[1:])
	}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var cfg config.Config
	// ORT, model and device flags come from the shared config; the bench's
	// own --concurrency and --batching replace the worker's.
	all := flag.NewFlagSet("config", flag.ContinueOnError)
	cfg.Register(all)
	all.VisitAll(func(f *flag.Flag) {
		switch f.Name {
		case "ort-lib", "models-dir", "data-dir", "device", "intra-op-threads", "cuda-device-id", "cuda-mem-limit", "cudnn-conv-algo", "log-level", "log-format":
			fs.Var(f.Value, f.Name, f.Usage)
		}
	})
	stages := fs.String("stages", "", "comma-separated stages (default: all but upscale-1k-4k-sr-quality)")
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
		fmt.Fprintf(fs.Output(), benchUsage, strings.Join(append(bench.BuiltinStages(), bench.RegisteredStages()...), ", "))
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
	var list []string
	if *stages != "" {
		for _, s := range strings.Split(*stages, ",") {
			if s = strings.TrimSpace(s); s != "" {
				list = append(list, s)
			}
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
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
	if err != nil {
		return err
	}
	if err := rep.WriteTable(os.Stdout); err != nil {
		return err
	}
	if *jsonOut != "" {
		if err := rep.WriteJSON(*jsonOut); err != nil {
			return err
		}
	}
	if *chartOut != "" {
		if err := rep.WriteChart(*chartOut); err != nil {
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
