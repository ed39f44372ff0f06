package diffusion

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fashiond/diffusion/scheduler"
	"fashiond/inference"
)

// The parity fixtures (testdata/parity, README.md there) are small networks
// of the real architectures exported to ONNX, and the images diffusers'
// own pipelines made from them with the engine's noise for each seed.
const parityDir = "testdata/parity"

type parityCase struct {
	Name           string  `json:"name"`
	Mode           Mode    `json:"mode"`
	Model          string  `json:"model"`
	Prompt         string  `json:"prompt"`
	NegativePrompt string  `json:"negative_prompt"`
	Method         string  `json:"method"`
	Guidance       float64 `json:"guidance"`
	Eta            float64 `json:"eta"`
	Strength       float64 `json:"strength"`
	Steps          int     `json:"steps"`
	Seed           uint64  `json:"seed"`
	Image          string  `json:"image"`
	Mask           string  `json:"mask"`
	Person         string  `json:"person"`
	Garment        string  `json:"garment"`
	Expected       string  `json:"expected"`
	Tolerance      float64 `json:"tolerance"`
	UNetCalls      int     `json:"unet_calls"`
	// DocumentedDifference, when set, says why the engine must differ from
	// diffusers on this case by more than the tolerance.
	DocumentedDifference string `json:"documented_difference"`
}

type parityFixtures struct {
	DiffusersCommit string       `json:"diffusers_commit"`
	Script          string       `json:"script"`
	ModelSeed       int64        `json:"model_seed"`
	Size            int          `json:"size"`
	Cases           []parityCase `json:"cases"`
}

func loadParity(t testing.TB) parityFixtures {
	t.Helper()
	var fx parityFixtures
	b, err := os.ReadFile(filepath.Join(parityDir, "fixtures.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &fx); err != nil {
		t.Fatal(err)
	}
	if fx.DiffusersCommit == "" || fx.Script == "" || len(fx.Cases) == 0 {
		t.Fatalf("fixtures.json lacks its provenance or cases: %+v", fx)
	}
	return fx
}

// parityModels loads each fixture folder once.
type parityModels struct {
	rt     *inference.Runtime
	loaded map[string]*Model
}

func (p *parityModels) get(t *testing.T, name string) *Model {
	t.Helper()
	if m, ok := p.loaded[name]; ok {
		return m
	}
	dir := filepath.Join(parityDir, "models", name)
	m, err := loadFolder(context.Background(), p.rt, dir, Options{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	p.loaded[name] = m
	return m
}

func (p *parityModels) close() {
	for _, m := range p.loaded {
		m.Close()
	}
}

func readPNG(t testing.TB, rel string) image.Image {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(parityDir, rel))
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return img
}

// runParity runs one case on the engine.
func runParity(t *testing.T, m *Model, c parityCase, size int) *Result {
	t.Helper()
	ctx := context.Background()
	if c.Mode == ModeTryOn {
		res, err := m.TryOn(ctx, TryOnRequest{Person: readPNG(t, filepath.Join("inputs", c.Person)),
			Garment: readPNG(t, filepath.Join("inputs", c.Garment)), Mask: readPNG(t, filepath.Join("inputs", c.Mask)),
			Steps: c.Steps, Guidance: c.Guidance, Method: scheduler.Kind(c.Method), Eta: c.Eta, Seed: c.Seed,
			Width: size, Height: size})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	req := Request{Prompt: c.Prompt, NegativePrompt: c.NegativePrompt, Guidance: c.Guidance, Steps: c.Steps,
		Method: scheduler.Kind(c.Method), Eta: c.Eta, Seed: c.Seed, Width: size, Height: size, Strength: c.Strength}
	if c.Image != "" {
		req.Image = readPNG(t, filepath.Join("inputs", c.Image))
	}
	if c.Mask != "" {
		req.Mask = readPNG(t, filepath.Join("inputs", c.Mask))
	}
	res, err := m.Generate(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func maxAbsDiff(a, b []float32) (maxd, mean float64) {
	for i := range a {
		d := math.Abs(float64(a[i]) - float64(b[i]))
		maxd = math.Max(maxd, d)
		mean += d
	}
	return maxd, mean / float64(len(a))
}

// TestParityWithDiffusers runs every fixture case on the engine and
// compares the decoded pixels (before the inpainting composite) with
// diffusers' pipeline output: within the case's tolerance, or, for a
// documented difference, beyond it.
func TestParityWithDiffusers(t *testing.T) {
	fx := loadParity(t)
	p := &parityModels{rt: testRuntime(t), loaded: map[string]*Model{}}
	defer p.close()
	var summary []string
	for _, c := range fx.Cases {
		t.Run(c.Name, func(t *testing.T) {
			want, err := readPlanesPNG(filepath.Join(parityDir, c.Expected), fx.Size, fx.Size)
			if err != nil {
				t.Fatal(err)
			}
			res := runParity(t, p.get(t, c.Model), c, fx.Size)
			maxd, mean := maxAbsDiff(res.Pixels, want)
			summary = append(summary, fmt.Sprintf("%-34s max %.2e mean %.2e (tolerance %.0e)", c.Name, maxd, mean, c.Tolerance))
			if c.DocumentedDifference != "" {
				if maxd <= c.Tolerance {
					t.Fatalf("documented difference not seen: max |engine - diffusers| = %.3g <= %g; the note says: %s", maxd, c.Tolerance, c.DocumentedDifference)
				}
				t.Logf("differs from diffusers as documented (max %.3g, mean %.3g): %s", maxd, mean, c.DocumentedDifference)
				return
			}
			if c.UNetCalls > 0 && res.Timings.Calls != c.UNetCalls {
				t.Errorf("engine made %d UNet calls, diffusers %d", res.Timings.Calls, c.UNetCalls)
			}
			if maxd > c.Tolerance {
				t.Fatalf("max |engine - diffusers| = %.4g (mean %.3g) over pixels in [0,1], tolerance %g (diffusers %s, %s, seed %d)",
					maxd, mean, c.Tolerance, fx.DiffusersCommit, fx.Script, c.Seed)
			}
		})
	}
	t.Logf("parity with diffusers %s:\n%s", fx.DiffusersCommit, strings.Join(summary, "\n"))
}

// TestParityNoiseIsTheEngines: the noise files the fixtures fed to
// diffusers are the engine's stream for their seeds, bit for bit.
func TestParityNoiseIsTheEngines(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(parityDir, "noise", "seed-*.f32"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no noise files: %v", err)
	}
	for _, f := range files {
		var seed uint64
		if _, err := fmt.Sscanf(filepath.Base(f), "seed-%d.f32", &seed); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ReadFloats(b)
		if err != nil {
			t.Fatal(err)
		}
		want := Noise(seed, len(got))
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s: value %d is %v, the engine draws %v", f, i, got[i], want[i])
			}
		}
	}
}
