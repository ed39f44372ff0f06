package diffusion

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestInstallAdaptsFloat16ScalarTimestep(t *testing.T) {
	rt := testRuntime(t)
	src := contract(t, "oracle-fp16-scalar")
	models := t.TempDir()
	rec, err := Install(context.Background(), rt, src, models, InstallOptions{Name: "fp16-scalar"})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Task != TextToImage || rec.DType != "float16" || len(rec.Adapters) != 1 || rec.Adapters[0].Input != "timestep" {
		t.Fatalf("record %+v", rec)
	}
	if _, ok := rec.Files[filepath.Join(dirUNet, fileAdapter)]; !ok {
		t.Fatal("the adapter's hash is not recorded")
	}
	m, err := Open(context.Background(), rt, models, "fp16-scalar", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	o := loadOracle(t, src)
	h, w := 3, 5
	req := Request{Prompt: "pleated skirt", NegativePrompt: "dark", Guidance: 2, Steps: 6, Seed: 4, Width: w * 8, Height: h * 8}
	res, err := m.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	x0 := cfg(o.x0("dark", h, w, nil), o.x0("pleated skirt", h, w, nil), 2)
	if d := maxDiff(res.Pixels, o.decode(expectLatents(t, m, req, x0), h, w)); d > 4e-3 {
		t.Fatalf("max pixel difference %.3g through the adapter", d)
	}
	list, err := List(context.Background(), models, true)
	if err != nil || len(list) != 1 || list[0].State != "verified" {
		t.Fatalf("list = %+v, %v", list, err)
	}
	if _, err := Install(context.Background(), rt, src, models, InstallOptions{Name: "fp16-scalar"}); err == nil || !strings.Contains(err.Error(), "already installed") {
		t.Fatalf("second install: %v", err)
	}
	// A changed file is reported.
	cfgPath := filepath.Join(models, repoSubdir, "fp16-scalar", dirUNet, fileConfig)
	if err := os.WriteFile(cfgPath, []byte(`{"in_channels": 4}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if list, _ := List(context.Background(), models, true); list[0].State != "hash mismatch" {
		t.Fatalf("state after tampering: %s", list[0].State)
	}
	if err := Remove(models, "fp16-scalar"); err != nil {
		t.Fatal(err)
	}
	if list, _ := List(context.Background(), models, true); len(list) != 0 {
		t.Fatalf("after remove: %+v", list)
	}
	if _, err := Open(context.Background(), rt, models, "fp16-scalar", Options{}); err == nil || !strings.Contains(err.Error(), "no installed model") {
		t.Fatalf("open after remove: %v", err)
	}
}

func TestInstallInfersAndChecksTheTask(t *testing.T) {
	rt := testRuntime(t)
	models := t.TempDir()
	rec, err := Install(context.Background(), rt, contract(t, "oracle-inpaint"), models, InstallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Name != "oracle-inpaint" || rec.Task != Inpainting {
		t.Fatalf("record %s task %s", rec.Name, rec.Task)
	}
	_, err = Install(context.Background(), rt, contract(t, "oracle-floatb"), models, InstallOptions{Name: "x", Task: Inpainting})
	if err == nil || !strings.Contains(err.Error(), "4 input channels") {
		t.Fatalf("wrong --task: %v", err)
	}
	if _, err := os.Stat(filepath.Join(models, repoSubdir, "x")); !os.IsNotExist(err) {
		t.Fatal("a refused install left a folder")
	}
}

// TestMalformedFoldersAreRefused breaks a copy of a good folder one way at
// a time; each error names the file, the tensor and what was expected.
func TestMalformedFoldersAreRefused(t *testing.T) {
	rt := testRuntime(t)
	good := contract(t, "oracle-floatb")
	cases := []struct {
		name   string
		break_ func(dir string) error
		want   []string
	}{
		{"missing unet", func(d string) error { return os.Remove(filepath.Join(d, dirUNet, fileGraph)) }, []string{"unet/model.onnx: missing"}},
		{"missing index", func(d string) error { return os.Remove(filepath.Join(d, fileIndex)) }, []string{"model_index.json"}},
		{"missing vocab", func(d string) error { return os.Remove(filepath.Join(d, dirTokenizer, "vocab.json")) }, []string{"tokenizer", "vocab.json"}},
		{"text encoder as unet", func(d string) error {
			return copyFile(context.Background(), filepath.Join(d, dirText, fileGraph), filepath.Join(d, dirUNet, fileGraph))
		}, []string{"unet/model.onnx", `no input "sample"`, "input_ids"}},
		{"unet as vae decoder", func(d string) error {
			return copyFile(context.Background(), filepath.Join(d, dirUNet, fileGraph), filepath.Join(d, dirVAEDecoder, fileGraph))
		}, []string{"vae_decoder/model.onnx", "latent_sample"}},
		{"9-channel unet with a 4-channel config", func(d string) error {
			return copyFile(context.Background(), filepath.Join(contract(t, "oracle-inpaint"), dirUNet, fileGraph), filepath.Join(d, dirUNet, fileGraph))
		}, []string{"unet/config.json says in_channels 4", "unet/model.onnx", "sample"}},
		{"unknown scheduler", func(d string) error {
			return os.WriteFile(filepath.Join(d, dirScheduler, "scheduler_config.json"), []byte(`{"_class_name": "KarrasVeScheduler"}`), 0o644)
		}, []string{"scheduler_config.json", "KarrasVeScheduler"}},
		{"bad beta schedule", func(d string) error {
			return os.WriteFile(filepath.Join(d, dirScheduler, "scheduler_config.json"), []byte(`{"_class_name": "PNDMScheduler", "beta_schedule": "cosine"}`), 0o644)
		}, []string{"scheduler_config.json", "beta_schedule"}},
		{"5-channel unet config", func(d string) error {
			return os.WriteFile(filepath.Join(d, dirUNet, fileConfig), []byte(`{"in_channels": 5}`), 0o644)
		}, []string{"unet/config.json says in_channels 5", "sample"}},
		{"negative scaling factor", func(d string) error {
			return os.WriteFile(filepath.Join(d, dirVAEDecoder, fileConfig), []byte(`{"scaling_factor": -1}`), 0o644)
		}, []string{"vae_decoder/config.json", "scaling_factor"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "model")
			if err := copyTree(context.Background(), good, dir); err != nil {
				t.Fatal(err)
			}
			if err := c.break_(dir); err != nil {
				t.Fatal(err)
			}
			m, err := Load(context.Background(), rt, dir, Options{})
			if err == nil {
				m.Close()
				t.Fatal("a malformed folder loaded")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}
