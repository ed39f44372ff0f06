package diffusion

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func parityCaseNamed(t *testing.T, fx parityFixtures, name string) parityCase {
	t.Helper()
	for _, c := range fx.Cases {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("fixtures.json has no case %q", name)
	return parityCase{}
}

// TestParityExportsInstall installs folders made by scripts/export/sd.py
// (models/sd) and scripts/export/catvton.py (models/catvton) with Install,
// as `fashiond models install` does, and checks the installed copies still
// reproduce diffusers.
func TestParityExportsInstall(t *testing.T) {
	fx := loadParity(t)
	rt := testRuntime(t)
	models := t.TempDir()
	for _, tc := range []struct {
		folder, name string
		task         Task
		check        string
	}{
		{"sd", "sd", TextToImage, "t2i-euler"},
		{"sd-inpaint", "sd-inpaint", Inpainting, "inpaint9-pndm-1.0"},
		{"catvton", "vton", TryOn, "catvton-ddim-guidance2.5-eta1"},
	} {
		t.Run(tc.folder, func(t *testing.T) {
			rec, err := Install(context.Background(), rt, filepath.Join(parityDir, "models", tc.folder), models, InstallOptions{Name: tc.name})
			if err != nil {
				t.Fatal(err)
			}
			if rec.Task != tc.task {
				t.Fatalf("installed as %s, want %s", rec.Task, tc.task)
			}
			m, err := Open(context.Background(), rt, models, tc.name, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			c := parityCaseNamed(t, fx, tc.check)
			want, err := readPlanesPNG(filepath.Join(parityDir, c.Expected), fx.Size, fx.Size)
			if err != nil {
				t.Fatal(err)
			}
			if d, _ := maxAbsDiff(runParity(t, m, c, fx.Size).Pixels, want); d > c.Tolerance {
				t.Fatalf("installed %s: max difference %.3g from diffusers, tolerance %g", tc.name, d, c.Tolerance)
			}
		})
	}
}

// referenceFolder makes a reference folder (what scripts/export/sd.py
// --reference writes) from a text-to-image parity case.
func referenceFolder(t *testing.T, fx parityFixtures, c parityCase) string {
	t.Helper()
	dir := t.TempDir()
	copyInto := func(src, name string) {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	copyInto(filepath.Join(parityDir, c.Expected), "expected.png")
	copyInto(filepath.Join(parityDir, "noise", fmt.Sprintf("seed-%d.f32", c.Seed)), "noise.f32")
	ref, err := json.Marshal(Reference{Mode: ModeText, Prompt: c.Prompt, NegativePrompt: c.NegativePrompt,
		Guidance: c.Guidance, Steps: c.Steps, Method: c.Method, Seed: c.Seed, Width: fx.Size, Height: fx.Size,
		Tolerance: 1e-3, Expected: "expected.png", Noise: "noise.f32", MadeBy: "parity fixture " + c.Name})
	if err != nil {
		t.Fatal(err)
	}
	writeString(t, filepath.Join(dir, FileReference), string(ref))
	return dir
}

func TestCheckReference(t *testing.T) {
	fx := loadParity(t)
	rt := testRuntime(t)
	m := loadModel(t, rt, filepath.Join(parityDir, "models", "sd"), Options{})
	c := parityCaseNamed(t, fx, "t2i-pndm-negative")
	dir := referenceFolder(t, fx, c)
	rep, err := m.CheckReference(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.Values != 3*fx.Size*fx.Size || !strings.Contains(rep.String(), "tolerance 0.001: ok") {
		t.Fatalf("report %s", rep)
	}
	// Another seed's settings against this picture: over the tolerance.
	other := strings.Replace(readString(t, filepath.Join(dir, FileReference)), `"guidance":5`, `"guidance":6`, 1)
	writeString(t, filepath.Join(dir, FileReference), other)
	if rep, err = m.CheckReference(context.Background(), dir); err != nil || rep.OK() || !strings.Contains(rep.String(), "FAILED") {
		t.Fatalf("changed guidance: report %s, err %v", rep, err)
	}
	// A noise file that is not the engine's stream for the seed is refused.
	b := []byte(readString(t, filepath.Join(dir, "noise.f32")))
	b[40] ^= 1
	writeString(t, filepath.Join(dir, "noise.f32"), string(b))
	if _, err := m.CheckReference(context.Background(), dir); err == nil || !strings.Contains(err.Error(), "fashiond's noise for seed") {
		t.Fatalf("tampered noise: %v", err)
	}
}

func TestReadReferenceRefusals(t *testing.T) {
	for _, tc := range []struct{ json, want string }{
		{`{"mode": "img2img", "width": 64, "height": 64}`, `only "text-to-image"`},
		{`{"width": 64, "height": 64, "tolerance": 2}`, "tolerance 2 must be in (0, 1]"},
		{`{"width": 0, "height": 64}`, "width 0 and height 64"},
		{`{"width": 64, "height": 64, "expected": "../x.png"}`, "plain name"},
		{`{"width": 64, "height": 64, "method": "heun"}`, "unknown method"},
		{`{"width": 64, "height": 64, "colour": 1}`, "unknown field"},
		{`{"width": 64, "height": 64}`, "noise.f32"},
	} {
		dir := t.TempDir()
		writeString(t, filepath.Join(dir, FileReference), tc.json)
		if _, _, err := ReadReference(dir); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.json, err, tc.want)
		}
	}
}

func readString(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeString(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// FuzzReadReference: any reference.json is an error or a checked
// reference, never a panic.
func FuzzReadReference(f *testing.F) {
	f.Add([]byte(`{"prompt": "a coat", "steps": 8, "seed": 3, "width": 64, "height": 64, "tolerance": 0.01}`))
	f.Add([]byte(`{"mode": "img2img"}`))
	f.Add([]byte(`{"width": 64, "height": 64, "noise": "n.f32", "expected": "e.png"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		writeString(t, filepath.Join(dir, FileReference), string(b))
		writeString(t, filepath.Join(dir, "noise.f32"), string(make([]byte, 8)))
		ref, px, err := ReadReference(dir)
		if err == nil && (len(px) != 3*ref.Width*ref.Height || ref.Tolerance <= 0) {
			t.Fatalf("accepted %q: %+v with %d pixels", b, ref, len(px))
		}
	})
}
