package onnxedit

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// writeTemp writes b to a file in a fresh temporary directory.
func writeTemp(t *testing.T, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o640); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestInspectTestdata(t *testing.T) {
	scalar := func(name string, e Elem) IO { return IO{Name: name, Elem: e} }
	cases := []struct {
		file    string
		inputs  []IO
		outputs []IO
	}{
		{"scalar_mul.onnx", []IO{scalar("x", Float16)}, []IO{scalar("y", Float)}},
		{"multi_use.onnx",
			[]IO{{Name: "x", Elem: Float16, Dims: []Dim{{Param: "n"}}}},
			[]IO{{Name: "ya", Elem: Float, Dims: []Dim{{Param: "n"}}},
				{Name: "yb", Elem: Float, Dims: []Dim{{Param: "n"}}},
				{Name: "x", Elem: Float16, Dims: []Dim{{Param: "n"}}}}},
		{"external/model.onnx",
			[]IO{{Name: "x", Elem: Float16, Dims: []Dim{{Value: 1}}}},
			[]IO{{Name: "y", Elem: Float, Dims: []Dim{{Value: 1024}}}}},
		{"subgraph.onnx",
			[]IO{{Name: "x", Elem: Float16, Dims: []Dim{{Value: 1}}}},
			[]IO{{Name: "y", Elem: Float, Dims: []Dim{{Value: 1}}}}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			in, out, err := Inspect(filepath.Join("testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(in, c.inputs) {
				t.Errorf("inputs = %+v, want %+v", in, c.inputs)
			}
			if !reflect.DeepEqual(out, c.outputs) {
				t.Errorf("outputs = %+v, want %+v", out, c.outputs)
			}
		})
	}
}

func TestInspectDeclarations(t *testing.T) {
	p := writeTemp(t, "m.onnx", model(
		valueInfo(graphInput, "w", Float16, []any{2}), // also an initializer: not a real input
		initializer("w", []byte{0, 0, 0, 0}),
		valueInfo(graphInput, "any", Int64, nil),
		valueInfo(graphInput, "img", Float, []any{1, 3, "h", "w"}),
		fMsg(graphInput, fStr(valueInfoName, "seq"), fMsg(valueInfoType, fMsg(4))), // sequence type
		valueInfo(graphOutput, "d", Double, []any{0}),
	))
	in, out, err := Inspect(p)
	if err != nil {
		t.Fatal(err)
	}
	wantIn := []IO{
		{Name: "any", Elem: Int64, UnknownRank: true},
		{Name: "img", Elem: Float, Dims: []Dim{{Value: 1}, {Value: 3}, {Param: "h"}, {Param: "w"}}},
		{Name: "seq", UnknownRank: true},
	}
	wantOut := []IO{{Name: "d", Elem: Double, Dims: []Dim{{Value: 0}}}}
	if !reflect.DeepEqual(in, wantIn) {
		t.Errorf("inputs = %+v, want %+v", in, wantIn)
	}
	if !reflect.DeepEqual(out, wantOut) {
		t.Errorf("outputs = %+v, want %+v", out, wantOut)
	}
}

// TestCastInputExactBytes compares the adapted file with the model built
// directly with the adapted names: everything but the edit is byte-identical
// (unknown fields and groups, the initializer's payload, field order).
func TestCastInputExactBytes(t *testing.T) {
	const cast = "x" + castSuffix
	cases := []struct {
		to   Elem
		want []byte
	}{
		{Float, useModel(Float, cast, castNodeField("x", cast, Float16), payload)},
		{Double, useModel(Double, cast, castNodeField("x", cast, Float16), payload)},
	}
	for _, c := range cases {
		t.Run(c.to.String(), func(t *testing.T) {
			src := writeTemp(t, "m.onnx", useModel(Float16, "x", nil, payload))
			dst := filepath.Join(filepath.Dir(src), "adapted.onnx")
			if err := CastInput(src, dst, "x", c.to); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(dst)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, c.want) {
				t.Fatalf("adapted model differs from the expected bytes (got %d bytes, want %d)", len(got), len(c.want))
			}
		})
	}
}

