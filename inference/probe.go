package inference

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"google.golang.org/protobuf/encoding/protowire"

	"fashiond/onnxedit"
)

// Probe graphs: tiny ONNX graphs written on the spot (protobuf fields by
// number, onnx.proto3), so every run kind the engine uses can be checked on
// a node's device without model files: `gpucheck probe` runs each kind in
// its own process, so a kind that crashes ONNX Runtime is named, not fatal.

func pbStr(num protowire.Number, s string) []byte {
	return protowire.AppendString(protowire.AppendTag(nil, num, protowire.BytesType), s)
}

func pbInt(num protowire.Number, v uint64) []byte {
	return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), v)
}

func pbMsg(num protowire.Number, parts ...[]byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), bytes.Join(parts, nil))
}

// tensorIO is a graph input (11) or output (12): elem with dims, ints
// sizes and strings symbolic; an empty non-nil dims is rank 0.
func tensorIO(field protowire.Number, name string, elem onnxedit.Elem, dims ...any) []byte {
	var ds [][]byte
	for _, d := range dims {
		switch d := d.(type) {
		case int:
			ds = append(ds, pbMsg(1, pbInt(1, uint64(d))))
		case string:
			ds = append(ds, pbMsg(1, pbStr(2, d)))
		}
	}
	tensor := pbMsg(1, pbInt(1, uint64(elem)), pbMsg(2, ds...))
	return pbMsg(field, pbStr(1, name), pbMsg(2, tensor))
}

func graphNode(op string, in []string, out []string) []byte {
	var parts [][]byte
	for _, n := range in {
		parts = append(parts, pbStr(1, n))
	}
	for _, n := range out {
		parts = append(parts, pbStr(2, n))
	}
	parts = append(parts, pbStr(3, op+"_"+out[0]), pbStr(4, op))
	return pbMsg(1, parts...)
}

// writeGraph writes a model (IR 8, opset 17) with the given graph fields.
func writeGraph(dir, name string, fields ...[]byte) (string, error) {
	body := append([][]byte{pbStr(2, name)}, fields...)
	model := bytes.Join([][]byte{pbInt(1, 8), pbMsg(8, pbInt(2, 17)), pbMsg(7, body...)}, nil)
	p := filepath.Join(dir, name+".onnx")
	return p, os.WriteFile(p, model, 0o644)
}

// addGraph is y = x + x for elem, x of shape [n, 3] ("n" symbolic).
func addGraph(dir string, elem onnxedit.Elem) (string, error) {
	return writeGraph(dir, "add_"+elem.String(),
		graphNode("Add", []string{"x", "x"}, []string{"y"}),
		tensorIO(11, "x", elem, "n", 3), tensorIO(12, "y", elem, "n", 3))
}

// mixedGraph mirrors the UNet's and text encoder's kinds: int64 ids
// [n,4] cast to float16 and added to a float16 sample [n,4]; a rank-0
// float32 scalar t is echoed.
func mixedGraph(dir string) (string, error) {
	castTo := pbMsg(5, pbStr(1, "to"), pbInt(3, uint64(onnxedit.Float16)), pbInt(20, 2))
	castNode := pbMsg(1, pbStr(1, "ids"), pbStr(2, "ids16"), pbStr(3, "cast"), pbStr(4, "Cast"), castTo)
	return writeGraph(dir, "mixed",
		castNode,
		graphNode("Add", []string{"ids16", "sample"}, []string{"out"}),
		graphNode("Identity", []string{"t"}, []string{"t_out"}),
		tensorIO(11, "ids", onnxedit.Int64, "n", 4), tensorIO(11, "sample", onnxedit.Float16, "n", 4), tensorIO(11, "t", onnxedit.Float),
		tensorIO(12, "out", onnxedit.Float16, "n", 4), tensorIO(12, "t_out", onnxedit.Float))
}

// ProbeKinds are the run kinds Probe checks, in the order gpucheck runs them.
var ProbeKinds = []string{
	"float32-runtime-out",  // float32 in, output allocated by ONNX Runtime (Session.Run's kind)
	"float32-prealloc-out", // float32 in, pre-allocated float32 output
	"int32-prealloc-out",   // int32 in and pre-allocated out
	"int64-runtime-out",    // int64 in, output allocated by ONNX Runtime
	"int64-prealloc-out",   // int64 in and pre-allocated out (the text encoder's kind)
	"float16-prealloc-out", // float16 in and pre-allocated out (the UNet's kind)
	"mixed-prealloc-out",   // int64 ids + float16 sample + rank-0 float32: all of them at once
	"cancel",               // a run whose context is already cancelled: an error, nothing run
}

