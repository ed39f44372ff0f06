package diffusion

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fashiond/inference"
)

// TestInstallTryOn: the oracle try-on folder installs with task try-on and
// layout catvton, is chosen for its role, and opens as a try-on model.
func TestInstallTryOn(t *testing.T) {
	rt := testRuntime(t)
	models := t.TempDir()
	rec, err := Install(context.Background(), rt, contract(t, "oracle-catvton"), models, InstallOptions{Name: "vton"})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Task != TryOn || rec.Layout != LayoutCatVTON || rec.Files[FileLayout] == "" {
		t.Fatalf("record task %s layout %q files %v", rec.Task, rec.Layout, rec.Files)
	}
	if name, err := Choose(context.Background(), models, TryOn, ""); err != nil || name != "vton" {
		t.Fatalf("choose try-on: %q, %v", name, err)
	}
	if name, err := Choose(context.Background(), models, Inpainting, ""); err != nil || name != "" {
		t.Fatalf("choose inpainting: %q, %v (a try-on model is not an inpainting model)", name, err)
	}
	m, err := Open(context.Background(), rt, models, "vton", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.Task() != TryOn || m.Layout() == nil || m.Layout().PersonWidth != 192 {
		t.Fatalf("opened task %s layout %+v", m.Task(), m.Layout())
	}
}

// TestInstallTryOnRefusals breaks a copy of the oracle try-on folder one
// way at a time; each install error names the file and the field or
// tensor.
func TestInstallTryOnRefusals(t *testing.T) {
	rt := testRuntime(t)
	good := contract(t, "oracle-catvton")
	layout := func(body string) func(string) error {
		return func(d string) error { return os.WriteFile(filepath.Join(d, FileLayout), []byte(body), 0o644) }
	}
	cases := []installRefusal{
		{"unknown layout", layout(`{"layout": "idm-vton"}`), "", []string{FileLayout, `"layout"`, "idm-vton", "catvton"}},
		{"no layout", layout(`{"concat_axis": "height"}`), "", []string{FileLayout, `"layout"`, "missing"}},
		{"width axis", layout(`{"layout": "catvton", "concat_axis": "width"}`), "", []string{FileLayout, `"concat_axis"`, "width"}},
		{"text encoder", layout(`{"layout": "catvton", "text_encoder": true}`), "", []string{FileLayout, `"text_encoder"`}},
		{"odd size", layout(`{"layout": "catvton", "person_width": 100, "person_height": 128}`), "", []string{FileLayout, `"person_width"`, "100"}},
		{"unknown field", layout(`{"layout": "catvton", "prompt": "x"}`), "", []string{FileLayout, `"prompt"`}},
		{"not json", layout(`{"layout": `), "", []string{FileLayout, "invalid"}},
		{"4-channel unet", func(d string) error {
			if err := copyFile(context.Background(), filepath.Join(contract(t, "shape-sd15"), dirUNet, fileGraph), filepath.Join(d, dirUNet, fileGraph)); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(d, dirUNet, fileConfig), []byte(`{"cross_attention_dim": 768}`), 0o644)
		}, "", []string{"unet/model.onnx", "4 channels", FileLayout, "9-channel"}},
		{"no vae encoder", func(d string) error { return os.RemoveAll(filepath.Join(d, dirVAEEncoder)) }, "", []string{"vae_encoder/model.onnx", "missing", "garment"}},
		{"task inpainting", func(string) error { return nil }, Inpainting, []string{"--task inpainting", FileLayout, "catvton", "try-on"}},
	}
	checkInstallRefusals(t, rt, good, "try-on", cases)
	_, err := Install(context.Background(), rt, contract(t, "oracle-inpaint"), t.TempDir(), InstallOptions{Name: "y", Task: TryOn})
	if err == nil || !strings.Contains(err.Error(), "no "+FileLayout) {
		t.Fatalf("--task try-on on a plain inpainting export: %v", err)
	}
}

// installRefusal is one way to break a copy of a good model folder, the
// task asked for, and what the install error must mention.
type installRefusal struct {
	name   string
	break_ func(dir string) error
	task   Task
	want   []string
}

// checkInstallRefusals installs a broken copy of good (a what folder) per
// case: each install fails, the error mentions every wanted string, and
// nothing is left installed.
func checkInstallRefusals(t *testing.T, rt *inference.Runtime, good, what string, cases []installRefusal) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "model")
			if err := copyTree(context.Background(), good, dir); err != nil {
				t.Fatal(err)
			}
			if err := c.break_(dir); err != nil {
				t.Fatal(err)
			}
			models := t.TempDir()
			_, err := Install(context.Background(), rt, dir, models, InstallOptions{Name: "x", Task: c.task})
			if err == nil {
				t.Fatalf("a malformed %s folder was installed", what)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q does not mention %q", err, w)
				}
			}
			if _, err := os.Stat(filepath.Join(models, repoSubdir, "x")); !os.IsNotExist(err) {
				t.Fatal("a refused install left a folder")
			}
		})
	}
}

func TestParseLayoutDefaults(t *testing.T) {
	cases := []struct {
		in   string
		want Layout
	}{
		{`{"layout": "catvton"}`, Layout{Layout: "catvton", ConcatAxis: "height", PersonWidth: 768, PersonHeight: 1024, Steps: 50, Guidance: 2.5}},
		{`{"layout": "catvton", "concat_axis": "height", "text_encoder": false, "person_width": 384, "person_height": 512, "steps": 20, "guidance": 1}`,
			Layout{Layout: "catvton", ConcatAxis: "height", PersonWidth: 384, PersonHeight: 512, Steps: 20, Guidance: 1}},
	}
	for _, c := range cases {
		got, err := ParseLayout([]byte(c.in))
		if err != nil || got != c.want {
			t.Errorf("%s: %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{`{"layout": "catvton"} {}`, `[]`, `{"layout": "catvton", "steps": 999}`, `{"layout": "catvton", "guidance": -1}`, `{"layout": "catvton", "person_height": 1024}`} {
		if _, err := ParseLayout([]byte(bad)); err == nil || !strings.Contains(err.Error(), FileLayout) {
			t.Errorf("%s: accepted or unnamed (%v)", bad, err)
		}
	}
}

// FuzzParseLayout: parsing never panics, and a layout it accepts is one the
// engine can run (catvton on the height axis, sizes multiples of 8 in
// range, steps and guidance in range).
func FuzzParseLayout(f *testing.F) {
	for _, s := range []string{`{"layout": "catvton"}`, `{"layout": "catvton", "person_width": 8e1, "steps": 1.5}`, `{"layout": "x"}`, `null`, `{"guidance": 1e999}`, `{"layout":"catvton","person_width":-8,"person_height":64}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := ParseLayout(b)
		if err != nil {
			if !strings.HasPrefix(err.Error(), FileLayout+":") {
				t.Fatalf("error %q does not name %s", err, FileLayout)
			}
			return
		}
		ok := l.Layout == LayoutCatVTON && l.ConcatAxis == AxisHeight && !l.TextEncoder &&
			validSide(l.PersonWidth) && validSide(l.PersonHeight) && l.Steps >= 1 && l.Steps <= MaxSteps &&
			!math.IsNaN(l.Guidance) && l.Guidance >= 0 && l.Guidance <= maxGuidance
		if !ok {
			t.Fatalf("accepted %+v", l)
		}
	})
}
