package diffusion

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// Parity with FASHN VTON v1.5's own code (scripts/export/fashn_parity.py,
// run in the reference environment: torch 2.6 CPU): testdata/fashn/tiny is
// the repository's TryOnModel with small random weights (seed 0) exported
// by scripts/export/fashn_vton.py; sampler.json/.f32 hold one forward call
// and two jobs sampled by the repository's TryOnPipeline._sample from fixed
// noise.
const (
	fashnTiny = "testdata/fashn/tiny"
	// fashnForwardTol bounds |ONNX Runtime − torch| for one transformer
	// call (fp32; measured 1.9e-6 by the export script, ~2e-6 here).
	fashnForwardTol = 2e-5
	// fashnSampleTol bounds the sampled pictures' difference after 6
	// guided steps in [-1, 1] (measured 1.8e-6; a wrong schedule,
	// guidance row, category or skipped step moves them by > 1e-2).
	fashnSampleTol = 1e-4
)

// parityBlob is a fixture: a JSON index and concatenated float32 arrays.
type parityBlob struct {
	Meta struct {
		Steps    int     `json:"steps"`
		Mu       float64 `json:"mu"`
		Guidance float64 `json:"guidance"`
		Skip     int     `json:"skip_guidance_last"`
		Jobs     map[string]struct {
			Category string `json:"category"`
			Samples  int    `json:"samples"`
		} `json:"jobs"`
		Arrays map[string]struct {
			Offset int   `json:"offset"`
			Shape  []int `json:"shape"`
		} `json:"arrays"`
	}
	data []float32
}

func readParityBlob(t *testing.T, base string) *parityBlob {
	t.Helper()
	var b parityBlob
	raw, err := os.ReadFile(base + ".json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &b.Meta); err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(base + ".f32")
	if err != nil {
		t.Fatal(err)
	}
	b.data = make([]float32, len(bin)/4)
	for i := range b.data {
		b.data[i] = math.Float32frombits(binary.LittleEndian.Uint32(bin[4*i:]))
	}
	return &b
}

func (b *parityBlob) get(t *testing.T, name string) []float32 {
	t.Helper()
	a, ok := b.Meta.Arrays[name]
	if !ok {
		t.Fatalf("fixture has no array %s", name)
	}
	n := 1
	for _, d := range a.Shape {
		n *= d
	}
	return b.data[a.Offset : a.Offset+n]
}

func TestFashnScheduleMatchesReference(t *testing.T) {
	b := readParityBlob(t, filepath.Join("testdata", "fashn", "sampler"))
	ref := b.get(t, "schedule30")
	got, err := ShiftedLinear{Mu: 1.5}.Times(30, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range ref {
		// The reference's grid is float32 (torch.linspace).
		if math.Abs(got[i]-float64(ref[i])) > 1e-6 {
			t.Errorf("t[%d] = %.9f, reference %.9f", i, got[i], ref[i])
		}
	}
}

func TestFashnForwardMatchesReference(t *testing.T) {
	b := readParityBlob(t, filepath.Join("testdata", "fashn", "sampler"))
	m := loadFashnDir(t, fashnTiny, Options{})
	l := m.Layout()
	hw := l.Width * l.Height
	x, ts, cats := b.get(t, "forward/x"), b.get(t, "forward/times"), b.get(t, "forward/garment_categories")
	planes := [][]float32{b.get(t, "forward/ca_images"), b.get(t, "forward/garment_images"), b.get(t, "forward/person_poses"), b.get(t, "forward/garment_poses")}
	var rows []flowRow
	for r := range 2 {
		c := &flowCond{class: int64(cats[r])}
		for k, p := range planes {
			n := fashnPlanes[k].channels * hw
			c.planes = append(c.planes, p[r*n:(r+1)*n])
		}
		rows = append(rows, flowRow{x: x[r*3*hw : (r+1)*3*hw], t: float64(ts[r]), cond: c})
	}
	v, _, err := m.velocity(context.Background(), rows)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := maxAbsDiff(v, b.get(t, "forward/velocity"))
	t.Logf("one transformer call, ONNX Runtime vs torch: max |diff| %.3g", d)
	if d > fashnForwardTol {
		t.Fatalf("velocity differs from the reference by %g (tolerance %g)", d, fashnForwardTol)
	}
}

// TestFashnSamplerMatchesReference: the engine samples both reference jobs
// concurrently (batched, so their rows share transformer calls) from the
// reference's noise and lands on the reference's pictures.
func TestFashnSamplerMatchesReference(t *testing.T) {
	b := readParityBlob(t, filepath.Join("testdata", "fashn", "sampler"))
	m := loadFashnDir(t, fashnTiny, Options{Batching: true, MaxBatch: 8})
	l := m.Layout()
	per := 3 * l.Width * l.Height
	var wg sync.WaitGroup
	// Each job waits in Progress(0), after joining the batcher and before
	// its first call, until all have joined: they share calls whatever the
	// scheduling.
	var joined sync.WaitGroup
	joined.Add(len(b.Meta.Jobs))
	for name, job := range b.Meta.Jobs {
		req := FashnRequest{
			Person: b.get(t, name+"/person"), Garment: b.get(t, name+"/garment"),
			PersonPose: b.get(t, name+"/person_pose"), GarmentPose: b.get(t, name+"/garment_pose"),
			Category: job.Category, Steps: b.Meta.Steps, Guidance: b.Meta.Guidance, SkipGuidanceLast: &b.Meta.Skip, Samples: job.Samples,
			Progress: func(done, _ int) {
				if done == 0 {
					joined.Done()
					joined.Wait()
				}
			},
		}
		noise := b.get(t, name+"/noise")
		for s := range job.Samples {
			req.noise = append(req.noise, append([]float32(nil), noise[s*per:(s+1)*per]...))
		}
		want := b.get(t, name+"/output")
		wg.Go(func() {
			res, err := m.TryOn(context.Background(), req)
			if err != nil {
				t.Error(err)
				return
			}
			for s, x := range res.Samples {
				d, _ := maxAbsDiff(x, want[s*per:(s+1)*per])
				t.Logf("job %s (%s) sample %d: max |diff| %.3g over %d steps", name, job.Category, s, d, b.Meta.Steps)
				if d > fashnSampleTol {
					t.Errorf("job %s sample %d differs from the reference by %g (tolerance %g)", name, s, d, fashnSampleTol)
				}
			}
		})
	}
	wg.Wait()
	if st := m.Stats(); st.Calls >= int64(2*b.Meta.Steps) {
		t.Errorf("%d transformer calls for two jobs of %d steps: the jobs did not share calls", st.Calls, b.Meta.Steps)
	}
}

func loadFashnDir(t testing.TB, dir string, opts Options) *FashnModel {
	t.Helper()
	m, err := LoadFashnVTON(context.Background(), testRuntime(t), dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}