// Probe runs one kind on a tiny graph written into dir, on the device this
// runtime chooses, and checks the result. Pre-allocated outputs are kept
// pre-allocated on CUDA too (RunValues otherwise lets ONNX Runtime allocate
// float32 and integer outputs there).
func (r *Runtime) Probe(ctx context.Context, dir, kind string) (device string, err error) {
	elem, d, prealloc := onnxedit.Float, Float32, true
	switch kind {
	case "float32-runtime-out":
		prealloc = false
	case "float32-prealloc-out", "cancel":
	case "int32-prealloc-out":
		elem, d = onnxedit.Int32, Int32
	case "int64-runtime-out":
		elem, d, prealloc = onnxedit.Int64, Int64, false
	case "int64-prealloc-out":
		elem, d = onnxedit.Int64, Int64
	case "float16-prealloc-out":
		elem, d = onnxedit.Float16, Float16
	case "mixed-prealloc-out":
		return r.probeMixed(ctx, dir)
	default:
		return "", fmt.Errorf("inference: unknown probe kind %q (want one of %v)", kind, ProbeKinds)
	}
	path, err := addGraph(dir, elem)
	if err != nil {
		return "", err
	}
	s, err := r.NewSession(ctx, SessionSpec{Name: "probe-" + kind, Path: path, Inputs: []string{"x"}, Outputs: []string{"y"}, KeepPreallocated: true})
	if err != nil {
		return "", err
	}
	defer s.Close()
	in := Value{DType: d, Shape: []int64{2, 3}, F32: []float32{1, 2, 3, 4, 5, 6}, I64: []int64{1, 2, 3, 4, 5, 6}}
	if d.IsFloat() {
		in.I64 = nil
	} else {
		in.F32 = nil
	}
	spec := OutputSpec{DType: d}
	if prealloc {
		spec.Shape = []int64{2, 3}
	}
	runCtx := ctx
	if kind == "cancel" {
		c, cancel := context.WithCancel(ctx)
		cancel()
		runCtx = c
	}
	out, err := s.RunValues(runCtx, []Value{in}, []OutputSpec{spec})
	if kind == "cancel" {
		if !errors.Is(err, context.Canceled) {
			return s.Device(), fmt.Errorf("a cancelled run answered %v, want context.Canceled", err)
		}
		return s.Device(), nil
	}
	if err != nil {
		return s.Device(), err
	}
	for i := range 6 {
		got := float64(i+1) * 2
		if d.IsFloat() && float64(out[0].F32[i]) != got || !d.IsFloat() && float64(out[0].I64[i]) != got {
			return s.Device(), fmt.Errorf("y = %v%v, want x + x", out[0].F32, out[0].I64)
		}
	}
	return s.Device(), nil
}

func (r *Runtime) probeMixed(ctx context.Context, dir string) (string, error) {
	path, err := mixedGraph(dir)
	if err != nil {
		return "", err
	}
	s, err := r.NewSession(ctx, SessionSpec{Name: "probe-mixed", Path: path, Inputs: []string{"ids", "sample", "t"}, Outputs: []string{"out", "t_out"}, KeepPreallocated: true})
	if err != nil {
		return "", err
	}
	defer s.Close()
	out, err := s.RunValues(ctx, []Value{
		{DType: Int64, Shape: []int64{1, 4}, I64: []int64{1, 2, 3, 4}},
		{DType: Float16, Shape: []int64{1, 4}, F32: []float32{0.5, 0.25, -1, 0}},
		{DType: Float32, Shape: []int64{}, F32: []float32{981}},
	}, []OutputSpec{{DType: Float16, Shape: []int64{1, 4}}, {DType: Float32, Shape: []int64{}}})
	if err != nil {
		return s.Device(), err
	}
	if want := []float32{1.5, 2.25, 2, 4}; fmt.Sprint(out[0].F32) != fmt.Sprint(want) || out[1].F32[0] != 981 {
		return s.Device(), fmt.Errorf("outputs %v %v, want %v and 981", out[0].F32, out[1].F32, want)
	}
	return s.Device(), nil
}
