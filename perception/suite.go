package perception

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"fashiond/inference"
)

// SuiteOptions configure a Suite.
type SuiteOptions struct {
	// Batching routes every model call through a dynamic batcher (several
	// concurrent requests run as one batch) where the graph accepts batches.
	Batching bool
	// UpscalePolicy for ToTier: "auto" (default), "sr-fast", "sr-quality" or
	// "lanczos".
	UpscalePolicy string
	// PoseModel selects the graph behind Pose: "full" (default) or "lite".
	PoseModel string
	// PoolSize is the number of sessions per model that is not batched
	// (0: the repository default, 2).
	PoolSize int
	// Log receives load and fallback messages; nil means slog.Default().
	Log *slog.Logger
	// Observer, when set, is told of every model call (package metrics
	// implements it).
	Observer CallObserver
}

// CallObserver receives the outcome of every model call of a Suite. items
// is the call's batch size (dim 0 of its first input); took includes any
// wait in a dynamic batcher. It is called on the caller's goroutine and
// must not block.
type CallObserver interface {
	ModelCall(model string, items int, took time.Duration, err error)
}

// modelSpec is what an adapter relies on: the leading output tensors it
// decodes, in order (checked against the model's manifest at load).
type modelSpec struct {
	Name     string
	Outputs  []string
	Optional bool // not required for a working install (depth)
}

var modelSpecs = map[string]modelSpec{
	ModelPoseFull:     {Name: ModelPoseFull, Outputs: []string{"Identity", "Identity_1", "Identity_2"}},
	ModelPoseLite:     {Name: ModelPoseLite, Outputs: []string{"Identity", "Identity_1", "Identity_2"}},
	ModelSelfie:       {Name: ModelSelfie, Outputs: []string{"activation_10"}},
	ModelParse:        {Name: ModelParse, Outputs: []string{"1273"}},
	ModelYuNet:        {Name: ModelYuNet, Outputs: yunetOutputs},
	ModelUltraFace:    {Name: ModelUltraFace, Outputs: []string{"scores", "boxes"}},
	string(SRFast):    {Name: string(SRFast), Outputs: []string{"output"}},
	string(SRQuality): {Name: string(SRQuality), Outputs: []string{"output"}},
	ModelDepth:        {Name: ModelDepth, Outputs: []string{"output"}, Optional: true},
}

// ModelNames lists every graph the suite can load.
func ModelNames() []string {
	return []string{ModelPoseFull, ModelPoseLite, ModelSelfie, ModelParse, ModelYuNet, ModelUltraFace, string(SRFast), string(SRQuality), ModelDepth}
}

// loaded is one loaded graph and what runs it.
type loaded struct {
	name   string
	runner *ModelRunner
	device string
	// batched: the runner is a dynamic batcher that merges concurrent calls
	// (of any first dimension up to the manifest's max_batch).
	batched bool
	obs     CallObserver // nil: none
}

// Run runs the graph once and tells the suite's observer.
func (l *loaded) Run(ctx context.Context, in []inference.Tensor) ([]inference.Tensor, error) {
	if l.obs == nil {
		return l.runner.Run(ctx, in)
	}
	start := time.Now()
	out, err := l.runner.Run(ctx, in)
	items := 0
	if len(in) > 0 && len(in[0].Shape) > 0 {
		items = int(in[0].Shape[0])
	}
	l.obs.ModelCall(l.name, items, time.Since(start), err)
	return out, err
}

type slot struct {
	once  sync.Once
	m     *loaded
	err   error
	ready *loaded // m once loaded, guarded by Suite.mu (for Runners)
}

// Suite implements Perception with the models of one model repository.
// Graphs are loaded on first use (Preload loads them up front), each as a
// dynamic batcher (SuiteOptions.Batching and a batch-capable graph) or a
// session pool. Safe for concurrent use.
type Suite struct {
	rt   *inference.Runtime
	repo *Repository
	opts SuiteOptions
	log  *slog.Logger

	mu     sync.Mutex
	slots  map[string]*slot
	closed bool
}