// TestCastInputGraphWithoutNodes puts the Cast node at the end of a graph
// that has none, with the graph output that passed x through renamed.
func TestCastInputGraphWithoutNodes(t *testing.T) {
	const cast = "x" + castSuffix
	src := writeTemp(t, "m.onnx", model(
		valueInfo(graphInput, "x", Float16, []any{}),
		valueInfo(graphOutput, "x", Float16, []any{}),
	))
	want := model(
		valueInfo(graphInput, "x", Float, []any{}),
		valueInfo(graphOutput, cast, Float16, []any{}),
		castNodeField("x", cast, Float16),
	)
	if err := CastInput(src, src, "x", Float); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("adapted model differs from the expected bytes")
	}
}

// TestCastInputAvoidsTakenNames: the usual Cast name is taken by a value and
// the next by a node, so the edit uses the third.
func TestCastInputAvoidsTakenNames(t *testing.T) {
	taken1, taken2, free := "t"+castSuffix, "t"+castSuffix+"2", "t"+castSuffix+"3"
	body := func(elem Elem, ref string, cast []byte) []byte {
		nodes := [][]byte{
			node("Relu", taken2, []string{"v"}, []string{taken1}),
			node("Abs", "abs", []string{ref}, []string{"y"}),
		}
		if cast != nil {
			nodes = append([][]byte{cast}, nodes...)
		}
		return model(append([][]byte{
			valueInfo(graphInput, "t", elem, []any{}),
			valueInfo(graphInput, "v", Float, []any{}),
		}, nodes...)...)
	}
	src := writeTemp(t, "m.onnx", body(Float16, "t", nil))
	if err := CastInput(src, src, "t", Float); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if want := body(Float, free, castNodeField("t", free, Float16)); !bytes.Equal(got, want) {
		t.Fatal("adapted model differs from the expected bytes")
	}
}

// TestCastInputTestdata adapts the committed models: the input becomes float
// with its shape kept, the other inputs and outputs stay, and every
// initializer field (external data references included) is byte-identical.
func TestCastInputTestdata(t *testing.T) {
	for _, file := range []string{"scalar_mul.onnx", "multi_use.onnx", "external/model.onnx", "subgraph.onnx"} {
		t.Run(file, func(t *testing.T) {
			src := filepath.Join("testdata", file)
			dst := filepath.Join(t.TempDir(), "adapted.onnx")
			if err := CastInput(src, dst, "x", Float); err != nil {
				t.Fatal(err)
			}
			in0, out0, err := Inspect(src)
			if err != nil {
				t.Fatal(err)
			}
			in, out, err := Inspect(dst)
			if err != nil {
				t.Fatal(err)
			}
			in0[0].Elem = Float
			for i := range out0 {
				if out0[i].Name == "x" {
					out0[i].Name = "x" + castSuffix
				}
			}
			if !reflect.DeepEqual(in, in0) || !reflect.DeepEqual(out, out0) {
				t.Errorf("adapted declares %+v → %+v, want %+v → %+v", in, out, in0, out0)
			}
			if a, b := initializerFields(t, src), initializerFields(t, dst); !reflect.DeepEqual(a, b) || len(a) == 0 {
				t.Errorf("initializers changed: %d fields before, %d after", len(a), len(b))
			}
		})
	}
}

// initializerFields returns the raw bytes of the graph's initializer fields.
func initializerFields(t *testing.T, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var graph []byte
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if n < 0 || m < 0 {
			t.Fatalf("%s: bad field", path)
		}
		if num == modelGraph {
			graph, _ = protowire.ConsumeBytes(b[n:])
		}
		b = b[n+m:]
	}
	var inits [][]byte
	for len(graph) > 0 {
		num, typ, n := protowire.ConsumeTag(graph)
		m := protowire.ConsumeFieldValue(num, typ, graph[n:])
		if num == graphInitializer {
			inits = append(inits, graph[:n+m])
		}
		graph = graph[n+m:]
	}
	return inits
}

