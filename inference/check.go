package inference

import (
	"context"
	"fmt"
	"sync"

	"fashiond/onnxedit"

	ort "github.com/yalue/onnxruntime_go"
)

// declared is what a session's graph declares for the inputs and outputs
// it was created with, in the session's order, read from the file with
// onnxedit (no second ONNX Runtime session). RunValues checks every value
// against it before ONNX Runtime sees the value: a tensor of the wrong type
// or shape is an error naming the tensor and the rule, never a buffer ONNX
// Runtime reads or writes past its end.
type declared struct {
	in, out []onnxedit.IO
}

// declare reads the declarations of spec's inputs and outputs; nil when the
// file cannot be read that way (ONNX Runtime then checks alone).
func declare(spec SessionSpec) *declared {
	ins, outs, err := onnxedit.Inspect(spec.Path)
	if err != nil {
		return nil
	}
	pick := func(list []onnxedit.IO, names []string) []onnxedit.IO {
		out := make([]onnxedit.IO, len(names))
		for i, n := range names {
			out[i] = onnxedit.IO{Name: n, UnknownRank: true}
			for _, io := range list {
				if io.Name == n {
					out[i] = io
				}
			}
		}
		return out
	}
	return &declared{in: pick(ins, spec.Inputs), out: pick(outs, spec.Outputs)}
}

// elemOf is the ONNX element type of d.
func elemOf(d DType) onnxedit.Elem {
	switch d {
	case Float32:
		return onnxedit.Float
	case Float16:
		return onnxedit.Float16
	case Int32:
		return onnxedit.Int32
	case Int64:
		return onnxedit.Int64
	}
	return onnxedit.Undefined
}

// checkValue says why a tensor of type d and shape does not fit io ("" when
// it does). Symbolic and unknown dimensions accept any size.
func checkValue(io onnxedit.IO, d DType, shape []int64) error {
	if d == DTypeUnknown {
		return fmt.Errorf("no element type (want %s)", io.Elem)
	}
	if io.Elem != onnxedit.Undefined && elemOf(d) != io.Elem {
		return fmt.Errorf("element type %s, the graph declares %s", d, io.Elem)
	}
	for i, n := range shape {
		if n < 0 {
			return fmt.Errorf("shape %v: dimension %d is negative", shape, i)
		}
	}
	if io.UnknownRank {
		return nil
	}
	if len(shape) != len(io.Dims) {
		return fmt.Errorf("shape %v has rank %d, the graph declares rank %d", shape, len(shape), len(io.Dims))
	}
	for i, dim := range io.Dims {
		if dim.Value > 0 && shape[i] != dim.Value {
			return fmt.Errorf("shape %v: dimension %d is %d, the graph declares %d", shape, i, shape[i], dim.Value)
		}
	}
	return nil
}

// check validates typed inputs and pre-allocated outputs against the
// declarations.
func (d *declared) check(inputs []Value, outs []OutputSpec) error {
	if d == nil {
		return nil
	}
	for i, v := range inputs {
		if err := checkValue(d.in[i], v.DType, v.Shape); err != nil {
			return fmt.Errorf("input %s: %w", d.in[i].Name, err)
		}
	}
	for i, o := range outs {
		if o.Shape == nil {
			if err := checkValue(onnxedit.IO{Elem: d.out[i].Elem, UnknownRank: true}, o.DType, nil); err != nil {
				return fmt.Errorf("output %s: %w", d.out[i].Name, err)
			}
			continue
		}
		if err := checkValue(d.out[i], o.DType, o.Shape); err != nil {
			return fmt.Errorf("pre-allocated output %s: %w", d.out[i].Name, err)
		}
	}
	return nil
}

// runOptions is an ORT RunOptions that cancelling ctx terminates. Its
// Terminate never runs after release: context.AfterFunc's stop does not wait
// for a callback that has already started, so without the lock a
// cancellation racing the end of a run called RunOptionsSetTerminate on
// options being (or already) released: a use after free in C.
type runOptions struct {
	ro   *ort.RunOptions
	mu   sync.Mutex
	done bool
	stop func() bool
}

func newRunOptions(ctx context.Context) (*runOptions, error) {
	ro, err := ort.NewRunOptions()
	if err != nil {
		return nil, err
	}
	r := &runOptions{ro: ro}
	r.stop = context.AfterFunc(ctx, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if !r.done {
			r.ro.Terminate()
		}
	})
	return r, nil
}

// release stops the cancellation hook, waits for a running one, and frees
// the options. Idempotent.
func (r *runOptions) release() {
	r.stop()
	r.mu.Lock()
	already := r.done
	r.done = true
	r.mu.Unlock()
	if !already {
		r.ro.Destroy()
	}
}
