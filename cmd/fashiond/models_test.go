package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fashiond/internal/testenv"
)

func TestModelsList(t *testing.T) {
	lib, dir := testenv.ORTLib(), testenv.ModelsDir()
	var out bytes.Buffer
	err := runModels(context.Background(), []string{"verify", "--models-dir", dir, "--ort-lib", lib, "--device", "auto"}, &out)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatalf("verify on the installed repository: %v (run make setup)", err)
	}
	text := out.String()
	for _, want := range []string{
		"blazepose_full  ", "verified", "rewrite verified, max 4",
		"tryon-diffusion", "not installed (optional, generative)",
		"yunet", "pool (batch 1)", "GPU: no CUDA device:",
		"device: no CUDA device", "inference device: cpu (CUDA not used: no CUDA device", "all required models verified",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "selfie_segmentation ") && !strings.Contains(line, " cpu ") {
			t.Errorf("selfie_segmentation should run on cpu here: %q", line)
		}
	}
}

func TestModelsVerifyFailsOnEmptyRepository(t *testing.T) {
	var out bytes.Buffer
	dir := t.TempDir()
	err := runModels(context.Background(), []string{"verify", "--models-dir", dir, "--ort-lib", "/nonexistent/libonnxruntime.so"}, &out)
	if err == nil || !strings.Contains(err.Error(), "model blazepose_full") || !strings.Contains(err.Error(), "make setup") {
		t.Fatalf("verify on an empty repository: %v", err)
	}
	if !strings.Contains(out.String(), "ONNX Runtime: unavailable") || !strings.Contains(out.String(), "missing") {
		t.Fatalf("output:\n%s", out.String())
	}
	if err := runModels(context.Background(), []string{"frobnicate"}, &out); err == nil {
		t.Fatal("unknown subcommand accepted")
	}
}

func TestModelsInstall(t *testing.T) {
	mirror, _ := filepath.Abs("../../../shared/models")
	if _, err := os.Stat(mirror); err != nil {
		t.Skip("no mirror")
	}
	dir := t.TempDir()
	var out bytes.Buffer
	if err := runModels(context.Background(), []string{"install", "--models-dir", dir, "--models-mirror", mirror, "--ort-lib", "/nonexistent"}, &out); err != nil {
		t.Fatalf("install: %v\n%s", err, out.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "yunet.onnx")); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "make setup-models") {
		t.Errorf("install should say how batch rewrites are made:\n%s", out.String())
	}
}
