package perception

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mirrorDir is the read-only model mirror (FASHIOND_MODELS_MIRROR or
// ../../shared/models next to the checkout).
func mirrorDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("FASHIOND_MODELS_MIRROR"); d != "" {
		return d
	}
	d, _ := filepath.Abs("../../shared/models")
	if _, err := os.Stat(filepath.Join(d, "MODELS.md")); err != nil {
		t.Skipf("no model mirror at %s (set FASHIOND_MODELS_MIRROR)", d)
	}
	return d
}

func TestEveryMirrorModelHasAManifest(t *testing.T) {
	dir := mirrorDir(t)
	md, err := os.ReadFile(filepath.Join(dir, "MODELS.md"))
	if err != nil {
		t.Fatal(err)
	}
	// The table rows: | file.onnx | task | licence | source |
	var files []string
	for _, line := range strings.Split(string(md), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 5 {
			continue
		}
		if f := strings.TrimSpace(cells[1]); strings.HasSuffix(f, ".onnx") {
			files = append(files, f)
		}
	}
	if len(files) < 9 {
		t.Fatalf("parsed %d model rows from MODELS.md: %v", len(files), files)
	}
	sums := map[string]string{}
	f, err := os.Open(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if sum, name, ok := strings.Cut(sc.Text(), "  "); ok {
			sums[strings.TrimPrefix(name, "*")] = sum
		}
	}
	list, err := LoadManifests()
	if err != nil {
		t.Fatal(err)
	}
	byFile := map[string]Manifest{}
	for _, m := range list {
		byFile[m.File] = m
	}
	for _, file := range files {
		m, ok := byFile[file]
		if !ok {
			t.Errorf("%s (MODELS.md) has no manifest", file)
			continue
		}
		if m.SHA256 != sums[file] {
			t.Errorf("%s: manifest sha256 %s, SHA256SUMS %s", file, m.SHA256, sums[file])
		}
		got, err := fileSHA256(t.Context(), filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		if got != m.SHA256 {
			t.Errorf("%s: mirror file hashes to %s, manifest says %s", file, got, m.SHA256)
		}
		if m.License == "" || m.Source == "" || len(m.Inputs) == 0 || m.Preprocess == nil {
			t.Errorf("%s: manifest lacks licence, source, inputs or preprocessing", file)
		}
	}
}

func TestLoadManifests(t *testing.T) {
	list, err := LoadManifests()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Manifest{}
	for _, m := range list {
		byName[m.Name] = m
		if m.MaxDelayMS >= 10 || m.MaxBatch < 1 {
			t.Errorf("%s: batching limits %d / %d ms", m.Name, m.MaxBatch, m.MaxDelayMS)
		}
	}
	for _, slot := range []string{"tryon-diffusion", "inpainting", "text-to-image", "image-to-video"} {
		m, ok := byName[slot]
		if !ok || !m.Generative || !m.Optional || m.File != "" {
			t.Errorf("generative slot %s: %+v", slot, m)
		}
	}
	for _, name := range []string{"blazepose_full", "blazepose_lite", "selfie_segmentation", "skin_clothes_hair_pan", "tcmonodepth_small", "realesr_general_x4v3", "realesrgan_x4plus"} {
		m := byName[name]
		if m.BatchFile != name+".batch.onnx" || !m.Batchable() {
			t.Errorf("%s: batch rewrite %q batchable=%v", name, m.BatchFile, m.Batchable())
		}
	}
	if m := byName["yunet"]; m.Batchable() || m.MaxBatch != 1 {
		t.Errorf("yunet folds the batch into anchors and must not batch: %+v", m)
	}
	p := byName["skin_clothes_hair_pan"].Preprocess
	if p.ColorOrder != "RGB" || p.Width != 512 || len(p.Mean) != 3 || p.Mean[0] != 0.485 || p.Std[2] != 0.225 {
		t.Errorf("skin_clothes_hair_pan preprocessing %+v", p)
	}
	if p := byName["yunet"].Preprocess; p.ColorOrder != "BGR" || p.Scale != 1 || p.PadMultiple != 32 {
		t.Errorf("yunet preprocessing %+v", p)
	}
	if o := byName["selfie_segmentation"].BatchOptions(); o.MaxBatch != 4 || o.MaxDelay.Milliseconds() != 4 || o.Name != "selfie_segmentation" {
		t.Errorf("batch options %+v", o)
	}
}

func TestParseManifest(t *testing.T) {
	const sum = "b8a235fb0493e7a4bf01b731432ab9b39a5f8f9373b0ba97f0c7343abab65d89"
	tensors := `"inputs":[{"name":"x","dtype":"float32","shape":[1,3]}],"outputs":[{"name":"y","dtype":"float32","shape":[1]}]`
	cases := []struct {
		name, json string
		ok         bool
	}{
		{"good", `{"name":"m","file":"m.onnx","sha256":"` + sum + `","task":"t",` + tensors + `}`, true},
		{"good batch rewrite", `{"name":"m","file":"m.onnx","sha256":"` + sum + `","task":"t","batch_file":"m.batch.onnx","batch_sha256":"` + sum + `",` + tensors + `}`, true},
		{"optional slot", `{"name":"slot","file":"","sha256":"","task":"t","optional":true,"generative":true}`, true},
		{"slot not optional", `{"name":"slot","file":"","sha256":"","task":"t"}`, false},
		{"unknown field", `{"name":"m","file":"m.onnx","sha256":"` + sum + `","task":"t","colour":"red",` + tensors + `}`, false},
		{"short sha", `{"name":"m","file":"m.onnx","sha256":"abc","task":"t",` + tensors + `}`, false},
		{"upper-case sha", `{"name":"m","file":"m.onnx","sha256":"` + strings.ToUpper(sum) + `","task":"t",` + tensors + `}`, false},
		{"path in file", `{"name":"m","file":"../m.onnx","sha256":"` + sum + `","task":"t",` + tensors + `}`, false},
		{"not onnx", `{"name":"m","file":"m.bin","sha256":"` + sum + `","task":"t",` + tensors + `}`, false},
		{"delay 10 ms", `{"name":"m","file":"m.onnx","sha256":"` + sum + `","task":"t","max_batch":4,"max_delay_ms":10,` + tensors + `}`, false},
		{"batch file without sha", `{"name":"m","file":"m.onnx","sha256":"` + sum + `","task":"t","batch_file":"m.batch.onnx",` + tensors + `}`, false},
		{"batch file is file", `{"name":"m","file":"m.onnx","sha256":"` + sum + `","task":"t","batch_file":"m.onnx","batch_sha256":"` + sum + `",` + tensors + `}`, false},
		{"bad device", `{"name":"m","file":"m.onnx","sha256":"` + sum + `","task":"t","device":"tpu",` + tensors + `}`, false},
		{"no tensors", `{"name":"m","file":"m.onnx","sha256":"` + sum + `","task":"t"}`, false},
		{"bad name", `{"name":"M/1","file":"m.onnx","sha256":"` + sum + `","task":"t",` + tensors + `}`, false},
		{"not json", `{"name":`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := ParseManifest([]byte(c.json))
			if (err == nil) != c.ok {
				t.Fatalf("err = %v, want ok=%v", err, c.ok)
			}
			if c.ok && (m.Device != "auto" || m.MaxBatch != 1) {
				t.Fatalf("defaults not applied: %+v", m)
			}
		})
	}
}

func FuzzParseManifest(f *testing.F) {
	data, err := manifestFS.ReadFile("manifests/yunet.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte(`{"name":"slot","optional":true,"task":"x"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseManifest(b)
		if err != nil {
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("parsed manifest does not validate: %v", err)
		}
		if m.File != "" && (strings.ContainsAny(m.File, `/\`) || m.File == ".." || len(m.SHA256) != 64) {
			t.Fatalf("unsafe manifest accepted: %+v", m)
		}
	})
}
