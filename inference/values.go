package inference

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"

	"fashiond/onnxedit"

	ort "github.com/yalue/onnxruntime_go"
)

// DType is a tensor element type as a graph declares it.
type DType int

// The element types the typed API exchanges. Float16 values cross the API as
// float32 and are converted at the boundary (round to nearest even).
const (
	DTypeUnknown DType = iota
	Float32
	Float16
	Int32
	Int64
)

// String is the ONNX name of the type.
func (d DType) String() string {
	switch d {
	case Float32:
		return "float32"
	case Float16:
		return "float16"
	case Int32:
		return "int32"
	case Int64:
		return "int64"
	}
	return "unsupported"
}

// IsFloat reports whether the type carries float data (F32 in a Value).
func (d DType) IsFloat() bool { return d == Float32 || d == Float16 }

func dtypeOf(t ort.TensorElementDataType) DType {
	switch t {
	case ort.TensorElementDataTypeFloat:
		return Float32
	case ort.TensorElementDataTypeFloat16:
		return Float16
	case ort.TensorElementDataTypeInt32:
		return Int32
	case ort.TensorElementDataTypeInt64:
		return Int64
	}
	return DTypeUnknown
}

// IOInfo is one graph input or output as the graph declares it. Dynamic
// dimensions are -1; a rank-0 tensor has no Dims.
type IOInfo struct {
	Name  string
	DType DType
	// Type is the declared element type's name, also for types the typed
	// API does not support (for error messages).
	Type string
	Dims []int64
}

// Rank is the number of dimensions.
func (i IOInfo) Rank() int { return len(i.Dims) }

