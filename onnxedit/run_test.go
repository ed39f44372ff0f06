package onnxedit_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"fashiond/inference"
	"fashiond/internal/testenv"
	"fashiond/onnxedit"
)

// ortThreads keeps the test sessions small: the machine has two cores.
const ortThreads = 1

// testRuntime opens ONNX Runtime the way the inference tests do.
func testRuntime(t *testing.T) *inference.Runtime {
	t.Helper()
	lib := testenv.ORTLib()
	rt, err := inference.Open(context.Background(), inference.Config{LibPath: lib, IntraOpThreads: ortThreads, Device: "cpu"}, nil)
	if err != nil {
		t.Fatalf("open runtime: %v (run make setup)", err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// adapt copies the testdata files into a temporary directory and casts input
// x of the first one to float32 in place.
func adapt(t *testing.T, files ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	model := filepath.Join(dir, filepath.Base(files[0]))
	if err := onnxedit.CastInput(model, model, "x", onnxedit.Float); err != nil {
		t.Fatal(err)
	}
	return model
}

// runModel loads model through the inference package and runs it once.
func runModel(t *testing.T, rt *inference.Runtime, model string, outputs []string, x inference.Tensor) ([]inference.Tensor, error) {
	t.Helper()
	s, err := rt.NewSession(context.Background(), inference.SessionSpec{
		Name: filepath.Base(model), Path: model, Inputs: []string{"x"}, Outputs: outputs, Device: "cpu",
	})
	if err != nil {
		t.Fatalf("load adapted model: %v", err)
	}
	defer s.Close()
	return s.Run(context.Background(), []inference.Tensor{x})
}

func TestAdaptedModelsRun(t *testing.T) {
	rt := testRuntime(t)
	cases := []struct {
		name    string
		files   []string
		outputs []string
		x       []float32
		want    [][]float32
	}{
		{"two consumers and a graph output", []string{"multi_use.onnx"}, []string{"ya", "yb"},
			[]float32{1.5, -2}, [][]float32{{3, -4}, {2.5, -1}}},
		{"outer-scope use in If branches, positive", []string{"subgraph.onnx"}, []string{"y"},
			[]float32{3}, [][]float32{{6}}},
		{"outer-scope use in If branches, negative", []string{"subgraph.onnx"}, []string{"y"},
			[]float32{-1.25}, [][]float32{{-1.25}}},
		{"external data adapted in place", []string{"external/model.onnx", "external/weights.pb"}, []string{"y"},
			[]float32{1.5}, [][]float32{externalWant(1.5)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			model := adapt(t, c.files...)
			got, err := runModel(t, rt, model, c.outputs, inference.Tensor{Shape: []int64{int64(len(c.x))}, Data: c.x})
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			for i, want := range c.want {
				if !equal(got[i].Data, want) {
					t.Errorf("output %s = %v, want %v", c.outputs[i], got[i].Data, want)
				}
			}
		})
	}
}

// externalWant is y = x + w for the external-data model, w[i] = (i%64)/2.
func externalWant(x float32) []float32 {
	y := make([]float32, 1024)
	for i := range y {
		y[i] = x + float32(i%64)*0.5
	}
	return y
}

func equal(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(float64(a[i]-b[i])) > 1e-6 {
			return false
		}
	}
	return true
}

// TestUnadaptedModelRefusesFloat is the control: without the edit, ORT
// rejects a float32 tensor for the float16 input.
func TestUnadaptedModelRefusesFloat(t *testing.T) {
	rt := testRuntime(t)
	_, err := runModel(t, rt, filepath.Join("testdata", "multi_use.onnx"), []string{"ya"},
		inference.Tensor{Shape: []int64{1}, Data: []float32{1}})
	if err == nil {
		t.Fatal("float32 input accepted by the float16 model")
	}
}

// TestAdaptedScalarModel checks the rank-0 case (an SD UNet's timestep): the
// adapted graph declares a float scalar and ORT loads it (type-checking the
// Cast). Its output y is a rank-0 float16 tensor, which onnxruntime_go can
// neither allocate nor wrap, so it is not run here; the diffusion package's
// TestInstallAdaptsFloat16ScalarTimestep runs an adapted UNet end to end
// against its closed form.
func TestAdaptedScalarModel(t *testing.T) {
	rt := testRuntime(t)
	model := adapt(t, "scalar_mul.onnx")
	in, _, err := onnxedit.Inspect(model)
	if err != nil {
		t.Fatal(err)
	}
	if len(in) != 1 || in[0].Elem != onnxedit.Float || len(in[0].Dims) != 0 || in[0].UnknownRank {
		t.Fatalf("adapted inputs = %+v, want x float rank 0", in)
	}
	ins, _, err := rt.Inspect(context.Background(), model)
	if err != nil {
		t.Fatalf("ONNX Runtime cannot read the adapted model: %v", err)
	}
	if len(ins) != 1 || ins[0].DType != inference.Float32 || ins[0].Rank() != 0 {
		t.Fatalf("ONNX Runtime sees inputs %+v, want x float32 rank 0", ins)
	}
}
