package diffusion

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// fashnOracle is the closed-form fashn-vton folder (scripts/export/fashn_oracle.py):
// velocity = (d − x)/(1 − t) with d = 0.5·person + 0.25·garment +
// 0.125·person pose + 0.0625·garment pose + 0.01·category, 24×36.
const fashnOracle = "testdata/fashn/oracle"

// fashnInputs are distinct planes for the oracle's size.
func fashnInputs(w, h int) FashnRequest {
	hw := w * h
	mk := func(c int, f func(i int) float32) []float32 {
		v := make([]float32, c*hw)
		for i := range v {
			v[i] = f(i)
		}
		return v
	}
	return FashnRequest{
		Person:      mk(3, func(i int) float32 { return float32(i%hw)/float32(hw) - 0.5 }),
		Garment:     mk(3, func(i int) float32 { return float32(i/hw) * 0.3 }),
		PersonPose:  mk(1, func(i int) float32 { return float32(i%7)/7 - 0.4 }),
		GarmentPose: mk(1, func(i int) float32 { return -1 }),
		Category:    CategoryBottoms,
	}
}

// oracleTarget is d for the request's inputs and class k.
func oracleTarget(req FashnRequest, hw int, class float64) []float64 {
	d := make([]float64, 3*hw)
	for i := range d {
		p := i % hw
		d[i] = 0.5*float64(req.Person[i]) + 0.25*float64(req.Garment[i]) + 0.125*float64(req.PersonPose[p]) +
			0.0625*float64(req.GarmentPose[p]) + 0.01*class
	}
	return d
}

func loadFashn(t testing.TB, opts Options) *FashnModel {
	t.Helper()
	m, err := LoadFashnVTON(context.Background(), testRuntime(t), fashnOracle, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func TestFashnOracleLandsOnItsTarget(t *testing.T) {
	m := loadFashn(t, Options{})
	l := m.Layout()
	hw := l.Width * l.Height
	skip0 := 0
	cases := []struct {
		name  string
		g     float64
		skip  *int
		scale float64 // where the samples land: scale·d
	}{
		// With guidance skipped on the last step, that step is the exact
		// conditional field: every guidance lands on d.
		{"default guidance, skip last", 0, nil, 1},
		{"guidance 3, skip last", 3, nil, 1},
		// Guided to the end: v = (g·d − x)/(1 − t) (the unconditional
		// target is 0: zero planes, class 0), so samples land on g·d.
		{"guidance 1.5 to the end", 1.5, &skip0, 1.5},
		{"guidance 1", 1, &skip0, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := fashnInputs(l.Width, l.Height)
			req.Guidance, req.SkipGuidanceLast, req.Samples, req.Seed = c.g, c.skip, 2, 40
			res, err := m.TryOn(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Samples) != 2 || res.Seeds[0] != 40 || res.Seeds[1] != 41 || res.Steps != l.Steps {
				t.Fatalf("samples %d seeds %v steps %d", len(res.Samples), res.Seeds, res.Steps)
			}
			d := oracleTarget(req, hw, float64(l.Categories[CategoryBottoms]))
			for s, x := range res.Samples {
				for i, v := range x {
					want := math.Max(-1, math.Min(1, c.scale*d[i]))
					if math.Abs(float64(v)-want) > 1e-5 {
						t.Fatalf("sample %d [%d] = %v, want %v", s, i, v, want)
					}
				}
			}
		})
	}
}

func TestFashnRequestErrorsNameTheField(t *testing.T) {
	m := loadFashn(t, Options{})
	l := m.Layout()
	cases := []struct {
		name string
		edit func(*FashnRequest)
		want string
	}{
		{"category", func(r *FashnRequest) { r.Category = "shoes" }, "category"},
		{"steps", func(r *FashnRequest) { r.Steps = 999 }, "steps"},
		{"guidance", func(r *FashnRequest) { r.Guidance = 30 }, "guidance"},
		{"samples", func(r *FashnRequest) { r.Samples = 9 }, "samples"},
		{"skip", func(r *FashnRequest) { n := 5; r.Steps, r.SkipGuidanceLast = 4, &n }, "skip_guidance_last"},
		{"person size", func(r *FashnRequest) { r.Person = r.Person[:10] }, "ca_images"},
		{"pose size", func(r *FashnRequest) { r.GarmentPose = nil }, "garment_poses"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := fashnInputs(l.Width, l.Height)
			c.edit(&req)
			_, err := m.TryOn(context.Background(), req)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v does not name %q", err, c.want)
			}
		})
	}
}

