package inference

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"fashiond/onnxedit"
)

// Small ONNX graphs written in the test, so every run kind is exercised on
// the CPU without model files: protobuf fields by number (onnx.proto3).

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
func writeGraph(t testing.TB, name string, fields ...[]byte) string {
	t.Helper()
	body := append([][]byte{pbStr(2, name)}, fields...)
	model := bytes.Join([][]byte{pbInt(1, 8), pbMsg(8, pbInt(2, 17)), pbMsg(7, body...)}, nil)
	p := filepath.Join(t.TempDir(), name+".onnx")
	if err := os.WriteFile(p, model, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// addGraph is y = x + x for elem, x of shape [n, 3] ("n" symbolic).
func addGraph(t testing.TB, elem onnxedit.Elem) string {
	return writeGraph(t, "add_"+elem.String(),
		graphNode("Add", []string{"x", "x"}, []string{"y"}),
		tensorIO(11, "x", elem, "n", 3), tensorIO(12, "y", elem, "n", 3))
}

// diffusionLikeGraph mirrors the UNet's and text encoder's kinds: int64 ids
// [n,4] cast to float16 and added to a float16 sample [n,4]; a rank-0
// float32 scalar t is echoed.
func diffusionLikeGraph(t testing.TB) string {
	castTo := pbMsg(5, pbStr(1, "to"), pbInt(3, uint64(onnxedit.Float16)), pbInt(20, 2))
	castNode := pbMsg(1, pbStr(1, "ids"), pbStr(2, "ids16"), pbStr(3, "cast"), pbStr(4, "Cast"), castTo)
	return writeGraph(t, "mixed",
		castNode,
		graphNode("Add", []string{"ids16", "sample"}, []string{"out"}),
		graphNode("Identity", []string{"t"}, []string{"t_out"}),
		tensorIO(11, "ids", onnxedit.Int64, "n", 4), tensorIO(11, "sample", onnxedit.Float16, "n", 4), tensorIO(11, "t", onnxedit.Float),
		tensorIO(12, "out", onnxedit.Float16, "n", 4), tensorIO(12, "t_out", onnxedit.Float))
}
