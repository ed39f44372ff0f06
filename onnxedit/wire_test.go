package onnxedit

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// scan lists the fields of b, or the error that stopped the scan.
func scan(b []byte) ([]field, error) {
	s := newSource(bytes.NewReader(b), int64(len(b)))
	var fs []field
	for f, err := range s.fields(s.all()) {
		if err != nil {
			return fs, err
		}
		fs = append(fs, f)
	}
	return fs, nil
}

func TestFieldsSpans(t *testing.T) {
	var b []byte
	b = protowire.AppendVarint(protowire.AppendTag(b, 1, protowire.VarintType), 300)  // 0..3
	b = protowire.AppendFixed32(protowire.AppendTag(b, 2, protowire.Fixed32Type), 7)  // 3..8
	b = protowire.AppendFixed64(protowire.AppendTag(b, 3, protowire.Fixed64Type), 7)  // 8..17
	b = protowire.AppendString(protowire.AppendTag(b, 4, protowire.BytesType), "abc") // 17..22
	b = append(b, fGroup(5, fVarint(1, 1), fGroup(6, fStr(2, "z")))...)               // 22..31
	b = protowire.AppendString(protowire.AppendTag(b, 2000, protowire.BytesType), "") // 31..34
	want := []field{
		{num: 1, typ: protowire.VarintType, whole: span{0, 3}, val: span{1, 3}, v: 300},
		{num: 2, typ: protowire.Fixed32Type, whole: span{3, 8}, val: span{4, 8}},
		{num: 3, typ: protowire.Fixed64Type, whole: span{8, 17}, val: span{9, 17}},
		{num: 4, typ: protowire.BytesType, whole: span{17, 22}, val: span{19, 22}},
		{num: 5, typ: protowire.StartGroupType, whole: span{22, 31}, val: span{23, 31}},
		{num: 2000, typ: protowire.BytesType, whole: span{31, 34}, val: span{34, 34}},
	}
	got, err := scan(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("fields = %+v\nwant %+v", got, want)
	}
}

func TestFieldsMalformed(t *testing.T) {
	deep := []byte{}
	for range maxDepth + 2 {
		deep = protowire.AppendTag(deep, 1, protowire.StartGroupType)
	}
	cases := map[string][]byte{
		"truncated tag":         {0x80},
		"truncated varint":      {0x08, 0x80, 0x80},
		"length past end":       {0x0a, 0x05, 'a'},
		"fixed32 past end":      {0x15, 1, 2},
		"fixed64 past end":      {0x19, 1, 2, 3, 4, 5, 6, 7},
		"field number 0":        {0x00, 0x01},
		"wire type 6":           {0x0e},
		"stray end group":       protowire.AppendTag(nil, 1, protowire.EndGroupType),
		"unclosed group":        protowire.AppendTag(nil, 1, protowire.StartGroupType),
		"group closed as other": append(protowire.AppendTag(nil, 1, protowire.StartGroupType), protowire.AppendTag(nil, 2, protowire.EndGroupType)...),
		"groups too deep":       deep,
	}
	for name, b := range cases {
		if _, err := scan(b); !errors.Is(err, errMalformed) {
			t.Errorf("%s: error = %v, want malformed", name, err)
		}
	}
}

func TestPlan(t *testing.T) {
	src := []byte("0123456789")
	s := newSource(bytes.NewReader(src), int64(len(src)))
	inner := &plan{}
	inner.copy(span{2, 4})
	inner.copy(span{4, 6}) // merges with the previous range
	inner.lit([]byte("ab"))
	if len(inner.pieces) != 2 || inner.size != 6 {
		t.Fatalf("inner plan = %+v, want 2 pieces of 6 bytes", inner)
	}
	if !(&plan{}).isCopyOf(span{3, 3}) || inner.isCopyOf(span{2, 6}) {
		t.Error("isCopyOf is wrong")
	}
	outer := &plan{}
	outer.copy(span{0, 1})
	outer.message(3, inner)
	var buf bytes.Buffer
	if err := outer.write(&buf, s); err != nil {
		t.Fatal(err)
	}
	if want := "0\x1a\x062345ab"; buf.String() != want || outer.size != int64(len(want)) {
		t.Fatalf("wrote %q (size %d), want %q", buf.String(), outer.size, want)
	}
	short := &plan{}
	short.copy(span{8, 12}) // past the end of the source
	if err := short.write(&buf, s); err == nil {
		t.Error("copy past the end of the source: no error")
	}
}

// seeds are the committed models and the built one with every kind of use.
func seeds(f *testing.F) {
	for _, file := range []string{"scalar_mul.onnx", "multi_use.onnx", "external/model.onnx", "subgraph.onnx"} {
		b, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(useModel(Float16, "x", nil, []byte{0, 60})) // small: big seeds make the fuzzer slow
	f.Add([]byte{})
}

func FuzzInspect(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		g, err := readGraph(newSource(bytes.NewReader(b), int64(len(b))))
		if err == nil {
			g.realInputs()
		}
	})
}

// FuzzCastInput checks that whenever an edit succeeds, its output parses and
// declares the input as float.
func FuzzCastInput(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		s := newSource(bytes.NewReader(b), int64(len(b)))
		p, err := castPlan(s, "x", Float)
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := p.write(&out, s); err != nil {
			t.Fatal(err)
		}
		if int64(out.Len()) != p.size {
			t.Fatalf("wrote %d bytes, planned %d", out.Len(), p.size)
		}
		g, err := readGraph(newSource(bytes.NewReader(out.Bytes()), int64(out.Len())))
		if err != nil {
			t.Fatalf("adapted model does not parse: %v", err)
		}
		for _, in := range g.realInputs() {
			if in.Name == "x" && in.Elem != Float {
				t.Fatalf("adapted input x is %v", in.Elem)
			}
		}
	})
}
