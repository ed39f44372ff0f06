package api

import "fashiond/spec"

// The per-model input rules live in package spec (its rules.go table); the
// validator (validate.go) and the OpenAPI generator (openapi.go) both
// interpret that table, so the document cannot drift from what POST /v1/run
// accepts. These names keep the interpreter's vocabulary short.

type (
	fieldRule  = spec.Field
	modelRules = spec.Object
)

const (
	kindImage       = spec.KindImage
	kindDataImage   = spec.KindDataImage
	kindText        = spec.KindText
	kindEnum        = spec.KindEnum
	kindEnumOrEmpty = spec.KindEnumOrEmpty
	kindInt         = spec.KindInt
	kindBool        = spec.KindBool
	kindID          = spec.KindID
	kindPoses       = spec.KindPoses
	kindAngles      = spec.KindAngles
)

// rulesOf returns the input rules of a known model.
func rulesOf(model string) *modelRules { return spec.InputRules(model) }

// joinOr joins words as "a, b or c" ("a or b" for two).
func joinOr(words []string) string { return spec.JoinOr(words) }

// joinAnd joins words as "a, b and c".
func joinAnd(words []string) string { return spec.JoinAnd(words) }