// Inspect reads the inputs and outputs a graph file declares, without
// creating a session.
func (r *Runtime) Inspect(ctx context.Context, path string) (inputs, outputs []IOInfo, err error) {
	if r == nil {
		return nil, nil, errors.New("inference: Inspect on a nil runtime")
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	// The declarations straight from the file first (onnxedit: the graph's
	// structure only, never the weights), so a multi-GB UNet is not loaded
	// into a throw-away CPU session just to read its inputs; ONNX Runtime
	// reads what onnxedit cannot.
	if in, out, err := onnxedit.Inspect(path); err == nil && knownRanks(in) && knownRanks(out) {
		return editInfos(in), editInfos(out), nil
	}
	var ins, outs []ort.InputOutputInfo
	err = guard(func() error {
		var e error
		ins, outs, e = ort.GetInputOutputInfo(path)
		return e
	})
	if err != nil {
		return nil, nil, fmt.Errorf("inference: read graph %s: %w", path, err)
	}
	return ioInfos(ins), ioInfos(outs), nil
}

// knownRanks: every value declares its shape (ONNX Runtime infers the
// others' ranks, onnxedit cannot).
func knownRanks(list []onnxedit.IO) bool {
	for _, v := range list {
		if v.UnknownRank {
			return false
		}
	}
	return true
}

// editInfos converts onnxedit's declarations to IOInfo as ONNX Runtime would
// report them: symbolic and unknown dimensions are -1.
func editInfos(list []onnxedit.IO) []IOInfo {
	out := make([]IOInfo, len(list))
	for i, v := range list {
		t := ort.TensorElementDataType(v.Elem)
		out[i] = IOInfo{Name: v.Name, DType: dtypeOf(t), Type: t.String(), Dims: []int64{}}
		for _, d := range v.Dims {
			n := d.Value
			if n <= 0 {
				n = -1
			}
			out[i].Dims = append(out[i].Dims, n)
		}
		if v.Elem == onnxedit.Undefined {
			out[i].DType, out[i].Type = DTypeUnknown, "non-tensor"
		}
	}
	return out
}

func ioInfos(list []ort.InputOutputInfo) []IOInfo {
	out := make([]IOInfo, len(list))
	for i, v := range list {
		out[i] = IOInfo{Name: v.Name, DType: dtypeOf(v.DataType), Type: v.DataType.String(), Dims: append([]int64{}, v.Dimensions...)}
		if v.OrtValueType != ort.ONNXTypeTensor {
			out[i].DType, out[i].Type = DTypeUnknown, "non-tensor"
		}
	}
	return out
}

// Value is a typed tensor for RunValues. Float32 and Float16 tensors carry
// F32; Int32 and Int64 tensors carry I64. An empty Shape is a rank-0 tensor
// (a scalar, one element).
type Value struct {
	DType DType
	Shape []int64
	F32   []float32
	I64   []int64
}

// Elements is the product of the shape (1 for a scalar).
func (v Value) Elements() int64 { return Tensor{Shape: v.Shape}.Elements() }

func (v Value) length() int {
	if v.DType.IsFloat() {
		return len(v.F32)
	}
	return len(v.I64)
}

// OutputSpec says what RunValues returns for one output. A zero Shape lets
// ONNX Runtime allocate the output (float32 and integer outputs only);
// float16 outputs must be pre-allocated with their full shape, because
// onnxruntime_go v1.36.0 mis-sizes ORT-allocated float16 outputs.
type OutputSpec struct {
	DType DType
	Shape []int64
}

// RunValues runs the graph on typed inputs. The session must have been
// created with the graph's input and output names in the order of inputs
// and outs. Cancelling ctx terminates a running call.
func (s *Session) RunValues(ctx context.Context, inputs []Value, outs []OutputSpec) ([]Value, error) {
	if s == nil {
		return nil, errors.New("inference: nil session")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(inputs) != len(s.spec.Inputs) || len(outs) != len(s.spec.Outputs) {
		return nil, fmt.Errorf("inference: %s wants %d inputs and %d outputs, got %d and %d",
			s.spec.Name, len(s.spec.Inputs), len(s.spec.Outputs), len(inputs), len(outs))
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.s == nil {
		return nil, fmt.Errorf("inference: session %s is closed", s.spec.Name)
	}
	if err := s.decl.check(inputs, outs); err != nil {
		return nil, fmt.Errorf("inference: run %s: %w", s.spec.Name, err)
	}
	var result []Value
	err := guard(func() error {
		var err error
		result, err = s.runValues(ctx, inputs, outs)
		return err
	})
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
		return nil, fmt.Errorf("inference: run %s: %w", s.spec.Name, err)
	}
	return result, nil
}

func (s *Session) runValues(ctx context.Context, inputs []Value, outs []OutputSpec) ([]Value, error) {
	in := make([]ort.Value, len(inputs))
	ov := make([]ort.Value, len(outs))
	defer destroyAll(in)
	defer destroyAll(ov)
	for i, v := range inputs {
		t, err := newORTValue(v)
		if err != nil {
			return nil, fmt.Errorf("input %s: %w", s.spec.Inputs[i], err)
		}
		in[i] = t
	}
	for i, o := range outs {
		if o.Shape == nil && s.decl != nil && !s.decl.out[i].UnknownRank && len(s.decl.out[i].Dims) == 0 {
			// onnxruntime_go v1.36 cannot wrap a rank-0 output ONNX Runtime
			// allocated ("the shape has no dimensions"): pre-allocate it.
			o.Shape = []int64{}
		}
		if o.Shape != nil && o.DType != Float16 && s.device == "cuda" && !s.spec.KeepPreallocated {
			// On CUDA only the outputs ONNX Runtime allocates are proven
			// (docs/GPU.md, "The SIGSEGV"); float16 outputs cannot be.
			o.Shape = nil
		}
		if o.Shape == nil {
			if o.DType == Float16 {
				return nil, fmt.Errorf("output %s: float16 outputs need a pre-allocated shape", s.spec.Outputs[i])
			}
			continue
		}
		t, err := newORTValue(Value{DType: o.DType, Shape: o.Shape, F32: make([]float32, zeroIfFloat(o, true)), I64: make([]int64, zeroIfFloat(o, false))})
		if err != nil {
			return nil, fmt.Errorf("output %s: %w", s.spec.Outputs[i], err)
		}
		ov[i] = t
	}
	ro, err := newRunOptions(ctx)
	if err != nil {
		return nil, err
	}
	defer ro.release()
	if err := s.s.RunWithOptions(in, ov, ro.ro); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	result := make([]Value, len(ov))
	for i, v := range ov {
		r, err := readORTValue(v, outs[i].DType)
		if err != nil {
			return nil, fmt.Errorf("output %s: %w", s.spec.Outputs[i], err)
		}
		result[i] = r
	}
	return result, nil
}

// zeroIfFloat is the element count of the F32 (float=true) or I64 buffer
// a pre-allocated output needs.
func zeroIfFloat(o OutputSpec, float bool) int {
	if o.DType.IsFloat() == float {
		return int(Tensor{Shape: o.Shape}.Elements())
	}
	return 0
}

// destroyAll destroys the values, skipping nil ones, also a nil pointer in
// a non-nil interface: onnxruntime_go stores one in an output slot when it
// fails to wrap an output ONNX Runtime allocated.
func destroyAll(vs []ort.Value) {
	for _, v := range vs {
		if v == nil {
			continue
		}
		if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && rv.IsNil() {
			continue
		}
		v.Destroy()
	}
}

// newORTValue makes an ORT tensor (or scalar, for an empty shape) from v.
func newORTValue(v Value) (ort.Value, error) {
	if int64(v.length()) != v.Elements() {
		return nil, fmt.Errorf("shape %v needs %d values, got %d", v.Shape, v.Elements(), v.length())
	}
	if len(v.Shape) == 0 {
		return newScalar(v)
	}
	shape := ort.NewShape(v.Shape...)
	switch v.DType {
	case Float32:
		return ort.NewTensor(shape, v.F32)
	case Float16:
		return ort.NewCustomDataTensor(shape, encodeHalf(v.F32), ort.TensorElementDataTypeFloat16)
	case Int64:
		return ort.NewTensor(shape, v.I64)
	case Int32:
		d := make([]int32, len(v.I64))
		for i, x := range v.I64 {
			d[i] = int32(x)
		}
		return ort.NewTensor(shape, d)
	}
	return nil, fmt.Errorf("unsupported element type %s", v.DType)
}

func newScalar(v Value) (ort.Value, error) {
	switch v.DType {
	case Float32:
		return ort.NewScalar(v.F32[0])
	case Int64:
		return ort.NewScalar(v.I64[0])
	case Int32:
		return ort.NewScalar(int32(v.I64[0]))
	case Float16:
		return nil, errors.New("onnxruntime_go cannot create a rank-0 float16 tensor; the graph needs an adapter (fashiond models install writes one)")
	}
	return nil, fmt.Errorf("unsupported element type %s", v.DType)
}

// readORTValue copies an output into a Value.
func readORTValue(v ort.Value, want DType) (Value, error) {
	shape := []int64(v.GetShape().Clone())
	switch t := v.(type) {
	case *ort.Tensor[float32]:
		return Value{DType: Float32, Shape: shape, F32: append([]float32(nil), t.GetData()...)}, nil
	case *ort.Tensor[int64]:
		return Value{DType: Int64, Shape: shape, I64: append([]int64(nil), t.GetData()...)}, nil
	case *ort.Tensor[int32]:
		d := t.GetData()
		out := make([]int64, len(d))
		for i, x := range d {
			out[i] = int64(x)
		}
		return Value{DType: Int32, Shape: shape, I64: out}, nil
	case *ort.Scalar[float32]:
		return Value{DType: Float32, Shape: []int64{}, F32: []float32{t.GetData()}}, nil
	case *ort.Scalar[int64]:
		return Value{DType: Int64, Shape: []int64{}, I64: []int64{t.GetData()}}, nil
	case *ort.Scalar[int32]:
		return Value{DType: Int32, Shape: []int64{}, I64: []int64{int64(t.GetData())}}, nil
	case *ort.CustomDataTensor:
		if want != Float16 {
			return Value{}, fmt.Errorf("custom tensor output, want %s", want)
		}
		return Value{DType: Float16, Shape: shape, F32: decodeHalf(t.GetData())}, nil
	}
	return Value{}, fmt.Errorf("unsupported output %T", v)
}

// encodeHalf converts float32 values to IEEE 754 binary16, little endian.
func encodeHalf(f []float32) []byte {
	b := make([]byte, 2*len(f))
	for i, x := range f {
		binary.LittleEndian.PutUint16(b[2*i:], Float32ToHalf(x))
	}
	return b
}

func decodeHalf(b []byte) []float32 {
	out := make([]float32, len(b)/2)
	for i := range out {
		out[i] = HalfToFloat32(binary.LittleEndian.Uint16(b[2*i:]))
	}
	return out
}