func TestFashnBatchedJobsShareCallsAndCancel(t *testing.T) {
	m := loadFashn(t, Options{Batching: true, MaxBatch: 8})
	l := m.Layout()
	hw := l.Width * l.Height
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	results := make([]*FashnResult, 3)
	errs := make([]error, 3)
	// Progress(0) comes after a job has joined the batcher and before its
	// first call: holding every job there until all three have joined
	// makes them step together however the goroutines are scheduled.
	var joined sync.WaitGroup
	joined.Add(3)
	for k := range 3 {
		req := fashnInputs(l.Width, l.Height)
		req.Steps, req.Seed = 12, uint64(k)
		req.Category = []string{CategoryTops, CategoryBottoms, CategoryOnePieces}[k]
		c := context.Background()
		if k == 2 {
			c = ctx
		}
		req.Progress = func(done, total int) {
			if done == 0 {
				joined.Done()
				joined.Wait()
			}
			if k == 2 && done == 4 {
				cancel()
			}
		}
		wg.Go(func() { results[k], errs[k] = m.TryOn(c, req) })
	}
	wg.Wait()
	if !errors.Is(errs[2], context.Canceled) {
		t.Errorf("cancelled job: %v", errs[2])
	}
	for k := range 2 {
		if errs[k] != nil {
			t.Fatalf("job %d: %v", k, errs[k])
		}
		req := fashnInputs(l.Width, l.Height)
		d := oracleTarget(req, hw, float64(k+1))
		if diff := maxDiff(results[k].Samples[0], d); diff > 1e-5 {
			t.Errorf("job %d (class %d) is %g from its target: rows were mixed up", k, k+1, diff)
		}
	}
	st := m.Stats()
	// Unbatched: 2 jobs × 12 steps + the cancelled job's ≤ 5 calls.
	if st.Calls >= 24 {
		t.Errorf("%d transformer calls for 2 full jobs of 12 steps: none shared", st.Calls)
	}
}