// NewSuite opens the model repository in modelsDir and returns a Suite. The
// required models (everything but depth) must be present; their hashes are
// verified when each graph is first loaded.
func NewSuite(ctx context.Context, rt *inference.Runtime, modelsDir string, opts SuiteOptions) (*Suite, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if rt == nil {
		return nil, errors.New("models: NewSuite needs an inference runtime")
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	switch opts.UpscalePolicy {
	case "":
		opts.UpscalePolicy = PolicyAuto
	case PolicyAuto, PolicySRFast, PolicySRQuality, PolicyLanczos:
	default:
		return nil, fmt.Errorf("models: unknown upscale policy %q (want auto, sr-fast, sr-quality or lanczos)", opts.UpscalePolicy)
	}
	switch opts.PoseModel {
	case "", "full", "lite":
	default:
		return nil, fmt.Errorf("models: unknown pose model %q (want full or lite)", opts.PoseModel)
	}
	repo, err := OpenRepository(modelsDir)
	if err != nil {
		return nil, err
	}
	s := &Suite{rt: rt, repo: repo, opts: opts, log: opts.Log, slots: map[string]*slot{}}
	var missing []error
	for _, n := range ModelNames() {
		if modelSpecs[n].Optional {
			continue
		}
		if _, err := repo.Path(n); err != nil {
			missing = append(missing, err)
		}
	}
	if len(missing) > 0 {
		return nil, errors.Join(missing...)
	}
	return s, nil
}

// Options returns the effective options.
func (s *Suite) Options() SuiteOptions { return s.opts }

// Repository is the model repository the suite loads from.
func (s *Suite) Repository() *Repository { return s.repo }

// Has reports whether the named model's file is installed.
func (s *Suite) Has(name string) bool {
	_, err := s.repo.Path(name)
	return err == nil
}

// model returns the loaded graph, loading it on first use.
func (s *Suite) model(ctx context.Context, name string) (*loaded, error) {
	if s == nil {
		return nil, errors.New("models: nil suite")
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errors.New("models: suite is closed")
	}
	sl := s.slots[name]
	if sl == nil {
		sl = &slot{}
		s.slots[name] = sl
	}
	s.mu.Unlock()
	// Loading is not cancelled with the first caller's context: a cancelled
	// job must not leave the model unloadable for everyone after it.
	sl.once.Do(func() {
		sl.m, sl.err = s.load(context.WithoutCancel(ctx), name)
		s.mu.Lock()
		sl.ready = sl.m
		s.mu.Unlock()
	})
	if sl.err != nil {
		return nil, sl.err
	}
	return sl.m, nil
}

func (s *Suite) load(ctx context.Context, name string) (*loaded, error) {
	spec, ok := modelSpecs[name]
	if !ok {
		return nil, fmt.Errorf("models: unknown model %q", name)
	}
	man, ok := s.repo.Manifest(name)
	if !ok {
		return nil, fmt.Errorf("models: no manifest for model %q", name)
	}
	outs := man.OutputNames()
	if len(outs) < len(spec.Outputs) {
		return nil, fmt.Errorf("models: manifest of %s lists outputs %v, the adapter decodes %v", name, outs, spec.Outputs)
	}
	for i, o := range spec.Outputs {
		if outs[i] != o {
			return nil, fmt.Errorf("models: manifest of %s lists outputs %v, the adapter decodes %v", name, outs, spec.Outputs)
		}
	}
	r, err := s.repo.NewRunner(ctx, s.rt, name, RunnerOptions{Batching: s.opts.Batching, PoolSize: s.opts.PoolSize})
	if err != nil {
		return nil, err
	}
	l := &loaded{name: name, runner: r, device: r.Device(), batched: r.Mode() == "batched", obs: s.opts.Observer}
	s.log.Debug("model loaded", "model", name, "runner", r.String())
	return l, nil
}

// Preload loads the named models (all of them when names is empty; an
// optional model that is not installed is skipped).
func (s *Suite) Preload(ctx context.Context, names ...string) error {
	if len(names) == 0 {
		for _, n := range ModelNames() {
			if modelSpecs[n].Optional && !s.Has(n) {
				continue
			}
			names = append(names, n)
		}
	}
	for _, n := range names {
		if _, err := s.model(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

// RunnerInfo describes a loaded model's runner.
type RunnerInfo struct {
	Model  string
	Mode   string // "batched" or "pool"
	Device string // "cpu" or "cuda"
	Stats  inference.BatchStats
}

// Runners describes every loaded model, sorted by name.
func (s *Suite) Runners() []RunnerInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []RunnerInfo
	for _, n := range ModelNames() {
		sl := s.slots[n]
		if sl == nil || sl.ready == nil {
			continue
		}
		m := sl.ready
		out = append(out, RunnerInfo{Model: n, Mode: m.runner.Mode(), Device: m.device, Stats: m.runner.Stats()})
	}
	return out
}

// Close releases every loaded graph. Idempotent and nil-safe.
func (s *Suite) Close() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	slots := s.slots
	s.slots = nil
	s.mu.Unlock()
	var errs []error
	for _, sl := range slots {
		sl.once.Do(func() { sl.err = errors.New("models: suite is closed") })
		if sl.m != nil {
			errs = append(errs, sl.m.runner.Close())
		}
	}
	return errors.Join(errs...)
}

var _ Perception = (*Suite)(nil)
