package models

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

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
	// Device overrides the runtime's device for every session ("", "cpu", "cuda").
	Device string
	// Log receives load and fallback messages; nil means slog.Default().
	Log *slog.Logger
}

// modelSpec is the tensor contract of one graph (MODELS.md).
type modelSpec struct {
	Name     string
	Inputs   []string
	Outputs  []string
	Optional bool // not required for a working install (depth)
	// Batchable: the graph file accepts a batch dimension > 1 as shipped.
	Batchable bool
}

var modelSpecs = map[string]modelSpec{
	ModelPoseFull:     {Name: ModelPoseFull, Inputs: []string{"input_1"}, Outputs: []string{"Identity", "Identity_1", "Identity_2"}},
	ModelPoseLite:     {Name: ModelPoseLite, Inputs: []string{"input_1"}, Outputs: []string{"Identity", "Identity_1", "Identity_2"}},
	ModelSelfie:       {Name: ModelSelfie, Inputs: []string{"input_1:0"}, Outputs: []string{"activation_10"}},
	ModelParse:        {Name: ModelParse, Inputs: []string{"x.1"}, Outputs: []string{"1273"}},
	ModelYuNet:        {Name: ModelYuNet, Inputs: []string{"input"}, Outputs: yunetOutputs},
	ModelUltraFace:    {Name: ModelUltraFace, Inputs: []string{"input"}, Outputs: []string{"scores", "boxes"}},
	string(SRFast):    {Name: string(SRFast), Inputs: []string{"data"}, Outputs: []string{"output"}, Batchable: true},
	string(SRQuality): {Name: string(SRQuality), Inputs: []string{"data"}, Outputs: []string{"output"}, Batchable: true},
	ModelDepth:        {Name: ModelDepth, Inputs: []string{"input"}, Outputs: []string{"output"}, Optional: true},
}

// ModelNames lists every graph the suite can load.
func ModelNames() []string {
	return []string{ModelPoseFull, ModelPoseLite, ModelSelfie, ModelParse, ModelYuNet, ModelUltraFace, string(SRFast), string(SRQuality), ModelDepth}
}

// loaded is one loaded graph and what runs it.
type loaded struct {
	name   string
	sess   *inference.Session
	run    inference.Runner
	device string
	// batched: run is a dynamic batcher that merges concurrent calls.
	batched bool
	closer  []func() error
}

func (l *loaded) Run(ctx context.Context, in []inference.Tensor) ([]inference.Tensor, error) {
	return l.run.Run(ctx, in)
}

func (l *loaded) close() error {
	var errs []error
	for i := len(l.closer) - 1; i >= 0; i-- {
		errs = append(errs, l.closer[i]())
	}
	return errors.Join(errs...)
}

type slot struct {
	once sync.Once
	m    *loaded
	err  error
}

// Suite implements Perception with the models of one model directory.
// Graphs are loaded on first use (Preload loads them up front). Safe for
// concurrent use.
type Suite struct {
	rt   *inference.Runtime
	dir  string
	opts SuiteOptions
	log  *slog.Logger

	mu     sync.Mutex
	slots  map[string]*slot
	closed bool
}

// NewSuite checks the model directory and returns a Suite. The required
// models (everything but depth) must be present; graphs load lazily.
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
		opts.UpscalePolicy = "auto"
	case "auto", "sr-fast", "sr-quality", "lanczos":
	default:
		return nil, fmt.Errorf("models: unknown upscale policy %q (want auto, sr-fast, sr-quality or lanczos)", opts.UpscalePolicy)
	}
	switch opts.PoseModel {
	case "", "full", "lite":
	default:
		return nil, fmt.Errorf("models: unknown pose model %q (want full or lite)", opts.PoseModel)
	}
	s := &Suite{rt: rt, dir: modelsDir, opts: opts, log: opts.Log, slots: map[string]*slot{}}
	var missing []string
	for _, n := range ModelNames() {
		if modelSpecs[n].Optional {
			continue
		}
		if _, err := s.modelPath(n); err != nil {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("models: %s missing from %s (run `fashiond models install` or `make setup`)", joinNames(missing), modelsDir)
	}
	return s, nil
}

func joinNames(n []string) string {
	out := ""
	for i, s := range n {
		if i > 0 {
			out += ", "
		}
		out += s
	}
	return out
}

// Options returns the effective options.
func (s *Suite) Options() SuiteOptions { return s.opts }

// Has reports whether the named model's file is installed.
func (s *Suite) Has(name string) bool {
	_, err := s.modelPath(name)
	return err == nil
}

func (s *Suite) modelPath(name string) (string, error) {
	p := filepath.Join(s.dir, name+".onnx")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("model %s is not installed (%s not found)", name, p)
	}
	return p, nil
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
	sl.once.Do(func() { sl.m, sl.err = s.load(ctx, name) })
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
	path, err := s.modelPath(name)
	if err != nil {
		return nil, fmt.Errorf("models: %w", err)
	}
	sess, err := s.rt.NewSession(ctx, inference.SessionSpec{Name: name, Path: path, Inputs: spec.Inputs, Outputs: spec.Outputs, Device: s.opts.Device})
	if err != nil {
		return nil, err
	}
	l := &loaded{name: name, sess: sess, run: sess, device: sess.Device(), closer: []func() error{sess.Close}}
	s.log.Debug("model loaded", "model", name, "device", l.device, "batching", s.opts.Batching)
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

// Device reports the execution provider of the named model once loaded
// ("cpu", "cuda"), or the runtime's configured device before.
func (s *Suite) Device(name string) string {
	s.mu.Lock()
	sl := s.slots[name]
	s.mu.Unlock()
	if sl != nil && sl.m != nil {
		return sl.m.device
	}
	return s.rt.Config().Device
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
			errs = append(errs, sl.m.close())
		}
	}
	return errors.Join(errs...)
}

var _ Perception = (*Suite)(nil)
