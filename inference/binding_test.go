package inference

import (
	"context"
	"strings"
	"testing"

	"fashiond/onnxedit"
)

// TestBindingRunsManyTimes binds once and runs three times on the CPU
// provider, changing one input in place between runs; every result equals
// RunValues' on the same values.
func TestBindingRunsManyTimes(t *testing.T) {
	rt := testRuntime(t)
	ctx := context.Background()
	for _, c := range []struct {
		elem onnxedit.Elem
		d    DType
	}{{onnxedit.Float, Float32}, {onnxedit.Float16, Float16}, {onnxedit.Int64, Int64}, {onnxedit.Int32, Int32}} {
		s := loadGraph(t, rt, addGraphT(t, c.elem), []string{"x"}, []string{"y"})
		b, err := s.NewBinding()
		if err != nil {
			t.Fatal(err)
		}
		in := Value{DType: c.d, Shape: []int64{2, 3}}
		if c.d.IsFloat() {
			in.F32 = []float32{1, 2, 3, 4, 5, 6}
		} else {
			in.I64 = []int64{1, 2, 3, 4, 5, 6}
		}
		if err := b.BindInput("x", in); err != nil {
			t.Fatal(err)
		}
		if err := b.BindOutput("y", OutputSpec{DType: c.d, Shape: []int64{2, 3}}); err != nil {
			t.Fatal(err)
		}
		for round := range 3 {
			if round > 0 {
				for i := range 6 {
					if c.d.IsFloat() {
						in.F32[i] += 0.5
					} else {
						in.I64[i] *= 3
					}
				}
				if err := b.SetInput("x", in.F32, in.I64); err != nil {
					t.Fatal(err)
				}
			}
			if err := b.Run(ctx); err != nil {
				t.Fatal(err)
			}
			got, err := b.Output("y")
			if err != nil {
				t.Fatal(err)
			}
			want, err := s.RunValues(ctx, []Value{in}, []OutputSpec{{DType: c.d, Shape: []int64{2, 3}}})
			if err != nil {
				t.Fatal(err)
			}
			if !equalF32(got.F32, want[0].F32) || len(got.I64) != len(want[0].I64) || (len(got.I64) > 0 && got.I64[5] != want[0].I64[5]) {
				t.Fatalf("%s round %d: bound %+v, RunValues %+v", c.d, round, got, want[0])
			}
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		if err := b.Close(); err != nil {
			t.Fatal("second Close:", err)
		}
		if err := b.Run(ctx); err == nil {
			t.Fatal("Run after Close")
		}
	}
	var nilB *Binding
	if err := nilB.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestBindingErrors(t *testing.T) {
	rt := testRuntime(t)
	s := loadGraph(t, rt, addGraphT(t, onnxedit.Float), []string{"x"}, []string{"y"})
	b, err := s.NewBinding()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	x := Value{DType: Float32, Shape: []int64{2, 3}, F32: make([]float32, 6)}
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"unknown input", b.BindInput("z", x), `no input "z"`},
		{"wrong type", b.BindInput("x", Value{DType: Int64, Shape: []int64{2, 3}, I64: make([]int64, 6)}), "element type int64, the graph declares float"},
		{"short data", b.BindInput("x", Value{DType: Float32, Shape: []int64{2, 3}, F32: make([]float32, 2)}), "needs 6 values, got 2"},
		{"output without shape", b.BindOutput("y", OutputSpec{DType: Float32}), "needs its shape"},
		{"output of the wrong shape", b.BindOutput("y", OutputSpec{DType: Float32, Shape: []int64{2, 4}}), "dimension 1 is 4, the graph declares 3"},
		{"set unbound", b.SetInput("x", make([]float32, 6), nil), "is not bound"},
		{"run unbound", b.Run(context.Background()), "x is not bound"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, c.err, c.want)
		}
	}
	if err := b.BindInput("x", x); err != nil {
		t.Fatal(err)
	}
	if err := b.SetInput("x", make([]float32, 5), nil); err == nil || !strings.Contains(err.Error(), "want 6 float32 values") {
		t.Fatalf("SetInput of the wrong length: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.Run(ctx); err != context.Canceled {
		t.Fatalf("cancelled Run: %v", err)
	}
}

// TestOptimizedPath: the session writes its optimised graph, which loads and
// gives the same result.
func TestOptimizedPath(t *testing.T) {
	rt := testRuntime(t)
	src := addGraphT(t, onnxedit.Float)
	opt := src + ".cpu.opt.onnx"
	s, err := rt.NewSession(context.Background(), SessionSpec{Name: "add", Path: src, Inputs: []string{"x"}, Outputs: []string{"y"}, OptimizedPath: opt})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s2 := loadGraph(t, rt, opt, []string{"x"}, []string{"y"})
	out, err := s2.RunValues(context.Background(), []Value{{DType: Float32, Shape: []int64{1, 3}, F32: []float32{1, 2, 3}}}, []OutputSpec{{DType: Float32}})
	if err != nil || !equalF32(out[0].F32, []float32{2, 4, 6}) {
		t.Fatalf("optimised graph: %v %v", out, err)
	}
}
