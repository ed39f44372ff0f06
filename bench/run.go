package bench

import (
	"context"
	"errors"
	"fmt"
	"image"
	"io"
	"log/slog"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/disintegration/imaging"

	"fashiond/perception"
)

// Built-in stages, in the order they run.
var builtinStages = []string{
	"pose", "pose-lite", "selfie", "parse", "faces",
	"sr-fast-tile", "sr-quality-tile", "depth",
	"upscale-1k-4k-lanczos", "upscale-1k-4k-sr-fast", "upscale-1k-4k-sr-quality",
}

// stageModels are the models a built-in stage calls (for batch fill).
var stageModels = map[string][]string{
	"pose":                     {perception.ModelPoseFull},
	"pose-lite":                {perception.ModelPoseLite},
	"selfie":                   {perception.ModelSelfie},
	"parse":                    {perception.ModelParse},
	"faces":                    {perception.ModelYuNet, perception.ModelUltraFace},
	"sr-fast-tile":             {string(perception.SRFast)},
	"sr-quality-tile":          {string(perception.SRQuality)},
	"depth":                    {perception.ModelDepth},
	"upscale-1k-4k-lanczos":    nil,
	"upscale-1k-4k-sr-fast":    {string(perception.SRFast)},
	"upscale-1k-4k-sr-quality": {string(perception.SRQuality)},
}

func isBuiltin(name string) bool { return slices.Contains(builtinStages, name) }

// BuiltinStages lists the built-in stage names.
func BuiltinStages() []string { return append([]string(nil), builtinStages...) }

// QuickStages are the representative subset `fashiond bench` measures by
// default (under a minute on a 2-core CPU): every model kind (pose, lite
// pose, segmentation, parsing, faces, depth, fast super-resolution) and the
// Lanczos tier upscale. The SR-quality tile and the whole-image SR upscales
// take seconds to minutes per iteration: --full or --stages.
func QuickStages() []string {
	return []string{"pose", "pose-lite", "selfie", "parse", "faces", "depth", "sr-fast-tile", "upscale-1k-4k-lanczos"}
}

// DefaultStages is what --full runs: every built-in stage but the slow
// SR-quality upscale (minutes per image on a CPU).
func DefaultStages() []string {
	var out []string
	for _, s := range builtinStages {
		if s != "upscale-1k-4k-sr-quality" {
			out = append(out, s)
		}
	}
	return out
}

type suiteKey struct{}

// SuiteFrom returns the suite of the running bench mode (batching on or
// off), for stages added with RegisterStage that want to use it.
func SuiteFrom(ctx context.Context) *perception.Suite {
	s, _ := ctx.Value(suiteKey{}).(*perception.Suite)
	return s
}

// Options configure Run.
type Options struct {
	Stages      []string      // stage names (built-in or registered); empty = DefaultStages
	Images      []image.Image // inputs, cycled over iterations
	ImageNames  []string      // for the report
	Iters       int           // measured iterations per stage and mode
	Warmup      int           // unmeasured iterations first
	Concurrency int           // requests in flight at once
	// Modes are the batching modes to measure, in order (false = off).
	Modes []bool
	// OpenSuite opens the models with batching on or off. Run closes it.
	OpenSuite func(ctx context.Context, batching bool) (*perception.Suite, error)
	Device    string    // for the report
	Progress  io.Writer // progress bar (stderr); nil = none
	Log       *slog.Logger
}

// StageReport is one stage over every mode measured.
type StageReport struct {
	Stage string `json:"stage"`
	// The headline numbers: the batched run when one was measured, else
	// the unbatched one.
	P50MS         float64 `json:"p50_ms"`
	P95MS         float64 `json:"p95_ms"`
	Throughput    float64 `json:"throughput_per_s"`
	MeanBatchFill float64 `json:"mean_batch_fill"`
	// BatchedSpeedup = throughput batched / unbatched, both measured in
	// this run (only when both modes ran and the stage uses a batchable model).
	BatchedSpeedup *float64 `json:"batched_speedup,omitempty"`
	Runs           []Result `json:"runs"`
}

// Report is the whole run.
type Report struct {
	Device         string        `json:"device"`
	CPUs           int           `json:"cpus"`
	Iters          int           `json:"iters"`
	Warmup         int           `json:"warmup"`
	Concurrency    int           `json:"concurrency"`
	Images         []string      `json:"images"`
	Stages         []StageReport `json:"stages"`
	RSSBaselineMB  float64       `json:"rss_baseline_mb"`
	RSSAllModelsMB float64       `json:"rss_all_models_mb"`
	LoadedModels   []string      `json:"loaded_models"`
	// Interrupted: the run was stopped (Ctrl-C) before its end; Stages
	// hold what was measured until then.
	Interrupted bool `json:"interrupted,omitempty"`
}

