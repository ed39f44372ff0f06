package inference

import (
	"context"
	"errors"
	"fmt"
	"sync"

	ort "github.com/yalue/onnxruntime_go"
)

// Tensor is a dense float32 tensor in row-major order.
type Tensor struct {
	Shape []int64
	Data  []float32
}

// Elements is the product of the shape.
func (t Tensor) Elements() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// SessionSpec describes one model graph to load.
type SessionSpec struct {
	Name    string   // model name, for logs and errors
	Path    string   // .onnx file
	Inputs  []string // input tensor names, in Run order
	Outputs []string // output tensor names, in result order
	Device  string   // "", "auto", "cpu" or "cuda": overrides the runtime's choice
	// KeepPreallocated keeps RunValues' pre-allocated float32 and integer
	// outputs pre-allocated on CUDA too (Probe); by default ONNX Runtime
	// allocates them there.
	KeepPreallocated bool
	// OptimizedPath, when set, is where ONNX Runtime writes the graph after
	// its optimisations for this session's device (SetOptimizedModelFilePath):
	// done once at install, a later session can load that file instead.
	// The file holds device-specific fused nodes: it is only for the same
	// device and ONNX Runtime version.
	OptimizedPath string
}

// Session is one loaded graph. Run is safe for concurrent use (ORT sessions
// are thread-safe for Run).
type Session struct {
	spec   SessionSpec
	device string
	decl   *declared // the graph's declarations of spec's inputs and outputs
	mu     sync.RWMutex
	s      *ort.DynamicAdvancedSession
}

// NewSession loads a graph on the chosen execution provider.
func (r *Runtime) NewSession(ctx context.Context, spec SessionSpec) (*Session, error) {
	if r == nil {
		return nil, errors.New("inference: NewSession on a nil runtime")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("inference: load model %s: runtime closed", spec.Name)
	}
	var (
		sess   *ort.DynamicAdvancedSession
		device = "cpu"
	)
	err := guard(func() error {
		opts, err := ort.NewSessionOptions()
		if err != nil {
			return err
		}
		defer opts.Destroy()
		if err := opts.SetIntraOpNumThreads(r.cfg.IntraOpThreads); err != nil {
			return err
		}
		if err := opts.SetInterOpNumThreads(1); err != nil {
			return err
		}
		if !r.cfg.AllowSpinning {
			if err := opts.AddSessionConfigEntry("session.intra_op.allow_spinning", "0"); err != nil {
				return err
			}
		}
		if device, err = r.chooseDevice(spec, opts); err != nil {
			return err
		}
		if spec.OptimizedPath != "" {
			if err := opts.SetOptimizedModelFilePath(spec.OptimizedPath); err != nil {
				return err
			}
		}
		sess, err = ort.NewDynamicAdvancedSession(spec.Path, spec.Inputs, spec.Outputs, opts)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("inference: load model %s from %s: %w", spec.Name, spec.Path, err)
	}
	return &Session{spec: spec, device: device, decl: declare(spec), s: sess}, nil
}

// Name is the model name.
func (s *Session) Name() string { return s.spec.Name }

// Device is the execution provider this session runs on ("cpu" or "cuda").
func (s *Session) Device() string { return s.device }

// Run executes the graph. Cancelling ctx terminates a running call.
func (s *Session) Run(ctx context.Context, inputs []Tensor) ([]Tensor, error) {
	if s == nil {
		return nil, errors.New("inference: nil session")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(inputs) != len(s.spec.Inputs) {
		return nil, fmt.Errorf("inference: %s wants %d inputs, got %d", s.spec.Name, len(s.spec.Inputs), len(inputs))
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.s == nil {
		return nil, fmt.Errorf("inference: session %s is closed", s.spec.Name)
	}
	var out []Tensor
	err := guard(func() error {
		in := make([]ort.Value, len(inputs))
		defer func() {
			for _, v := range in {
				if v != nil {
					v.Destroy()
				}
			}
		}()
		for i, t := range inputs {
			if int64(len(t.Data)) != t.Elements() {
				return fmt.Errorf("input %s: shape %v needs %d values, got %d", s.spec.Inputs[i], t.Shape, t.Elements(), len(t.Data))
			}
			if s.decl != nil {
				if err := checkValue(s.decl.in[i], Float32, t.Shape); err != nil {
					return fmt.Errorf("input %s: %w", s.spec.Inputs[i], err)
				}
			}
			v, err := newFloatValue(t)
			if err != nil {
				return fmt.Errorf("input %s: %w", s.spec.Inputs[i], err)
			}
			in[i] = v
		}
		outs := make([]ort.Value, len(s.spec.Outputs))
		defer func() {
			for _, v := range outs {
				if v != nil {
					v.Destroy()
				}
			}
		}()
		ro, err := newRunOptions(ctx)
		if err != nil {
			return err
		}
		defer ro.release()
		if err := s.s.RunWithOptions(in, outs, ro.ro); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		out = make([]Tensor, len(outs))
		for i, v := range outs {
			ft, ok := v.(*ort.Tensor[float32])
			if !ok {
				return fmt.Errorf("output %s is %T, want float32 tensor", s.spec.Outputs[i], v)
			}
			data := ft.GetData()
			cp := make([]float32, len(data))
			copy(cp, data)
			out[i] = Tensor{Shape: []int64(ft.GetShape().Clone()), Data: cp}
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
		return nil, fmt.Errorf("inference: run %s: %w", s.spec.Name, err)
	}
	return out, nil
}

// Close releases the session. Idempotent and nil-safe.
func (s *Session) Close() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.s == nil {
		return nil
	}
	err := guard(s.s.Destroy)
	s.s = nil
	return err
}

// Runner runs a graph: a Session, a session Pool or a Batcher.
type Runner interface {
	Run(ctx context.Context, inputs []Tensor) ([]Tensor, error)
}

// newFloatValue is an ORT tensor of t, or a scalar for an empty shape
// (onnxruntime_go refuses rank-0 tensors made with NewTensor).
func newFloatValue(t Tensor) (ort.Value, error) {
	if len(t.Shape) == 0 {
		return ort.NewScalar(t.Data[0])
	}
	return ort.NewTensor(ort.NewShape(t.Shape...), t.Data)
}
