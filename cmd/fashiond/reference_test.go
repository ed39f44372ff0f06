package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fashiond/diffusion"
	"fashiond/internal/testenv"
)

// TestVerifyReference is docs/GENERATIVE.md's "checking your export"
// walk-through on the parity fixture exported by scripts/export/sd.py:
// write the noise, install, verify against diffusers' picture (ok), then a
// reference whose settings differ (exit error naming the difference).
func TestVerifyReference(t *testing.T) {
	parity, _ := filepath.Abs("../../diffusion/testdata/parity")
	models := t.TempDir()
	common := []string{"--models-dir", models, "--ort-lib", testenv.ORTLib(), "--device", "cpu"}
	var out bytes.Buffer
	if err := runModels(context.Background(), append([]string{"install", filepath.Join(parity, "models", "sd"), "--name", "sd"}, common...), &out); err != nil {
		t.Fatalf("install: %v\n%s", err, out.String())
	}
	ref := t.TempDir()
	out.Reset()
	if err := runModels(context.Background(), []string{"noise", "--seed", "11", "--count", "2048", filepath.Join(ref, "noise.f32")}, &out); err != nil {
		t.Fatalf("noise: %v\n%s", err, out.String())
	}
	expected, err := os.ReadFile(filepath.Join(parity, "expected", "t2i-pndm-negative.png"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ref, "expected.png"), expected, 0o644); err != nil {
		t.Fatal(err)
	}
	write := func(guidance float64) {
		b, _ := json.Marshal(diffusion.Reference{Prompt: "a linen shirt on a hanger, studio photo", NegativePrompt: "blurry, low quality",
			Guidance: guidance, Steps: 8, Method: "pndm", Seed: 11, Width: 64, Height: 64, Tolerance: 1e-3, MadeBy: "parity fixture"})
		if err := os.WriteFile(filepath.Join(ref, diffusion.FileReference), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(5)
	out.Reset()
	err = runModels(context.Background(), append([]string{"verify", "--reference", ref, "--name", "sd"}, common...), &out)
	if err != nil || !strings.Contains(out.String(), "tolerance 0.001: ok") {
		t.Fatalf("verify: %v\n%s", err, out.String())
	}
	write(6)
	out.Reset()
	err = runModels(context.Background(), append([]string{"verify", "--reference", ref, "--name", "sd"}, common...), &out)
	if err == nil || !strings.Contains(err.Error(), "over the tolerance") || !strings.Contains(out.String(), "FAILED") {
		t.Fatalf("verify with other settings: %v\n%s", err, out.String())
	}
}