func TestCastInputErrors(t *testing.T) {
	good := useModel(Float16, "x", nil, payload)
	cases := []struct {
		name   string
		model  []byte
		input  string
		to     Elem
		target error  // errors.Is target, or nil
		text   string // in the message
	}{
		{"unknown input", good, "nope", Float, ErrUnknownInput, `"nope"`},
		{"already float16", good, "x", Float16, ErrSameType, "float16"},
		{"initializer", good, "two", Float, ErrUnknownInput, "initializer"},
		{"output only", good, "doubled", Float, ErrUnknownInput, "doubled"},
		{"unsupported target", good, "x", Elem(3), nil, "Elem(3)"},
		{"not a tensor", model(fMsg(graphInput, fStr(valueInfoName, "s"), fMsg(valueInfoType, fMsg(4)))),
			"s", Float, nil, "not a tensor"},
		{"node outputs the input", model(valueInfo(graphInput, "x", Float16, []any{}),
			node("Relu", "r", []string{"x"}, []string{"x"})), "x", Float, nil, "outputs a value"},
		{"subgraph shadows the input", model(valueInfo(graphInput, "x", Float16, []any{}),
			node("Loop", "l", nil, nil, bytes.Join([][]byte{fStr(attrName, "body"),
				fMsg(attrG, valueInfo(graphInput, "x", Float16, []any{}))}, nil))), "x", Float, nil, "subgraph declares"},
		{"no graph", fVarint(1, 8), "x", Float, nil, "no graph"},
		{"no ai.onnx opset", bytes.Join([][]byte{fMsg(modelOpset, fStr(opsetDomain, "com.example"), fVarint(opsetVer, 13)),
			fMsg(modelGraph, valueInfo(graphInput, "x", Float16, []any{}))}, nil), "x", Float, nil, "no ai.onnx opset"},
		{"opset 5", bytes.Join([][]byte{fMsg(modelOpset, fStr(opsetDomain, "ai.onnx"), fVarint(opsetVer, 5)),
			fMsg(modelGraph, valueInfo(graphInput, "x", Float16, []any{}))}, nil), "x", Float, nil, "opset 5"},
		{"two graphs", append(model(), fMsg(modelGraph)...), "x", Float, errMalformed, "repeated"},
		{"truncated", good[:len(good)-5], "x", Float, errMalformed, "malformed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := writeTemp(t, "m.onnx", c.model)
			dst := filepath.Join(filepath.Dir(src), "out.onnx")
			err := CastInput(src, dst, c.input, c.to)
			if err == nil {
				t.Fatal("no error")
			}
			if c.target != nil && !errors.Is(err, c.target) {
				t.Errorf("error %v does not wrap %v", err, c.target)
			}
			for _, s := range []string{src, `"` + c.input + `"`, c.text} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %s", err, s)
				}
			}
			if left := dirNames(t, filepath.Dir(src)); !reflect.DeepEqual(left, []string{"m.onnx"}) {
				t.Errorf("files left after a failure: %v", left)
			}
		})
	}
}

func TestCastInputMissingFile(t *testing.T) {
	src := filepath.Join(t.TempDir(), "absent.onnx")
	err := CastInput(src, src+".out", "x", Float)
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), src) {
		t.Fatalf("error = %v, want a not-exist error naming %s", err, src)
	}
	if _, _, err := Inspect(src); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Inspect error = %v, want not exist", err)
	}
}

// TestCastInputInPlace keeps the file mode and leaves no temporary file.
func TestCastInputInPlace(t *testing.T) {
	src := writeTemp(t, "m.onnx", useModel(Float16, "x", nil, payload))
	if err := os.Chmod(src, 0o604); err != nil {
		t.Fatal(err)
	}
	if err := CastInput(src, src, "x", Float); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(src)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o604 {
		t.Errorf("mode = %v, want 0604", st.Mode().Perm())
	}
	if left := dirNames(t, filepath.Dir(src)); !reflect.DeepEqual(left, []string{"m.onnx"}) {
		t.Errorf("directory holds %v, want only m.onnx", left)
	}
	if err := CastInput(src, src, "x", Float); !errors.Is(err, ErrSameType) {
		t.Errorf("second cast: %v, want ErrSameType", err)
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func TestElemString(t *testing.T) {
	cases := map[Elem]string{Float: "float", Int32: "int32", Int64: "int64", Float16: "float16", Double: "double", Undefined: "undefined", 16: "Elem(16)"}
	for e, want := range cases {
		if got := e.String(); got != want {
			t.Errorf("Elem(%d).String() = %q, want %q", int32(e), got, want)
		}
	}
}

func TestFreeName(t *testing.T) {
	cases := []struct {
		taken []string
		want  string
	}{
		{nil, "a"},
		{[]string{"a"}, "a2"},
		{[]string{"a", "a2", "a3"}, "a4"},
		{[]string{"a2"}, "a"},
	}
	for _, c := range cases {
		taken := map[string]bool{}
		for _, n := range c.taken {
			taken[n] = true
		}
		if got := freeName("a", taken); got != c.want {
			t.Errorf("freeName(a, %v) = %q, want %q", c.taken, got, c.want)
		}
	}
}
