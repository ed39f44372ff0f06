package onnxedit

import (
	"bytes"

	"google.golang.org/protobuf/encoding/protowire"
)

// Protobuf builders for test models: each returns one encoded field.

func fStr(num protowire.Number, s string) []byte {
	return protowire.AppendString(protowire.AppendTag(nil, num, protowire.BytesType), s)
}

func fVarint(num protowire.Number, v uint64) []byte {
	return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), v)
}

func fMsg(num protowire.Number, parts ...[]byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), bytes.Join(parts, nil))
}

// fGroup is a group field (a deprecated wire type, here as an unknown field).
func fGroup(num protowire.Number, parts ...[]byte) []byte {
	b := protowire.AppendTag(nil, num, protowire.StartGroupType)
	b = append(b, bytes.Join(parts, nil)...)
	return protowire.AppendTag(b, num, protowire.EndGroupType)
}

// valueInfo is a graph input/output/value_info field: a tensor of elem with
// the given dims (ints are sizes, strings params); nil dims means no shape.
func valueInfo(num protowire.Number, name string, elem Elem, dims []any) []byte {
	tensor := [][]byte{fVarint(tensorElem, uint64(elem))}
	if dims != nil {
		var ds [][]byte
		for _, d := range dims {
			switch d := d.(type) {
			case int:
				ds = append(ds, fMsg(shapeDim, fVarint(dimValue, uint64(d))))
			case string:
				ds = append(ds, fMsg(shapeDim, fStr(dimParam, d)))
			}
		}
		tensor = append(tensor, fMsg(tensorShape, ds...))
	}
	return fMsg(num, fStr(valueInfoName, name), fMsg(valueInfoType, fMsg(typeTensor, tensor...)))
}

// node is a graph node field.
func node(op, name string, inputs, outputs []string, attrs ...[]byte) []byte {
	var parts [][]byte
	for _, in := range inputs {
		parts = append(parts, fStr(nodeInput, in))
	}
	for _, out := range outputs {
		parts = append(parts, fStr(nodeOutput, out))
	}
	parts = append(parts, fStr(nodeName, name), fStr(nodeOpType, op))
	for _, a := range attrs {
		parts = append(parts, fMsg(nodeAttribute, a))
	}
	return fMsg(graphNode, parts...)
}

// initializer is a float16 TensorProto field with raw data.
func initializer(name string, raw []byte) []byte {
	return fMsg(graphInitializer, fVarint(2, uint64(Float16)), fStr(tensorName, name), fMsg(9, raw))
}

// model wraps a graph body in a ModelProto with an opset and unknown fields.
func model(graph ...[]byte) []byte {
	return bytes.Join([][]byte{
		fVarint(1, 8), // ir_version
		fMsg(modelOpset, fVarint(opsetVer, 13)),
		fMsg(graphUnknownModel, []byte{1, 2, 3}),
		fMsg(modelGraph, graph...),
		fGroup(graphUnknownGroup, fVarint(1, 5)),
	}, nil)
}

// Unknown field numbers the tests put in, to see them copied.
const (
	graphUnknownModel = 999
	graphUnknownGroup = 998
	graphUnknown      = 900
)

// payload is raw initializer data larger than the read window, so that field
// headers straddle window boundaries and copies go by range.
var payload = func() []byte {
	b := make([]byte, 3*readWindow+17)
	for i := range b {
		b[i] = byte(i * 7)
	}
	return b
}()

// useModel is a graph that uses float16 input x (rank 0) in two nodes, as a
// graph output, in an If branch and in value_info; ref is the name those uses
// read and cast, when not nil, is the Cast node put before the first node; raw
// is the data of initializer two.
// With ref "x", xElem Float16 and no cast it is the source model; with the
// adapted names it is exactly what CastInput must write.
func useModel(xElem Elem, ref string, cast, raw []byte) []byte {
	branch := fMsg(attrG,
		node("Identity", "inner", []string{ref}, []string{"inner_y"}),
		valueInfo(graphOutput, "inner_y", Float16, []any{}),
		valueInfo(graphOutput, ref, Float16, []any{}))
	nodes := [][]byte{
		node("Mul", "mul", []string{ref, "two"}, []string{"doubled"}),
		fMsg(graphUnknown, []byte("keep me")),
		node("Add", "add", []string{"two", ref}, []string{"plus"}, fStr(attrName, "unused")),
		node("If", "if", []string{"cond"}, []string{"branch_y", "branch_x"},
			bytes.Join([][]byte{fStr(attrName, "then_branch"), branch}, nil),
			bytes.Join([][]byte{fStr(attrName, "else_branch"), branch}, nil)),
		node("Neg", "neg", []string{"two"}, []string{"minus_two"}),
	}
	if cast != nil {
		nodes = append([][]byte{cast}, nodes...)
	}
	parts := [][]byte{
		fStr(2, "use_model"),
		valueInfo(graphInput, "cond", Float, []any{}),
		valueInfo(graphInput, "x", xElem, []any{}),
		valueInfo(graphInput, "two", Float16, []any{}),
		initializer("two", raw),
	}
	parts = append(parts, nodes...)
	parts = append(parts,
		valueInfo(graphOutput, "doubled", Float16, []any{}),
		valueInfo(graphOutput, ref, Float16, []any{}),
		valueInfo(graphValueInfo, ref, Float16, []any{}),
		valueInfo(graphValueInfo, "plus", Float16, []any{1, "n"}),
	)
	return model(parts...)
}

// castNodeField is the Cast node CastInput adds for input x of type from.
func castNodeField(name, cast string, from Elem) []byte {
	return node("Cast", cast, []string{name}, []string{cast},
		bytes.Join([][]byte{fStr(attrName, "to"), fVarint(attrI, uint64(from)), fVarint(attrType, attrInt)}, nil))
}
