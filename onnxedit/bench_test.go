package onnxedit

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Size of the model BenchmarkCastInput adapts: weights inside the file, as in
// a single-file fp16 UNet, and a long chain of small nodes.
const (
	benchWeights     = 64
	benchWeightBytes = 4 << 20
	benchNodes       = 4000
)

// BenchmarkCastInput adapts a 256 MiB model. The bytes it allocates per
// operation stay far below the file size: weights are copied by range.
func BenchmarkCastInput(b *testing.B) {
	dir := b.TempDir()
	src := filepath.Join(dir, "big.onnx")
	parts := [][]byte{valueInfo(graphInput, "x", Float16, []any{})}
	weight := bytes.Repeat([]byte{1}, benchWeightBytes)
	for i := range benchWeights {
		parts = append(parts, initializer(fmt.Sprintf("w%d", i), weight))
	}
	prev := "x"
	for i := range benchNodes {
		out := fmt.Sprintf("v%d", i)
		parts = append(parts, node("Add", out, []string{prev, "x"}, []string{out}))
		prev = out
	}
	m := model(parts...)
	if err := os.WriteFile(src, m, 0o644); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(m)))
	b.ReportAllocs()
	for b.Loop() {
		if err := CastInput(src, filepath.Join(dir, "adapted.onnx"), "x", Float); err != nil {
			b.Fatal(err)
		}
	}
}