type stageInputs struct {
	imgs  []image.Image
	tiles []image.Image // 128x128 centre crops
	k1    []image.Image // 1000x1000 (1 MP) squares
}

func prepareInputs(imgs []image.Image) stageInputs {
	var in stageInputs
	for _, img := range imgs {
		in.imgs = append(in.imgs, imaging.Clone(img))
		b := img.Bounds()
		side := min(b.Dx(), b.Dy())
		sq := imaging.CropCenter(img, side, side)
		in.tiles = append(in.tiles, imaging.Resize(sq, 128, 128, imaging.Lanczos))
		in.k1 = append(in.k1, imaging.Resize(sq, 1000, 1000, imaging.Lanczos))
	}
	return in
}

func builtin(s *perception.Suite, in stageInputs, name string) stageFunc {
	n := len(in.imgs)
	pick := func(list []image.Image, i int) image.Image { return list[i%n] }
	switch name {
	case "pose":
		return func(ctx context.Context, i int) error {
			_, err := s.PoseWith(ctx, pick(in.imgs, i), perception.ModelPoseFull)
			return err
		}
	case "pose-lite":
		return func(ctx context.Context, i int) error {
			_, err := s.PoseWith(ctx, pick(in.imgs, i), perception.ModelPoseLite)
			return err
		}
	case "selfie":
		return func(ctx context.Context, i int) error { _, err := s.PersonMask(ctx, pick(in.imgs, i)); return err }
	case "parse":
		return func(ctx context.Context, i int) error { _, err := s.Parse(ctx, pick(in.imgs, i)); return err }
	case "faces":
		return func(ctx context.Context, i int) error { _, err := s.Faces(ctx, pick(in.imgs, i)); return err }
	case "depth":
		return func(ctx context.Context, i int) error { _, err := s.Depth(ctx, pick(in.imgs, i)); return err }
	case "sr-fast-tile", "sr-quality-tile":
		m := perception.SRFast
		if name == "sr-quality-tile" {
			m = perception.SRQuality
		}
		return func(ctx context.Context, i int) error {
			_, err := s.SuperResolve(ctx, pick(in.tiles, i), m)
			return err
		}
	case "upscale-1k-4k-lanczos", "upscale-1k-4k-sr-fast", "upscale-1k-4k-sr-quality":
		policy := strings.TrimPrefix(name, "upscale-1k-4k-")
		return func(ctx context.Context, i int) error {
			_, err := s.ToTierWith(ctx, pick(in.k1, i), "4k", "1:1", policy)
			return err
		}
	}
	return nil
}

type fill struct{ batches, items int64 }

func statsFor(s *perception.Suite, names []string) (f fill, pooled bool) {
	for _, r := range s.Runners() {
		if !slices.Contains(names, r.Model) {
			continue
		}
		if r.Mode != "batched" {
			pooled = true
			continue
		}
		f.batches += r.Stats.Batches
		f.items += r.Stats.Items
	}
	return f, pooled
}

