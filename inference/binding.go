package inference

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"

	ort "github.com/yalue/onnxruntime_go"
)

// Binding binds a session's inputs and outputs once and runs it many times
// (ONNX Runtime's IoBinding): an input that does not change between runs
// (a job's text embeddings) is uploaded once, one that does (the latents)
// is overwritten in place with SetInput, and outputs land in bound buffers
// read with Output; no ORT value is created per run.
//
// onnxruntime_go v1.36 binds host (Go-backed) tensors only: it wraps neither
// BindOutputToDevice nor tensors from a device allocator, so on CUDA ONNX
// Runtime still copies bound inputs to the device and outputs back on each
// run (docs/GPU.md). Run cannot be interrupted: RunWithBinding takes no
// RunOptions in v1.36, so ctx is checked before the run only.
type Binding struct {
	s   *Session
	mu  sync.Mutex
	b   *ort.IoBinding
	val map[string]*bound
}

// bound is one bound tensor and the Go buffer behind it.
type bound struct {
	v     ort.Value
	dtype DType
	shape []int64
	f32   []float32 // Float32
	half  []byte    // Float16
	i64   []int64   // Int64
	i32   []int32   // Int32
}

// NewBinding creates an empty binding on s. Close it before s.
func (s *Session) NewBinding() (*Binding, error) {
	if s == nil {
		return nil, errors.New("inference: NewBinding on a nil session")
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.s == nil {
		return nil, fmt.Errorf("inference: session %s is closed", s.spec.Name)
	}
	var b *ort.IoBinding
	if err := guard(func() (err error) { b, err = s.s.CreateIoBinding(); return err }); err != nil {
		return nil, fmt.Errorf("inference: %s: bind: %w", s.spec.Name, err)
	}
	return &Binding{s: s, b: b, val: map[string]*bound{}}, nil
}

// BindInput binds v to the named input (a copy of its data).
func (b *Binding) BindInput(name string, v Value) error {
	i := slices.Index(b.s.spec.Inputs, name)
	if i < 0 {
		return fmt.Errorf("inference: %s: no input %q (the session has %v)", b.s.spec.Name, name, b.s.spec.Inputs)
	}
	if b.s.decl != nil {
		if err := checkValue(b.s.decl.in[i], v.DType, v.Shape); err != nil {
			return fmt.Errorf("inference: %s: input %s: %w", b.s.spec.Name, name, err)
		}
	}
	return b.bind(name, v, true)
}

// BindOutput binds a pre-allocated buffer of o's type and shape to the
// named output.
func (b *Binding) BindOutput(name string, o OutputSpec) error {
	i := slices.Index(b.s.spec.Outputs, name)
	if i < 0 {
		return fmt.Errorf("inference: %s: no output %q (the session has %v)", b.s.spec.Name, name, b.s.spec.Outputs)
	}
	if o.Shape == nil {
		return fmt.Errorf("inference: %s: output %s: a bound output needs its shape", b.s.spec.Name, name)
	}
	if b.s.decl != nil {
		if err := checkValue(b.s.decl.out[i], o.DType, o.Shape); err != nil {
			return fmt.Errorf("inference: %s: output %s: %w", b.s.spec.Name, name, err)
		}
	}
	n := Tensor{Shape: o.Shape}.Elements()
	v := Value{DType: o.DType, Shape: o.Shape}
	if o.DType.IsFloat() {
		v.F32 = make([]float32, n)
	} else {
		v.I64 = make([]int64, n)
	}
	return b.bind(name, v, false)
}

func (b *Binding) bind(name string, v Value, input bool) error {
	if int64(v.length()) != v.Elements() {
		return fmt.Errorf("inference: %s: %s: shape %v needs %d values, got %d", b.s.spec.Name, name, v.Shape, v.Elements(), v.length())
	}
	if len(v.Shape) == 0 {
		return fmt.Errorf("inference: %s: %s: rank-0 tensors cannot be bound (onnxruntime_go v1.36); use RunValues", b.s.spec.Name, name)
	}
	bv := &bound{dtype: v.DType, shape: slices.Clone(v.Shape)}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.b == nil {
		return fmt.Errorf("inference: %s: binding closed", b.s.spec.Name)
	}
	err := guard(func() error {
		var err error
		shape := ort.NewShape(v.Shape...)
		switch v.DType {
		case Float32:
			bv.f32 = slices.Clone(v.F32)
			bv.v, err = ort.NewTensor(shape, bv.f32)
		case Float16:
			bv.half = encodeHalf(v.F32)
			bv.v, err = ort.NewCustomDataTensor(shape, bv.half, ort.TensorElementDataTypeFloat16)
		case Int64:
			bv.i64 = slices.Clone(v.I64)
			bv.v, err = ort.NewTensor(shape, bv.i64)
		case Int32:
			bv.i32 = make([]int32, len(v.I64))
			for i, x := range v.I64 {
				bv.i32[i] = int32(x)
			}
			bv.v, err = ort.NewTensor(shape, bv.i32)
		default:
			return fmt.Errorf("unsupported element type %s", v.DType)
		}
		if err != nil {
			return err
		}
		if input {
			return b.b.BindInput(name, bv.v)
		}
		return b.b.BindOutput(name, bv.v)
	})
	if err != nil {
		if bv.v != nil {
			bv.v.Destroy()
		}
		return fmt.Errorf("inference: %s: bind %s: %w", b.s.spec.Name, name, err)
	}
	if old := b.val[name]; old != nil {
		old.v.Destroy()
	}
	b.val[name] = bv
	return nil
}

// SetInput overwrites a bound input's values in place (same type and
// shape), so the next Run sees them without re-binding.
func (b *Binding) SetInput(name string, f32 []float32, i64 []int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	bv := b.val[name]
	if bv == nil || !slices.Contains(b.s.spec.Inputs, name) {
		return fmt.Errorf("inference: %s: input %s is not bound", b.s.spec.Name, name)
	}
	n := int(Tensor{Shape: bv.shape}.Elements())
	if got := max(len(f32), len(i64)); got != n || (bv.dtype.IsFloat() != (len(f32) == n)) {
		return fmt.Errorf("inference: %s: input %s: want %d %s values", b.s.spec.Name, name, n, bv.dtype)
	}
	switch bv.dtype {
	case Float32:
		copy(bv.f32, f32)
	case Float16:
		for i, x := range f32 {
			binary.LittleEndian.PutUint16(bv.half[2*i:], Float32ToHalf(x))
		}
	case Int64:
		copy(bv.i64, i64)
	case Int32:
		for i, x := range i64 {
			bv.i32[i] = int32(x)
		}
	}
	return nil
}

// Run runs the session on the bound values.
func (b *Binding) Run(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.s.mu.RLock()
	defer b.s.mu.RUnlock()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.b == nil || b.s.s == nil {
		return fmt.Errorf("inference: %s: binding or session closed", b.s.spec.Name)
	}
	for _, n := range append(slices.Clone(b.s.spec.Inputs), b.s.spec.Outputs...) {
		if b.val[n] == nil {
			return fmt.Errorf("inference: %s: %s is not bound", b.s.spec.Name, n)
		}
	}
	if err := guard(func() error { return b.s.s.RunWithBinding(b.b) }); err != nil {
		return fmt.Errorf("inference: run %s: %w", b.s.spec.Name, err)
	}
	return nil
}

// Output copies a bound output's values.
func (b *Binding) Output(name string) (Value, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	bv := b.val[name]
	if bv == nil || !slices.Contains(b.s.spec.Outputs, name) {
		return Value{}, fmt.Errorf("inference: %s: output %s is not bound", b.s.spec.Name, name)
	}
	v := Value{DType: bv.dtype, Shape: slices.Clone(bv.shape)}
	switch bv.dtype {
	case Float32:
		v.F32 = slices.Clone(bv.f32)
	case Float16:
		v.F32 = decodeHalf(bv.half)
	case Int64:
		v.I64 = slices.Clone(bv.i64)
	case Int32:
		for _, x := range bv.i32 {
			v.I64 = append(v.I64, int64(x))
		}
	}
	return v, nil
}

// Close releases the binding and its tensors. Idempotent and nil-safe.
func (b *Binding) Close() error {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.b == nil {
		return nil
	}
	err := guard(b.b.Destroy)
	b.b = nil
	for n, bv := range b.val {
		bv.v.Destroy()
		delete(b.val, n)
	}
	return err
}