func TestInstallFashn(t *testing.T) {
	rt := testRuntime(t)
	models := t.TempDir()
	rec, err := Install(context.Background(), rt, fashnOracle, models, InstallOptions{Name: "vton-flow"})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Task != TryOn || rec.Layout != LayoutFashnVTON || rec.Files[FileLayout] == "" ||
		rec.Files[filepath.Join(dirTransformer, "model.onnx.data")] == "" {
		t.Fatalf("record %+v", rec)
	}
	if name, err := Choose(context.Background(), models, TryOn, ""); err != nil || name != "vton-flow" {
		t.Fatalf("choose: %q, %v", name, err)
	}
	if l, err := LayoutOf(context.Background(), models, "vton-flow"); err != nil || l != LayoutFashnVTON {
		t.Fatalf("layout of: %q, %v", l, err)
	}
	if _, err := Open(context.Background(), rt, models, "vton-flow", Options{}); err == nil || !strings.Contains(err.Error(), "OpenFashnVTON") {
		t.Fatalf("Open on a fashn-vton model: %v", err)
	}
	m, err := OpenFashnVTON(context.Background(), rt, models, "vton-flow", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	list, err := List(context.Background(), models, true)
	if err != nil || len(list) != 1 || list[0].State != "verified" {
		t.Fatalf("list: %+v, %v", list, err)
	}
}

// TestInstallFashnRefusals breaks a copy of the oracle folder one way at a
// time; each error names the file and the field or tensor, and nothing is
// left installed.
func TestInstallFashnRefusals(t *testing.T) {
	rt := testRuntime(t)
	const good = `{"layout": "fashn-vton", "weights": "random", "width": 24, "height": 36, "patch_size": 12, "categories": {"tops": 1, "bottoms": 2, "one-pieces": 3}}`
	layout := func(body string) func(string) error {
		return func(d string) error { return os.WriteFile(filepath.Join(d, FileLayout), []byte(body), 0o644) }
	}
	edit := func(from, to string) func(string) error { return layout(strings.Replace(good, from, to, 1)) }
	cases := []installRefusal{
		{"no layout field", edit(`"layout": "fashn-vton", `, ""), "", []string{FileLayout, `"layout"`, "missing"}},
		{"other layout", edit(`fashn-vton`, "idm-vton"), "", []string{FileLayout, `"layout"`, "idm-vton"}},
		{"weights", edit(`"random"`, `"finetuned"`), "", []string{FileLayout, `"weights"`}},
		{"width not a multiple of the patch", edit(`"width": 24`, `"width": 30`), "", []string{FileLayout, `"width"`, "30"}},
		{"height", edit(`"height": 36`, `"height": 0`), "", []string{FileLayout, `"height"`}},
		{"patch", edit(`"patch_size": 12`, `"patch_size": 0`), "", []string{FileLayout, `"patch_size"`}},
		{"mu", edit(`"patch_size": 12`, `"patch_size": 12, "mu": 99`), "", []string{FileLayout, `"mu"`}},
		{"steps", edit(`"patch_size": 12`, `"patch_size": 12, "steps": 500`), "", []string{FileLayout, `"steps"`}},
		{"skip", edit(`"patch_size": 12`, `"patch_size": 12, "steps": 2, "skip_guidance_last": 3`), "", []string{FileLayout, `"skip_guidance_last"`}},
		{"guidance", edit(`"patch_size": 12`, `"patch_size": 12, "guidance": -2`), "", []string{FileLayout, `"guidance"`}},
		{"category missing", edit(`, "one-pieces": 3`, ""), "", []string{FileLayout, `"categories"`}},
		{"category label", edit(`"one-pieces": 3`, `"one-pieces": 2`), "", []string{FileLayout, `"categories"`, "share"}},
		{"unknown field", edit(`"patch_size": 12`, `"patch_size": 12, "prompt": "x"`), "", []string{FileLayout, `"prompt"`}},
		{"not json", layout(`{"layout": `), "", []string{FileLayout, "invalid"}},
		{"size differs from the graph", edit(`"width": 24`, `"width": 48`), "", []string{"transformer/model.onnx", "48", FileLayout}},
		{"no transformer", func(d string) error { return os.RemoveAll(filepath.Join(d, dirTransformer)) }, "", []string{"transformer/model.onnx", "missing"}},
		{"no external data", func(d string) error { return os.Remove(filepath.Join(d, dirTransformer, "model.onnx.data")) }, "", []string{"transformer/model.onnx"}},
		{"truncated graph", func(d string) error {
			return os.WriteFile(filepath.Join(d, dirTransformer, fileGraph), []byte("\x08\x07\x12"), 0o644)
		}, "", []string{"transformer/model.onnx"}},
		{"task inpainting", func(string) error { return nil }, Inpainting, []string{"--task inpainting", LayoutFashnVTON, "try-on"}},
		{"no fashiond.json", func(d string) error { return os.Remove(filepath.Join(d, FileLayout)) }, "", []string{"not a Stable Diffusion ONNX export", LayoutFashnVTON}},
	}
	checkInstallRefusals(t, rt, fashnOracle, LayoutFashnVTON, cases)
}

// TestInstallFashnExportSizeIsTheGraphs: the exporter traces on a small
// input, then declares the model's size on the graph (72×48 for the small
// configuration); a fashiond.json of another size is refused naming both,
// even one the traced graph could compute at.
func TestInstallFashnExportSizeIsTheGraphs(t *testing.T) {
	const tiny = `{"layout": "fashn-vton", "weights": "random", "width": %d, "height": %d, "patch_size": 12, "categories": {"tops": 1, "bottoms": 2, "one-pieces": 3}}`
	size := func(w, h int) func(string) error {
		return func(d string) error {
			return os.WriteFile(filepath.Join(d, FileLayout), fmt.Appendf(nil, tiny, w, h), 0o644)
		}
	}
	checkInstallRefusals(t, testRuntime(t), fashnTiny, LayoutFashnVTON, []installRefusal{
		{"the trace's size", size(24, 36), "", []string{"transformer/model.onnx", FileLayout, "36"}},
		{"smaller", size(36, 48), "", []string{"transformer/model.onnx", FileLayout, "48"}},
		{"larger", size(96, 144), "", []string{"transformer/model.onnx", FileLayout, "144"}},
	})
}

func TestParseFashnLayoutDefaults(t *testing.T) {
	l, err := ParseFashnLayout([]byte(`{"layout": "fashn-vton", "weights": "released", "width": 576, "height": 864, "patch_size": 12,
		"categories": {"tops": 1, "bottoms": 2, "one-pieces": 3}}`))
	if err != nil {
		t.Fatal(err)
	}
	if l.Steps != 30 || l.Guidance != 1.5 || l.Mu != 1.5 || *l.SkipGuidanceLast != 1 {
		t.Fatalf("defaults %+v", l)
	}
}

// FuzzParseFashnLayout: parsing never panics, errors name the file, and an
// accepted layout is one the engine can run.
func FuzzParseFashnLayout(f *testing.F) {
	for _, s := range []string{
		`{"layout": "fashn-vton", "weights": "random", "width": 24, "height": 36, "patch_size": 12, "categories": {"tops": 1, "bottoms": 2, "one-pieces": 3}}`,
		`{"layout": "fashn-vton", "width": 1e3}`, `null`, `{"categories": {"tops": -1}}`, `{"mu": 1e999}`, `{"skip_guidance_last": null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := ParseFashnLayout(b)
		if err != nil {
			if !strings.HasPrefix(err.Error(), FileLayout+":") {
				t.Fatalf("error %q does not name %s", err, FileLayout)
			}
			return
		}
		ok := l.Layout == LayoutFashnVTON && l.PatchSize >= 1 && l.Width%l.PatchSize == 0 && l.Height%l.PatchSize == 0 &&
			l.Width >= minFashnSide && l.Height >= minFashnSide && l.Width <= MaxSide && l.Height <= MaxSide &&
			l.Steps >= 1 && l.Steps <= MaxSteps && *l.SkipGuidanceLast >= 0 && *l.SkipGuidanceLast <= l.Steps &&
			len(l.Categories) == 3 && !math.IsNaN(l.Mu) && !math.IsNaN(l.Guidance)
		if !ok {
			t.Fatalf("accepted %+v", l)
		}
		if _, err := (ShiftedLinear{Mu: l.Mu}).Times(l.Steps, 0); err != nil {
			t.Fatalf("accepted mu %v that the schedule refuses: %v", l.Mu, err)
		}
	})
}
