package inference

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	ort "github.com/yalue/onnxruntime_go"
)

// TestInspectMatchesORT: Inspect (onnxedit, no session) reports what ONNX
// Runtime reports for every installed model and contract graph: the same
// names, element types and ranks, and the same sizes except where ONNX
// Runtime's shape inference fixed a dimension the file leaves open (-1).
func TestInspectMatchesORT(t *testing.T) {
	rt := testRuntime(t)
	var paths []string
	for _, g := range []string{"../data/models/*.onnx", "../diffusion/testdata/contract/*/*/model.onnx"} {
		m, _ := filepath.Glob(g)
		paths = append(paths, m...)
	}
	if len(paths) < 10 {
		t.Skipf("%d models (make setup)", len(paths))
	}
	for _, p := range paths {
		in, out, err := rt.Inspect(context.Background(), p)
		if err != nil {
			t.Fatal(p, err)
		}
		var oi, oo []ort.InputOutputInfo
		if err := guard(func() (e error) { oi, oo, e = ort.GetInputOutputInfo(p); return }); err != nil {
			t.Fatal(p, err)
		}
		for k, pair := range [][2][]IOInfo{{in, ioInfos(oi)}, {out, ioInfos(oo)}} {
			got, want := pair[0], pair[1]
			if len(got) != len(want) {
				t.Fatalf("%s: %d values, ORT %d", p, len(got), len(want))
			}
			for i := range got {
				g, w := got[i], want[i]
				if g.Name != w.Name || g.DType != w.DType || g.Type != w.Type || len(g.Dims) != len(w.Dims) {
					t.Fatalf("%s (%d): %+v, ORT %+v", p, k, g, w)
				}
				for d := range g.Dims {
					if g.Dims[d] != w.Dims[d] && g.Dims[d] != -1 {
						t.Fatalf("%s: %s dims %v, ORT %v", p, g.Name, g.Dims, w.Dims)
					}
				}
				if k == 0 && !slices.Equal(g.Dims, w.Dims) {
					t.Errorf("%s: input %s dims %v, ORT %v", p, g.Name, g.Dims, w.Dims)
				}
			}
		}
	}
}
