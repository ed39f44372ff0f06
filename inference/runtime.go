// Package inference owns the embedded ONNX Runtime: the shared library, the
// process-wide environment, execution-provider choice (CUDA when present,
// CPU otherwise), sessions, session pools and dynamic batching. It is the only
// package that imports onnxruntime_go; it never imports gocv.
package inference

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"sync"

	ort "github.com/yalue/onnxruntime_go"
)

// Config selects the library and the execution settings.
type Config struct {
	// LibPath is the path of libonnxruntime.so (FASHIOND_ORT_LIB).
	LibPath string
	// IntraOpThreads per session; 0 means the number of CPUs.
	IntraOpThreads int
	// Device is "auto" (CUDA when available, else CPU), "cpu" or "cuda".
	Device string
	// AllowSpinning lets idle intra-op threads busy-wait for work (ORT's
	// default). Off by default: a worker runs many sessions at once, and
	// spinning threads of one steal the cores of the others.
	AllowSpinning bool
	// CUDA provider options.
	CUDADeviceID    int
	CUDAMemLimit    int64  // bytes; 0 = no limit
	CUDNNConvSearch string // EXHAUSTIVE, HEURISTIC or DEFAULT
	// CUDAArenaExtend is the CUDA arena's growth: kNextPowerOfTwo or
	// kSameAsRequested ("" = ONNX Runtime's default).
	CUDAArenaExtend string
	// CUDARoute is RouteAuto (""), RouteInCore or RoutePlugin.
	CUDARoute string
}

// Runtime is the process-wide ONNX Runtime environment. There is one per
// process; Open returns the same error again if the environment could not be
// created.
type Runtime struct {
	cfg    Config
	log    *slog.Logger
	mu     sync.Mutex
	closed bool
}

var (
	envMu   sync.Mutex
	envRefs int
	envLib  string // the library the live environment was created from
)

// Open loads the library and initialises the environment.
func Open(ctx context.Context, cfg Config, log *slog.Logger) (*Runtime, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	if cfg.LibPath == "" {
		return nil, errors.New("inference: no ONNX Runtime library configured (set FASHIOND_ORT_LIB or run `make setup`)")
	}
	switch cfg.CUDARoute {
	case "":
		cfg.CUDARoute = RouteAuto
	case RouteAuto, RouteInCore, RoutePlugin:
	default:
		return nil, fmt.Errorf("inference: CUDA route %q: want %s, %s or %s", cfg.CUDARoute, RouteAuto, RouteInCore, RoutePlugin)
	}
	if _, err := os.Stat(cfg.LibPath); err != nil {
		return nil, fmt.Errorf("inference: ONNX Runtime library %s: %w (run `make setup`)", cfg.LibPath, err)
	}
	if cfg.IntraOpThreads <= 0 {
		cfg.IntraOpThreads = runtime.NumCPU()
	}
	if cfg.Device == "" {
		cfg.Device = "auto"
	}
	envMu.Lock()
	defer envMu.Unlock()
	if envRefs == 0 {
		if err := guard(func() error {
			ort.SetSharedLibraryPath(cfg.LibPath)
			return ort.InitializeEnvironment(ort.WithLogLevelError())
		}); err != nil {
			return nil, fmt.Errorf("inference: initialise ONNX Runtime from %s: %w", cfg.LibPath, err)
		}
		envLib = cfg.LibPath
	} else if envLib != cfg.LibPath {
		return nil, fmt.Errorf("inference: ONNX Runtime is already loaded from %s in this process; cannot also load %s", envLib, cfg.LibPath)
	}
	envRefs++
	return &Runtime{cfg: cfg, log: log}, nil
}

// Config returns the effective configuration.
func (r *Runtime) Config() Config { return r.cfg }

// Version is the ONNX Runtime version string of the loaded library.
func (r *Runtime) Version() string {
	var v string
	_ = guard(func() error { v = ort.GetVersion(); return nil })
	return v
}

// Close releases this handle; the environment is destroyed with the last one.
// Idempotent and nil-safe.
func (r *Runtime) Close() error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.mu.Unlock()
	envMu.Lock()
	defer envMu.Unlock()
	envRefs--
	if envRefs == 0 {
		resetPlugin()
		return guard(ort.DestroyEnvironment)
	}
	return nil
}

// guard runs f and turns a panic into an error, so no panic from the runtime
// binding ever crosses into a job.
func guard(f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("onnxruntime panic: %v", p)
		}
	}()
	return f()
}
