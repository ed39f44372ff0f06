package onnxedit

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
)

const (
	// castSuffix names the Cast node and its output: input + castSuffix,
	// with a number appended while that name is taken.
	castSuffix = "__fashiond_cast"
	// writeBuffer is the buffer between the copied ranges and the file.
	writeBuffer = 1 << 20
	// castMinOpset is the first ai.onnx opset whose Cast takes "to" as an
	// int (Cast-1 took a string).
	castMinOpset = 6
)

// castTargets are the element types CastInput may declare an input as.
var castTargets = map[Elem]bool{Float: true, Int32: true, Int64: true, Float16: true, Double: true}

// CastInput writes to dst a copy of the model at src in which graph input
// name is declared with element type to (same shape) and a Cast node, placed
// before the first node, converts it back to its original type for all its
// consumers: node inputs, in subgraphs too, and graph outputs that used it.
// A graph output or value_info that was the input itself is renamed to the
// Cast's output, so it keeps its original type. The Cast node and its output
// are named name + "__fashiond_cast" (plus a number if that is taken by any
// name in the model). All other bytes are copied unchanged.
//
// dst is written atomically (a temporary file in dst's directory, then a
// rename) and may be src itself. Write it next to src so that external data
// (relative locations) still resolves. Errors name the file and the input;
// an unknown input wraps ErrUnknownInput, one already of type to ErrSameType.
// The model must import an ai.onnx opset of at least 6 (for Cast's int "to").
// Memory use follows the graph's structure (names, nodes), not its weights.
func CastInput(src, dst, name string, to Elem) error {
	if err := castInput(src, dst, name, to); err != nil {
		return fmt.Errorf("onnxedit: cast input %q of %s to %v: %w", name, src, to, err)
	}
	return nil
}

// castInput is CastInput without the error context.
func castInput(src, dst, name string, to Elem) error {
	if !castTargets[to] {
		return fmt.Errorf("unsupported target type %v", to)
	}
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	s := newSource(f, st.Size())
	out, err := castPlan(s, name, to)
	if err != nil {
		return err
	}
	return writeAtomic(dst, st.Mode().Perm(), func(w *bufio.Writer) error { return out.write(w, s) })
}

// castPlan describes the adapted model file.
func castPlan(s *source, name string, to Elem) (*plan, error) {
	g, err := readGraph(s)
	if err != nil {
		return nil, err
	}
	in, err := findInput(g, name, to)
	if err != nil {
		return nil, err
	}
	if err := checkOpset(s); err != nil {
		return nil, err
	}
	taken := map[string]bool{}
	if err := collectNames(s, g.body, taken, 0); err != nil {
		return nil, err
	}
	e := &castEdit{s: s, name: name, cast: freeName(name+castSuffix, taken), from: in.Elem, to: to}
	body, err := e.graph(g.body, true, 0)
	if err != nil {
		return nil, err
	}
	out := &plan{}
	out.copy(span{0, g.model.off})
	out.message(modelGraph, body)
	out.copy(span{g.model.end, s.size})
	return out, nil
}

// findInput checks that name is a real tensor input that can be retyped.
func findInput(g *graphInfo, name string, to Elem) (IO, error) {
	if g.initializers[name] {
		return IO{}, fmt.Errorf("%w: %q is an initializer", ErrUnknownInput, name)
	}
	for _, in := range g.inputs {
		switch {
		case in.Name != name:
		case in.Elem == Undefined:
			return IO{}, errors.New("the input is not a tensor with a declared element type")
		case in.Elem == to:
			return IO{}, fmt.Errorf("%w (%v)", ErrSameType, to)
		default:
			return in, nil
		}
	}
	return IO{}, ErrUnknownInput
}

// checkOpset makes sure the model imports an ai.onnx opset whose Cast the
// added node is.
func checkOpset(s *source) error {
	best := int64(-1)
	for f, err := range s.fields(s.all()) {
		if err != nil {
			return err
		}
		if f.num != modelOpset {
			continue
		}
		if err := wantBytes(f); err != nil {
			return err
		}
		domain, version, err := readOpset(s, f.val)
		if err != nil {
			return err
		}
		if domain == "" || domain == "ai.onnx" {
			best = max(best, version)
		}
	}
	switch {
	case best < 0:
		return errors.New("the model imports no ai.onnx opset, which the Cast node needs")
	case best < castMinOpset:
		return fmt.Errorf("ai.onnx opset %d is older than %d, whose Cast this edit writes", best, castMinOpset)
	}
	return nil
}

// readOpset decodes an OperatorSetIdProto.
func readOpset(s *source, sp span) (domain string, version int64, err error) {
	for f, err := range s.fields(sp) {
		if err != nil {
			return "", 0, err
		}
		switch f.num {
		case opsetDomain:
			if domain, err = s.str(f); err != nil {
				return "", 0, err
			}
		case opsetVer:
			if f.typ != protowire.VarintType {
				return "", 0, fmt.Errorf("%w: opset version has wire type %d", errMalformed, f.typ)
			}
			version = int64(f.v)
		}
	}
	return domain, version, nil
}

// freeName is base, or base with the smallest number appended that makes it
// a name not in taken.
func freeName(base string, taken map[string]bool) string {
	n := base
	for i := 2; taken[n]; i++ {
		n = base + strconv.Itoa(i)
	}
	return n
}

// collectNames adds every value, node and initializer name of the graph sp,
// its subgraphs included, to taken.
func collectNames(s *source, sp span, taken map[string]bool, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("%w: subgraphs nested deeper than %d", errMalformed, maxDepth)
	}
	for f, err := range s.fields(sp) {
		if err != nil {
			return err
		}
		var name string
		switch f.num {
		case graphNode:
			err = collectNodeNames(s, f, taken, depth)
		case graphInput, graphOutput, graphValueInfo:
			var vi IO
			if err = wantBytes(f); err == nil {
				vi, err = readValueInfo(s, f.val)
			}
			name = vi.Name
		case graphInitializer, graphSparseInitializer:
			name, err = initializerName(s, f)
		}
		if err != nil {
			return err
		}
		taken[name] = true
	}
	return nil
}

// collectNodeNames adds a node's name, inputs and outputs, and those of its
// subgraphs, to taken.
func collectNodeNames(s *source, node field, taken map[string]bool, depth int) error {
	if err := wantBytes(node); err != nil {
		return err
	}
	for f, err := range s.fields(node.val) {
		if err != nil {
			return err
		}
		switch f.num {
		case nodeInput, nodeOutput, nodeName:
			name, err := s.str(f)
			if err != nil {
				return err
			}
			taken[name] = true
		case nodeAttribute:
			err := eachSubgraph(s, f, func(g field) error { return collectNames(s, g.val, taken, depth+1) })
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// eachSubgraph calls fn for every graph held by an attribute (g, graphs).
func eachSubgraph(s *source, attr field, fn func(field) error) error {
	if err := wantBytes(attr); err != nil {
		return err
	}
	for f, err := range s.fields(attr.val) {
		if err != nil {
			return err
		}
		if f.num == attrG || f.num == attrGraphs {
			if err := wantBytes(f); err != nil {
				return err
			}
			if err := fn(f); err != nil {
				return err
			}
		}
	}
	return nil
}

// castEdit rewrites a graph so that input name has type to and its uses
// read cast, the output of a Cast back to type from.
type castEdit struct {
	s        *source
	name     string
	cast     string
	from, to Elem
}

// graph rewrites the GraphProto sp. top is the main graph, which declares the
// input and gets the Cast node; a subgraph only has its uses renamed.
func (e *castEdit) graph(sp span, top bool, depth int) (*plan, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("%w: subgraphs nested deeper than %d", errMalformed, maxDepth)
	}
	out := &plan{}
	inserted := !top
	for f, err := range e.s.fields(sp) {
		if err != nil {
			return nil, err
		}
		if f.num == graphNode && !inserted {
			out.lit(e.castNode())
			inserted = true
		}
		if err := e.graphField(out, f, top, depth); err != nil {
			return nil, err
		}
	}
	if !inserted {
		out.lit(e.castNode())
	}
	return out, nil
}

// graphField appends one GraphProto field, rewritten where it involves the input.
func (e *castEdit) graphField(out *plan, f field, top bool, depth int) error {
	switch f.num {
	case graphNode:
		return e.node(out, f, depth)
	case graphInput:
		return e.input(out, f, top)
	case graphOutput, graphValueInfo:
		return e.rename(out, f)
	case graphInitializer, graphSparseInitializer:
		name, err := initializerName(e.s, f)
		if err != nil {
			return err
		}
		if name == e.name {
			return errors.New("a subgraph declares an initializer of the same name")
		}
	}
	out.copy(f.whole)
	return nil
}

// input retypes the main graph's declaration of the input. A subgraph input
// of the same name would shadow it, which this edit cannot handle.
func (e *castEdit) input(out *plan, f field, top bool) error {
	if err := wantBytes(f); err != nil {
		return err
	}
	vi, err := readValueInfo(e.s, f.val)
	if err != nil {
		return err
	}
	if vi.Name != e.name {
		out.copy(f.whole)
		return nil
	}
	if !top {
		return errors.New("a subgraph declares an input of the same name")
	}
	retyped, err := e.retype(f.val, valueInfoType, typeTensor, tensorElem)
	if err != nil {
		return err
	}
	out.message(f.num, retyped)
	return nil
}

// retype rewrites the varint at the end of the field path (ValueInfoProto
// type → TypeProto tensor_type → elem_type) to e.to, copying all else.
func (e *castEdit) retype(sp span, path ...protowire.Number) (*plan, error) {
	out := &plan{}
	for f, err := range e.s.fields(sp) {
		if err != nil {
			return nil, err
		}
		switch {
		case f.num != path[0]:
			out.copy(f.whole)
		case len(path) == 1:
			if f.typ != protowire.VarintType {
				return nil, fmt.Errorf("%w: elem_type has wire type %d", errMalformed, f.typ)
			}
			b := protowire.AppendTag(nil, f.num, protowire.VarintType)
			out.lit(protowire.AppendVarint(b, uint64(e.to)))
		default:
			if err := wantBytes(f); err != nil {
				return nil, err
			}
			inner, err := e.retype(f.val, path[1:]...)
			if err != nil {
				return nil, err
			}
			out.message(f.num, inner)
		}
	}
	return out, nil
}

// rename points a ValueInfoProto (graph output, value_info) that named the
// input at the Cast's output instead.
func (e *castEdit) rename(out *plan, f field) error {
	if err := wantBytes(f); err != nil {
		return err
	}
	vi, err := readValueInfo(e.s, f.val)
	if err != nil {
		return err
	}
	if vi.Name != e.name {
		out.copy(f.whole)
		return nil
	}
	renamed, _, err := e.renameStrings(f.val, valueInfoName)
	if err != nil {
		return err
	}
	out.message(f.num, renamed)
	return nil
}

// renameStrings copies the message sp with every string field num equal to
// the input's name replaced by the Cast's output; changed tells if any was.
func (e *castEdit) renameStrings(sp span, num protowire.Number) (*plan, bool, error) {
	out, changed := &plan{}, false
	for f, err := range e.s.fields(sp) {
		if err != nil {
			return nil, false, err
		}
		if f.num != num {
			out.copy(f.whole)
			continue
		}
		v, err := e.s.str(f)
		if err != nil {
			return nil, false, err
		}
		if v != e.name {
			out.copy(f.whole)
			continue
		}
		out.lit(protowire.AppendString(protowire.AppendTag(nil, num, protowire.BytesType), e.cast))
		changed = true
	}
	return out, changed, nil
}

// node appends a NodeProto, its uses of the input (subgraphs included)
// pointed at the Cast's output. It is copied whole when nothing changes.
func (e *castEdit) node(out *plan, f field, depth int) error {
	if err := wantBytes(f); err != nil {
		return err
	}
	rewritten, changed := &plan{}, false
	for nf, err := range e.s.fields(f.val) {
		if err != nil {
			return err
		}
		c, err := e.nodeField(rewritten, nf, depth)
		if err != nil {
			return err
		}
		changed = changed || c
	}
	if !changed {
		out.copy(f.whole)
		return nil
	}
	out.message(f.num, rewritten)
	return nil
}

// nodeField appends one NodeProto field and tells whether it changed.
func (e *castEdit) nodeField(out *plan, f field, depth int) (bool, error) {
	switch f.num {
	case nodeInput:
		v, err := e.s.str(f)
		if err != nil {
			return false, err
		}
		if v == e.name {
			out.lit(protowire.AppendString(protowire.AppendTag(nil, nodeInput, protowire.BytesType), e.cast))
			return true, nil
		}
	case nodeOutput:
		v, err := e.s.str(f)
		if err != nil {
			return false, err
		}
		if v == e.name {
			return false, errors.New("a node outputs a value of the same name")
		}
	case nodeAttribute:
		return e.attribute(out, f, depth)
	}
	out.copy(f.whole)
	return false, nil
}

// attribute appends an AttributeProto, rewriting the subgraphs it holds.
func (e *castEdit) attribute(out *plan, f field, depth int) (bool, error) {
	if err := wantBytes(f); err != nil {
		return false, err
	}
	rewritten, changed := &plan{}, false
	for af, err := range e.s.fields(f.val) {
		if err != nil {
			return false, err
		}
		if af.num != attrG && af.num != attrGraphs {
			rewritten.copy(af.whole)
			continue
		}
		if err := wantBytes(af); err != nil {
			return false, err
		}
		g, err := e.graph(af.val, false, depth+1)
		if err != nil {
			return false, err
		}
		if g.isCopyOf(af.val) {
			rewritten.copy(af.whole)
			continue
		}
		rewritten.message(af.num, g)
		changed = true
	}
	if !changed {
		out.copy(f.whole)
		return false, nil
	}
	out.message(f.num, rewritten)
	return true, nil
}

// castNode encodes the graph field holding the Cast node:
// cast = Cast(name, to=from).
func (e *castEdit) castNode() []byte {
	var attr []byte
	attr = protowire.AppendTag(attr, attrName, protowire.BytesType)
	attr = protowire.AppendString(attr, "to")
	attr = protowire.AppendTag(attr, attrI, protowire.VarintType)
	attr = protowire.AppendVarint(attr, uint64(e.from))
	attr = protowire.AppendTag(attr, attrType, protowire.VarintType)
	attr = protowire.AppendVarint(attr, attrInt)

	var node []byte
	for _, sf := range []struct {
		num protowire.Number
		v   string
	}{{nodeInput, e.name}, {nodeOutput, e.cast}, {nodeName, e.cast}, {nodeOpType, "Cast"}} {
		node = protowire.AppendTag(node, sf.num, protowire.BytesType)
		node = protowire.AppendString(node, sf.v)
	}
	node = protowire.AppendTag(node, nodeAttribute, protowire.BytesType)
	node = protowire.AppendBytes(node, attr)

	out := protowire.AppendTag(nil, graphNode, protowire.BytesType)
	return protowire.AppendBytes(out, node)
}

// writeAtomic writes dst through fn into a temporary file beside it, syncs
// it and renames it over dst.
func writeAtomic(dst string, perm os.FileMode, fn func(*bufio.Writer) error) (err error) {
	dir := filepath.Dir(dst)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(dst)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	w := bufio.NewWriterSize(tmp, writeBuffer)
	if err = fn(w); err != nil {
		return err
	}
	if err = w.Flush(); err != nil {
		return err
	}
	if err = tmp.Chmod(perm); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp.Name(), dst); err != nil {
		return err
	}
	return syncDir(dir)
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
