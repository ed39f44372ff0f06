package inference

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"fashiond/onnxedit"
)

func loadGraph(t *testing.T, rt *Runtime, path string, in, out []string) *Session {
	t.Helper()
	s, err := rt.NewSession(context.Background(), SessionSpec{Name: "test", Path: path, Inputs: in, Outputs: out})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestRunKinds runs every kind the engine uses on the CPU provider:
// float32, float16, int32 and int64 tensors, a rank-0 scalar, outputs
// pre-allocated and allocated by ONNX Runtime.
func TestRunKinds(t *testing.T) {
	rt := testRuntime(t)
	ctx := context.Background()
	for _, c := range []struct {
		elem onnxedit.Elem
		d    DType
	}{{onnxedit.Float, Float32}, {onnxedit.Float16, Float16}, {onnxedit.Int32, Int32}, {onnxedit.Int64, Int64}} {
		s := loadGraph(t, rt, addGraphT(t, c.elem), []string{"x"}, []string{"y"})
		in := Value{DType: c.d, Shape: []int64{2, 3}}
		if c.d.IsFloat() {
			in.F32 = []float32{1, 2, 3, 4, 5, 6.5}
		} else {
			in.I64 = []int64{1, 2, 3, 4, 5, -6}
		}
		for _, prealloc := range []bool{true, false} {
			if !prealloc && c.d == Float16 {
				continue // float16 outputs must be pre-allocated (OutputSpec)
			}
			spec := OutputSpec{DType: c.d}
			if prealloc {
				spec.Shape = []int64{2, 3}
			}
			out, err := s.RunValues(ctx, []Value{in}, []OutputSpec{spec})
			if err != nil {
				t.Fatalf("%s prealloc=%v: %v", c.d, prealloc, err)
			}
			for i := range 6 {
				var got, want float64
				if c.d.IsFloat() {
					got, want = float64(out[0].F32[i]), 2*float64(in.F32[i])
				} else {
					got, want = float64(out[0].I64[i]), 2*float64(in.I64[i])
				}
				if got != want {
					t.Fatalf("%s prealloc=%v: y[%d] = %v, want %v", c.d, prealloc, i, got, want)
				}
			}
		}
	}
	s := loadGraph(t, rt, diffusionLikeGraph(t), []string{"ids", "sample", "t"}, []string{"out", "t_out"})
	out, err := s.RunValues(ctx, []Value{
		{DType: Int64, Shape: []int64{1, 4}, I64: []int64{1, 2, 3, 49407}},
		{DType: Float16, Shape: []int64{1, 4}, F32: []float32{0.5, 0.25, -1, 0}},
		{DType: Float32, Shape: []int64{}, F32: []float32{981}},
	}, []OutputSpec{{DType: Float16, Shape: []int64{1, 4}}, {DType: Float32}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []float32{1.5, 2.25, 2, 49408}; !equalF32(out[0].F32, want) || out[1].F32[0] != 981 || len(out[1].Shape) != 0 {
		t.Fatalf("outputs %+v, want %v and the scalar 981", out, want)
	}
}

func equalF32(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestBadTensorsAreErrors: a tensor that does not fit the graph is an error
// naming it and the rule, before ONNX Runtime reads or writes a buffer.
func TestBadTensorsAreErrors(t *testing.T) {
	rt := testRuntime(t)
	s := loadGraph(t, rt, diffusionLikeGraph(t), []string{"ids", "sample", "t"}, []string{"out", "t_out"})
	ids := Value{DType: Int64, Shape: []int64{1, 4}, I64: []int64{1, 2, 3, 4}}
	sample := Value{DType: Float16, Shape: []int64{1, 4}, F32: []float32{1, 2, 3, 4}}
	tt := Value{DType: Float32, Shape: []int64{}, F32: []float32{1}}
	outs := []OutputSpec{{DType: Float16, Shape: []int64{1, 4}}, {DType: Float32}}
	for _, c := range []struct {
		name string
		in   []Value
		outs []OutputSpec
		want string
	}{
		{"ids as float32", []Value{{DType: Float32, Shape: []int64{1, 4}, F32: []float32{1, 2, 3, 4}}, sample, tt}, outs, "input ids: element type float32, the graph declares int64"},
		{"ids of rank 1", []Value{{DType: Int64, Shape: []int64{4}, I64: []int64{1, 2, 3, 4}}, sample, tt}, outs, "input ids: shape [4] has rank 1, the graph declares rank 2"},
		{"ids too wide", []Value{{DType: Int64, Shape: []int64{1, 5}, I64: make([]int64, 5)}, sample, tt}, outs, "input ids: shape [1 5]: dimension 1 is 5, the graph declares 4"},
		{"nil data", []Value{{DType: Int64, Shape: []int64{1, 4}}, sample, tt}, outs, "input ids: shape [1 4] needs 4 values, got 0"},
		{"short data", []Value{ids, {DType: Float16, Shape: []int64{1, 4}, F32: []float32{1}}, tt}, outs, "input sample: shape [1 4] needs 4 values, got 1"},
		{"no element type", []Value{ids, {Shape: []int64{1, 4}, F32: make([]float32, 4)}, tt}, outs, "input sample: no element type"},
		{"negative dimension", []Value{ids, {DType: Float16, Shape: []int64{-1, 4}, F32: make([]float32, 4)}, tt}, outs, "dimension 0 is negative"},
		{"empty scalar", []Value{ids, sample, {DType: Float32, Shape: []int64{}}}, outs, "input t: shape [] needs 1 values, got 0"},
		{"scalar given as a vector", []Value{ids, sample, {DType: Float32, Shape: []int64{1}, F32: []float32{1}}}, outs, "input t: shape [1] has rank 1, the graph declares rank 0"},
		{"missing input", []Value{ids, sample}, outs, "wants 3 inputs and 2 outputs, got 2 and 2"},
		{"output of the wrong type", []Value{ids, sample, tt}, []OutputSpec{{DType: Float32, Shape: []int64{1, 4}}, {DType: Float32}}, "pre-allocated output out: element type float32, the graph declares float16"},
		{"output of the wrong shape", []Value{ids, sample, tt}, []OutputSpec{{DType: Float16, Shape: []int64{1, 8}}, {DType: Float32}}, "pre-allocated output out: shape [1 8]: dimension 1 is 8, the graph declares 4"},
		{"output of the wrong rank", []Value{ids, sample, tt}, []OutputSpec{{DType: Float16, Shape: []int64{4}}, {DType: Float32}}, "has rank 1, the graph declares rank 2"},
		{"float16 output left to ONNX Runtime", []Value{ids, sample, tt}, []OutputSpec{{DType: Float16}, {DType: Float32}}, "float16 outputs need a pre-allocated shape"},
		{"batch mismatch between inputs", []Value{{DType: Int64, Shape: []int64{2, 4}, I64: make([]int64, 8)}, sample, tt}, outs, "inference: run test"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := s.RunValues(context.Background(), c.in, c.outs)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
	// The session still works after every refusal.
	if _, err := s.RunValues(context.Background(), []Value{ids, sample, tt}, outs); err != nil {
		t.Fatal(err)
	}
}

// TestCancelRacesRunEnd cancels runs at random moments around their end
// (run with -race): the RunOptions are never terminated after release, and
// every run ends in a result or the context's error.
func TestCancelRacesRunEnd(t *testing.T) {
	rt := testRuntime(t)
	s := loadGraph(t, rt, addGraphT(t, onnxedit.Float), []string{"x"}, []string{"y"})
	in := []Value{{DType: Float32, Shape: []int64{64, 3}, F32: make([]float32, 192)}}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for range 100 {
				ctx, cancel := context.WithCancel(context.Background())
				delay := time.Duration(r.IntN(200)) * time.Microsecond
				go func() {
					time.Sleep(delay)
					cancel()
				}()
				_, err := s.RunValues(ctx, in, []OutputSpec{{DType: Float32, Shape: []int64{64, 3}}})
				if err != nil && ctx.Err() == nil {
					t.Error(err)
				}
				cancel()
			}
		}()
	}
	wg.Wait()
}

func TestProbeKinds(t *testing.T) {
	rt := testRuntime(t)
	for _, k := range ProbeKinds {
		dev, err := rt.Probe(context.Background(), t.TempDir(), k)
		if err != nil || dev != "cpu" {
			t.Errorf("probe %s: device %q, %v", k, dev, err)
		}
	}
	if _, err := rt.Probe(context.Background(), t.TempDir(), "bfloat16"); err == nil || !strings.Contains(err.Error(), "unknown probe kind") {
		t.Fatalf("unknown kind: %v", err)
	}
}
