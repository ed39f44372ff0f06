// Command gpucheck measures fashiond's inference on one node for
// scripts/gpu-check.sh. It imports only OpenCV-free packages (inference,
// diffusion, models, bench), so it runs on a GPU node without fashiond's
// OpenCV libraries; `go list -deps ./cmd/gpucheck` has no gocv.
//
//	gpucheck probe                     every run kind on tiny graphs, each in its own process
//	gpucheck diffusion -folder DIR     images/s of the diffusion engine at -jobs levels
//	gpucheck sr -models DIR            one super-resolution call on a -size² image
//	gpucheck models -models DIR        one call of every perception model installed in DIR
//	gpucheck compare A B               agreement of two -save outputs (CPU vs CUDA)
//	gpucheck stages -models DIR -images a.jpg,b.png   perception stages (bench)
//
// Every measurement is printed as one "RESULT fashiond key=value ..." line
// that gpu-check.sh collects into its table. The device, route and library
// come from FASHIOND_DEVICE, FASHIOND_ORT_LIB, FASHIOND_CUDA_ROUTE and
// FASHIOND_CUDA_DEVICE_ID, as for fashiond.
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"image"
	_ "image/jpeg" // decoders for -images
	_ "image/png"
	"io"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"fashiond/bench"
	"fashiond/diffusion"
	"fashiond/inference"
	"fashiond/perception"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: gpucheck probe|diffusion|sr|stages [flags]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmds := map[string]func(context.Context, []string, io.Writer) error{
		"probe": runProbe, "probe-kind": runProbeKind, "compare": runCompare, "diffusion": runDiffusion, "sr": runSR, "models": runModels, "stages": runStages,
	}
	run, ok := cmds[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "gpucheck: unknown command %q\n", os.Args[1])
		os.Exit(2)
	}
	if err := run(ctx, os.Args[2:], os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "gpucheck %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

// runtimeFromEnv opens ONNX Runtime as fashiond would from its environment.
func runtimeFromEnv(ctx context.Context) (*inference.Runtime, error) {
	id, _ := strconv.Atoi(os.Getenv("FASHIOND_CUDA_DEVICE_ID"))
	return inference.Open(ctx, inference.Config{
		LibPath: os.Getenv("FASHIOND_ORT_LIB"), Device: envOr("FASHIOND_DEVICE", "auto"),
		CUDARoute: os.Getenv("FASHIOND_CUDA_ROUTE"), CUDADeviceID: id, CUDNNConvSearch: envOr("FASHIOND_CUDNN_CONV_ALGO", "HEURISTIC"),
	}, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// runProbe runs each probe kind in a child process and prints one line per
// kind: ok, the error, or the signal that killed the child (a crash inside
// ONNX Runtime is named, not fatal to the check).
func runProbe(ctx context.Context, args []string, w io.Writer) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	failed := 0
	for _, k := range inference.ProbeKinds {
		cmd := exec.CommandContext(ctx, self, "probe-kind", k)
		out, err := cmd.CombinedOutput()
		line := strings.TrimSpace(string(out))
		status := "ok"
		var exit *exec.ExitError
		switch {
		case errors.As(err, &exit) && exit.ProcessState.Sys().(syscall.WaitStatus).Signaled():
			status = "CRASH " + exit.ProcessState.Sys().(syscall.WaitStatus).Signal().String()
			failed++
		case err != nil:
			status = "error"
			failed++
		}
		fmt.Fprintf(w, "RESULT probe kind=%s status=%q detail=%q\n", k, status, lastLine(line))
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d run kinds failed", failed, len(inference.ProbeKinds))
	}
	return nil
}

func lastLine(s string) string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

func runProbeKind(ctx context.Context, args []string, w io.Writer) error {
	if len(args) != 1 {
		return errors.New("probe-kind KIND")
	}
	rt, err := runtimeFromEnv(ctx)
	if err != nil {
		return err
	}
	defer rt.Close()
	dir, err := os.MkdirTemp("", "gpucheck-probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	dev, err := rt.Probe(ctx, dir, args[0])
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s ok on %s\n", args[0], dev)
	return nil
}

// runDiffusion measures images/s of the engine on a folder at several
// numbers of concurrent jobs, with step batching on.
func runDiffusion(ctx context.Context, args []string, w io.Writer) error {
	fs := flag.NewFlagSet("diffusion", flag.ContinueOnError)
	folder := fs.String("folder", "", "diffusion export folder (Optimum layout)")
	size := fs.Int("size", 512, "image side")
	steps := fs.Int("steps", 20, "steps per image")
	guidance := fs.Float64("guidance", 7.5, "guidance scale")
	levels := fs.String("jobs", "1,8", "concurrent jobs to measure")
	maxBatch := fs.Int("max-batch", 16, "most UNet rows per call")
	repeats := fs.Int("repeats", 2, "measured rounds per level (best kept)")
	save := fs.String("save", "", "instead of timing: write one seeded image's pixels ([3][H][W] float32, little endian) here, for compare")
	if err := fs.Parse(args); err != nil {
		return err
	}
	rt, err := runtimeFromEnv(ctx)
	if err != nil {
		return err
	}
	defer rt.Close()
	t0 := time.Now()
	m, err := diffusion.Load(ctx, rt, *folder, diffusion.Options{Batching: true, MaxBatch: *maxBatch})
	if err != nil {
		return err
	}
	defer m.Close()
	fmt.Fprintf(w, "RESULT fashiond load_s=%.2f device=%s\n", time.Since(t0).Seconds(), m.Device())
	req := diffusion.Request{Prompt: "a linen shirt on a hanger", NegativePrompt: "blurry", Guidance: *guidance, Steps: *steps, Width: *size, Height: *size}
	if *save != "" {
		req.Seed = 7
		res, err := m.Generate(ctx, req)
		if err != nil {
			return err
		}
		return writeFloats(*save, res.Pixels)
	}
	warm := req
	warm.Steps = 3
	if _, err := m.Generate(ctx, warm); err != nil {
		return err
	}
	for _, f := range strings.Split(*levels, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return fmt.Errorf("-jobs %q", *levels)
		}
		best := time.Duration(1<<63 - 1)
		for range max(1, *repeats) {
			wall, err := concurrentJobs(ctx, m, req, n)
			if err != nil {
				return err
			}
			best = min(best, wall)
		}
		fmt.Fprintf(w, "RESULT fashiond images=%d wall=%.3fs images/s=%.3f steps/s=%.2f rss=%s\n",
			n, best.Seconds(), float64(n)/best.Seconds(), float64(n**steps)/best.Seconds(), diffusion.FormatBytes(bench.RSSBytes()))
	}
	return nil
}

func concurrentJobs(ctx context.Context, m *diffusion.Model, req diffusion.Request, n int) (time.Duration, error) {
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		r := req
		r.Seed = uint64(i + 1)
		wg.Go(func() { _, errs[i] = m.Generate(ctx, r) })
	}
	wg.Wait()
	return time.Since(start), errors.Join(errs...)
}

// runSR measures one super-resolution call on a -size² image: on CUDA the
// SR stage runs a 1k image as one call (models' per-device tile).
func runSR(ctx context.Context, args []string, w io.Writer) error {
	fs := flag.NewFlagSet("sr", flag.ContinueOnError)
	dir := fs.String("models", os.Getenv("FASHIOND_MODELS_DIR"), "model repository")
	size := fs.Int("size", 1000, "input side")
	iters := fs.Int("iters", 4, "measured runs (best kept)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	rt, err := runtimeFromEnv(ctx)
	if err != nil {
		return err
	}
	defer rt.Close()
	s, err := rt.NewSession(ctx, inference.SessionSpec{Name: "realesr_general_x4v3", Path: filepath.Join(*dir, "realesr_general_x4v3.onnx"),
		Inputs: []string{"data"}, Outputs: []string{"output"}})
	if err != nil {
		return err
	}
	defer s.Close()
	n := int64(*size)
	in := []inference.Tensor{{Shape: []int64{1, 3, n, n}, Data: make([]float32, 3*n*n)}}
	for i := range in[0].Data {
		in[0].Data[i] = float32(i%251) / 251
	}
	best, err := bestOf(ctx, *iters, func() error { _, err := s.Run(ctx, in); return err })
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "RESULT model device=%s model=sr_%d_to_%d ms=%.1f\n", s.Device(), n, 4*n, ms(best))
	return nil
}

// bestOf runs f once to warm up, then iters times, and returns the fastest.
func bestOf(ctx context.Context, iters int, f func() error) (time.Duration, error) {
	if err := f(); err != nil {
		return 0, err
	}
	best := time.Duration(1<<63 - 1)
	for range max(1, iters) {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		t := time.Now()
		if err := f(); err != nil {
			return 0, err
		}
		best = min(best, time.Since(t))
	}
	return best, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// runModels times one call of every perception model installed in -models
// (the committed manifests' inputs; dimensions the caller chooses are 1 for
// the batch and the preprocess size, else -side).
func runModels(ctx context.Context, args []string, w io.Writer) error {
	fs := flag.NewFlagSet("models", flag.ContinueOnError)
	dir := fs.String("models", os.Getenv("FASHIOND_MODELS_DIR"), "model repository")
	side := fs.Int("side", 256, "spatial size where the manifest leaves it open")
	iters := fs.Int("iters", 8, "measured runs (best kept)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ms0, err := perception.LoadManifests()
	if err != nil {
		return err
	}
	rt, err := runtimeFromEnv(ctx)
	if err != nil {
		return err
	}
	defer rt.Close()
	for _, m := range ms0 {
		path := filepath.Join(*dir, m.File)
		if m.File == "" || m.Generative {
			continue
		}
		if _, err := os.Stat(path); err != nil {
			fmt.Fprintf(w, "RESULT model model=%s skipped=%q\n", m.Name, "not in "+*dir)
			continue
		}
		if err := timeModel(ctx, w, rt, m, path, *side, *iters); err != nil {
			return fmt.Errorf("%s: %w", m.Name, err)
		}
	}
	return nil
}

func timeModel(ctx context.Context, w io.Writer, rt *inference.Runtime, m perception.Manifest, path string, side, iters int) error {
	s, err := rt.NewSession(ctx, inference.SessionSpec{Name: m.Name, Path: path, Inputs: m.InputNames(), Outputs: m.OutputNames(), Device: m.Device})
	if err != nil {
		return err
	}
	defer s.Close()
	var in []inference.Tensor
	for _, spec := range m.Inputs {
		t := inference.Tensor{Shape: append([]int64(nil), spec.Shape...)}
		for i, d := range t.Shape {
			if d >= 0 {
				continue
			}
			t.Shape[i] = int64(side)
			if i == 0 {
				t.Shape[i] = 1
			} else if p := m.Preprocess; p != nil && p.Width > 0 {
				t.Shape[i] = int64(p.Width)
			}
		}
		t.Data = make([]float32, t.Elements())
		in = append(in, t)
	}
	best, err := bestOf(ctx, iters, func() error { _, err := s.Run(ctx, in); return err })
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "RESULT model device=%s model=%s input=%v ms=%.2f\n", s.Device(), m.Name, in[0].Shape, ms(best))
	return nil
}

// runStages measures the perception stages with the bench package.
func runStages(ctx context.Context, args []string, w io.Writer) error {
	fs := flag.NewFlagSet("stages", flag.ContinueOnError)
	dir := fs.String("models", os.Getenv("FASHIOND_MODELS_DIR"), "model repository")
	list := fs.String("images", "", "comma-separated photos")
	iters := fs.Int("iters", 8, "measured iterations per stage")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var imgs []image.Image
	var names []string
	for _, p := range strings.Split(*list, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		img, err := decode(p)
		if err != nil {
			return err
		}
		imgs, names = append(imgs, img), append(names, p)
	}
	if len(imgs) == 0 {
		return errors.New("-images: no photos")
	}
	rt, err := runtimeFromEnv(ctx)
	if err != nil {
		return err
	}
	defer rt.Close()
	dev, _, _ := rt.DeviceFor("auto")
	log := slog.New(slog.DiscardHandler)
	rep, err := bench.Run(ctx, bench.Options{
		Images: imgs, ImageNames: names, Iters: *iters, Warmup: 2, Concurrency: 1, Modes: []bool{false}, Device: dev, Log: log,
		OpenSuite: func(ctx context.Context, batching bool) (*perception.Suite, error) {
			return perception.NewSuite(ctx, rt, *dir, perception.SuiteOptions{Batching: batching, UpscalePolicy: "auto", Log: log})
		},
	})
	if err != nil {
		return err
	}
	for _, s := range rep.Stages {
		fmt.Fprintf(w, "RESULT stage device=%s stage=%s p50_ms=%.2f\n", dev, s.Stage, s.P50MS)
	}
	return nil
}

func decode(p string) (image.Image, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	img, _, err := image.Decode(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return img, nil
}

func writeFloats(path string, v []float32) error {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return os.WriteFile(path, b, 0o644)
}

func readFloats(path string) ([]float32, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b)%4 != 0 || len(b) == 0 {
		return nil, fmt.Errorf("%s: %d bytes is not float32 pixels", path, len(b))
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}

// runCompare prints the agreement of two images saved by diffusion -save
// (pixels in [0, 1]): the largest and the mean absolute difference, in
// 8-bit levels.
func runCompare(ctx context.Context, args []string, w io.Writer) error {
	if len(args) != 2 {
		return errors.New("compare A B")
	}
	a, err := readFloats(args[0])
	if err != nil {
		return err
	}
	b, err := readFloats(args[1])
	if err != nil {
		return err
	}
	if len(a) != len(b) {
		return fmt.Errorf("%s has %d values, %s %d", args[0], len(a), args[1], len(b))
	}
	var maxd, sum float64
	for i := range a {
		d := math.Abs(float64(a[i]) - float64(b[i]))
		maxd, sum = max(maxd, d), sum+d
	}
	fmt.Fprintf(w, "RESULT agreement max_levels=%.2f mean_levels=%.3f values=%d\n", 255*maxd, 255*sum/float64(len(a)), len(a))
	return nil
}
