package onnxedit

import (
	"errors"
	"fmt"
	"os"

	"google.golang.org/protobuf/encoding/protowire"
)

// Inspect reads the declared graph inputs (excluding those that are also
// initializers) and outputs of the model at path.
func Inspect(path string) (inputs, outputs []IO, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("onnxedit: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("onnxedit: %w", err)
	}
	g, err := readGraph(newSource(f, st.Size()))
	if err != nil {
		return nil, nil, fmt.Errorf("onnxedit: inspect %s: %w", path, err)
	}
	return g.realInputs(), g.outputs, nil
}

// graphInfo is what Inspect and CastInput need to know of the main graph.
type graphInfo struct {
	model        span // ModelProto.graph field, tag included
	body         span // the GraphProto itself
	inputs       []IO
	outputs      []IO
	initializers map[string]bool
}

// realInputs are the inputs that are not also initializers.
func (g *graphInfo) realInputs() []IO {
	var in []IO
	for _, vi := range g.inputs {
		if !g.initializers[vi.Name] {
			in = append(in, vi)
		}
	}
	return in
}

// readGraph finds the model's graph and reads its inputs, outputs and
// initializer names.
func readGraph(s *source) (*graphInfo, error) {
	g := &graphInfo{initializers: map[string]bool{}, model: span{-1, -1}}
	for f, err := range s.fields(s.all()) {
		if err != nil {
			return nil, err
		}
		if f.num != modelGraph {
			continue
		}
		if f.typ != protowire.BytesType || g.model.off >= 0 {
			return nil, fmt.Errorf("%w: ModelProto.graph is repeated or not a message", errMalformed)
		}
		g.model, g.body = f.whole, f.val
	}
	if g.model.off < 0 {
		return nil, errors.New("the model has no graph")
	}
	for f, err := range s.fields(g.body) {
		if err != nil {
			return nil, err
		}
		if err := g.add(s, f); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// add records one GraphProto field.
func (g *graphInfo) add(s *source, f field) error {
	switch f.num {
	case graphInput, graphOutput:
		if err := wantBytes(f); err != nil {
			return err
		}
		vi, err := readValueInfo(s, f.val)
		if err != nil {
			return err
		}
		if f.num == graphInput {
			g.inputs = append(g.inputs, vi)
		} else {
			g.outputs = append(g.outputs, vi)
		}
	case graphInitializer, graphSparseInitializer:
		name, err := initializerName(s, f)
		if err != nil {
			return err
		}
		g.initializers[name] = true
	}
	return nil
}

// wantBytes fails unless f is length-delimited (a message or a string).
func wantBytes(f field) error {
	if f.typ != protowire.BytesType {
		return fmt.Errorf("%w: field %d has wire type %d, want bytes", errMalformed, f.num, f.typ)
	}
	return nil
}

// initializerName is the name of an initializer (TensorProto) or sparse
// initializer (SparseTensorProto, named by its values tensor).
func initializerName(s *source, f field) (string, error) {
	if err := wantBytes(f); err != nil {
		return "", err
	}
	if f.num == graphSparseInitializer {
		values, err := lastField(s, f.val, sparseValues)
		if err != nil || values == nil {
			return "", err
		}
		return initializerName(s, *values)
	}
	name, err := lastField(s, f.val, tensorName)
	if err != nil || name == nil {
		return "", err
	}
	return s.str(*name)
}

// lastField finds the last occurrence of field num in the message sp (the
// one that wins when protobuf merges), or nil.
func lastField(s *source, sp span, num protowire.Number) (*field, error) {
	var last *field
	for f, err := range s.fields(sp) {
		if err != nil {
			return nil, err
		}
		if f.num == num {
			last = &f
		}
	}
	if last != nil && last.typ != protowire.BytesType {
		return nil, wantBytes(*last)
	}
	return last, nil
}

// readValueInfo decodes a ValueInfoProto.
func readValueInfo(s *source, sp span) (IO, error) {
	vi := IO{UnknownRank: true}
	for f, err := range s.fields(sp) {
		if err != nil {
			return IO{}, err
		}
		switch f.num {
		case valueInfoName:
			if vi.Name, err = s.str(f); err != nil {
				return IO{}, err
			}
		case valueInfoType:
			if err := wantBytes(f); err != nil {
				return IO{}, err
			}
			tensor, err := lastField(s, f.val, typeTensor)
			if err != nil {
				return IO{}, err
			}
			vi.Elem, vi.Dims, vi.UnknownRank = Undefined, nil, true
			if tensor != nil {
				if err := readTensorType(s, tensor.val, &vi); err != nil {
					return IO{}, err
				}
			}
		}
	}
	return vi, nil
}

// readTensorType decodes a TypeProto.Tensor into vi.
func readTensorType(s *source, sp span, vi *IO) error {
	for f, err := range s.fields(sp) {
		if err != nil {
			return err
		}
		switch f.num {
		case tensorElem:
			if f.typ != protowire.VarintType {
				return fmt.Errorf("%w: elem_type has wire type %d", errMalformed, f.typ)
			}
			vi.Elem = Elem(int32(f.v))
		case tensorShape:
			if err := wantBytes(f); err != nil {
				return err
			}
			dims, err := readShape(s, f.val)
			if err != nil {
				return err
			}
			vi.Dims, vi.UnknownRank = dims, false
		}
	}
	return nil
}

// readShape decodes a TensorShapeProto.
func readShape(s *source, sp span) ([]Dim, error) {
	var dims []Dim
	for f, err := range s.fields(sp) {
		if err != nil {
			return nil, err
		}
		if f.num != shapeDim {
			continue
		}
		if err := wantBytes(f); err != nil {
			return nil, err
		}
		d, err := readDim(s, f.val)
		if err != nil {
			return nil, err
		}
		dims = append(dims, d)
	}
	return dims, nil
}

// readDim decodes a TensorShapeProto.Dimension.
func readDim(s *source, sp span) (Dim, error) {
	var d Dim
	for f, err := range s.fields(sp) {
		if err != nil {
			return Dim{}, err
		}
		switch f.num {
		case dimValue:
			if f.typ != protowire.VarintType {
				return Dim{}, fmt.Errorf("%w: dim_value has wire type %d", errMalformed, f.typ)
			}
			d.Value, d.Param = int64(f.v), ""
		case dimParam:
			if d.Param, err = s.str(f); err != nil {
				return Dim{}, err
			}
			d.Value = 0
		}
	}
	return d, nil
}