// Run measures the stages in every mode and returns the report.
func Run(ctx context.Context, opt Options) (*Report, error) {
	if opt.OpenSuite == nil {
		return nil, errors.New("bench: no OpenSuite")
	}
	if len(opt.Images) == 0 {
		return nil, errors.New("bench: no input images")
	}
	if len(opt.Stages) == 0 {
		opt.Stages = DefaultStages()
	}
	for _, st := range opt.Stages {
		if _, ok := registered(st); !ok && !isBuiltin(st) {
			return nil, fmt.Errorf("bench: unknown stage %q (built-in: %s; registered: %s)", st, strings.Join(builtinStages, ", "), strings.Join(RegisteredStages(), ", "))
		}
	}
	if len(opt.Modes) == 0 {
		opt.Modes = []bool{false, true}
	}
	if opt.Log == nil {
		opt.Log = slog.Default()
	}
	opt.Iters = max(1, opt.Iters)
	opt.Concurrency = max(1, opt.Concurrency)
	rep := &Report{Device: opt.Device, CPUs: runtime.NumCPU(), Iters: opt.Iters, Warmup: opt.Warmup, Concurrency: opt.Concurrency, Images: opt.ImageNames}
	debug.FreeOSMemory()
	rep.RSSBaselineMB = mb(RSSBytes())
	// Worker memory with every model loaded (in the last mode's
	// configuration), measured first in a clean process.
	if err := allModelsRSS(ctx, opt, rep); err != nil {
		if ctx.Err() != nil {
			rep.Interrupted = true
			return rep, ctx.Err()
		}
		return nil, err
	}
	in := prepareInputs(opt.Images)
	results := map[string][]Result{}
	var err error
	for _, batching := range opt.Modes {
		if err = runMode(ctx, opt, in, batching, results); err != nil {
			break
		}
	}
	rep.Stages = assemble(opt.Stages, results)
	if err != nil && ctx.Err() != nil {
		rep.Interrupted = true
		return rep, ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	return rep, nil
}

// runMode measures every stage with batching on or off into results. When
// ctx ends mid-stage, the stage's partial measurement is kept.
func runMode(ctx context.Context, opt Options, in stageInputs, batching bool, results map[string][]Result) error {
	s, err := opt.OpenSuite(ctx, batching)
	if err != nil {
		return err
	}
	err = runStages(ctx, opt, s, in, batching, results)
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	return err
}

// runStages measures opt.Stages on suite s (see runMode).
func runStages(ctx context.Context, opt Options, s *perception.Suite, in stageInputs, batching bool, results map[string][]Result) error {
	sctx := context.WithValue(ctx, suiteKey{}, s)
	for _, st := range opt.Stages {
		fn := builtin(s, in, st)
		if fn == nil {
			reg, _ := registered(st)
			fn = func(ctx context.Context, _ int) error { return reg(ctx) }
		}
		before, _ := statsFor(s, stageModels[st])
		label := fmt.Sprintf("%s (batching %s)", st, onOff(batching))
		pb := newProgress(opt.Progress, label, opt.Iters)
		r, err := measure(sctx, fn, opt.Warmup, opt.Iters, opt.Concurrency, pb.draw)
		pb.finish()
		if err != nil && (ctx.Err() == nil || r.Iters == 0) {
			return fmt.Errorf("bench: stage %s (batching %s): %w", st, onOff(batching), err)
		}
		r.Stage, r.Batching = st, batching
		after, pooled := statsFor(s, stageModels[st])
		switch {
		case after.batches > before.batches:
			r.MeanBatchFill = float64(after.items-before.items) / float64(after.batches-before.batches)
		case pooled:
			r.MeanBatchFill = 1
		}
		r.RSSMB = mb(RSSBytes())
		results[st] = append(results[st], r)
		opt.Log.Debug("stage done", "stage", st, "batching", batching, "p50_ms", r.P50MS, "throughput", r.Throughput, "partial", r.Partial)
		if err != nil {
			return err
		}
	}
	return nil
}

// assemble builds the per-stage reports, in stage order, from the results
// measured (stages with none are left out).
func assemble(stages []string, results map[string][]Result) []StageReport {
	var out []StageReport
	for _, st := range stages {
		if len(results[st]) == 0 {
			continue
		}
		sr := StageReport{Stage: st, Runs: results[st]}
		var on, off *Result
		for i := range sr.Runs {
			if sr.Runs[i].Batching {
				on = &sr.Runs[i]
			} else {
				off = &sr.Runs[i]
			}
		}
		head := off
		if on != nil {
			head = on
		}
		sr.P50MS, sr.P95MS, sr.Throughput, sr.MeanBatchFill = head.P50MS, head.P95MS, head.Throughput, head.MeanBatchFill
		if on != nil && off != nil && off.Throughput > 0 && on.MeanBatchFill > 0 && batchable(st) && !on.Partial && !off.Partial {
			v := on.Throughput / off.Throughput
			sr.BatchedSpeedup = &v
		}
		out = append(out, sr)
	}
	return out
}

func allModelsRSS(ctx context.Context, opt Options, rep *Report) error {
	s, err := opt.OpenSuite(ctx, opt.Modes[len(opt.Modes)-1])
	if err != nil {
		return err
	}
	defer s.Close()
	if err := s.Preload(ctx); err != nil {
		return err
	}
	debug.FreeOSMemory()
	rep.RSSAllModelsMB = mb(RSSBytes())
	for _, r := range s.Runners() {
		rep.LoadedModels = append(rep.LoadedModels, r.Model+"/"+r.Mode+"/"+r.Device)
		if rep.Device == "" || rep.Device == "auto" {
			rep.Device = r.Device
		}
	}
	return nil
}

// batchable: the stage's models have batch graphs (YuNet, UltraFace and
// pure Lanczos do not), or it is a registered stage.
func batchable(stage string) bool {
	switch stage {
	case "faces", "upscale-1k-4k-lanczos":
		return false
	}
	return true
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }
