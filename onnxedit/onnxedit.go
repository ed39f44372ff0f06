// Package onnxedit reads and adapts ONNX model files at install time, in pure
// Go, by editing the protobuf wire format directly (no generated ONNX code).
//
// Only the fields an edit touches are decoded; every other field, unknown
// fields included, is copied byte for byte. Files are read by offset through
// a small window and written by copying untouched byte ranges, so neither
// Inspect nor CastInput holds the model in memory: a multi-GB model with its
// weights inside costs memory only for the graph's names and structure.
// External data files (referenced by a relative location) are never opened.
package onnxedit

import (
	"errors"
	"fmt"
)

// Field numbers of onnx.proto3 used here.
const (
	modelGraph  = 7
	modelOpset  = 8 // ModelProto.opset_import
	opsetDomain = 1
	opsetVer    = 2

	graphNode              = 1
	graphInitializer       = 5
	graphInput             = 11
	graphOutput            = 12
	graphValueInfo         = 13
	graphSparseInitializer = 15

	nodeInput     = 1
	nodeOutput    = 2
	nodeName      = 3
	nodeOpType    = 4
	nodeAttribute = 5

	attrName   = 1
	attrI      = 3
	attrG      = 6
	attrGraphs = 11
	attrType   = 20
	attrInt    = 2 // AttributeProto.AttributeType INT

	valueInfoName = 1
	valueInfoType = 2

	typeTensor   = 1
	tensorElem   = 1
	tensorShape  = 2
	shapeDim     = 1
	dimValue     = 1
	dimParam     = 2
	tensorName   = 8 // TensorProto.name
	sparseValues = 1 // SparseTensorProto.values
)

// Elem is an ONNX tensor element type (TensorProto.DataType).
type Elem int32

// Element types.
const (
	Undefined Elem = 0
	Float     Elem = 1
	Int32     Elem = 6
	Int64     Elem = 7
	Float16   Elem = 10
	Double    Elem = 11
)

var elemNames = map[Elem]string{
	Undefined: "undefined",
	Float:     "float",
	Int32:     "int32",
	Int64:     "int64",
	Float16:   "float16",
	Double:    "double",
}

// String is the lower-case ONNX name, or Elem(N) for types without a constant.
func (e Elem) String() string {
	if s, ok := elemNames[e]; ok {
		return s
	}
	return fmt.Sprintf("Elem(%d)", int32(e))
}

// Dim is one dimension: a fixed size (Value), a symbolic one (Param), or
// neither when the size is unknown.
type Dim struct {
	Value int64
	Param string
}

// IO describes one graph input or output as declared in the file. The rank
// is len(Dims); a rank-0 (scalar) tensor has no Dims. UnknownRank is set when
// the file declares no shape at all (or the value is not a tensor, in which
// case Elem is Undefined).
type IO struct {
	Name        string
	Elem        Elem
	Dims        []Dim
	UnknownRank bool
}

// Errors that CastInput wraps; test them with errors.Is.
var (
	ErrUnknownInput = errors.New("no such graph input")
	ErrSameType     = errors.New("input already has that element type")
)
