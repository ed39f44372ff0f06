package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fashiond/cuda"
	"fashiond/internal/testenv"
)

// TestBenchCUDARefused: --device cuda on a node without CUDA is one error
// saying why, before any model is loaded, in both batching benchmarks.
func TestBenchCUDARefused(t *testing.T) {
	if cuda.Discover().Available() {
		t.Skip("this node has a CUDA device")
	}
	for name, run := range batchBenches {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			err := run(context.Background(), []string{"--device", "cuda", "--ort-lib", testenv.ORTLib(), "--folder", "/nonexistent"}, &out)
			if err == nil || !strings.Contains(err.Error(), "FASHIOND_DEVICE=cuda but ") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %v, want one line naming why CUDA cannot be had", err)
			}
		})
	}
}

// TestBenchDiffusionAnchor: --anchor prints fashiond's images/s beside
// diffusers' (contract model on the CPU: plumbing, not a speed figure).
func TestBenchDiffusionAnchor(t *testing.T) {
	folder := filepath.Join("..", "..", "diffusion", "testdata", "contract", "oracle-fp16")
	if _, err := os.Stat(folder); err != nil {
		t.Skip("no contract models (make setup)")
	}
	anchor := filepath.Join(t.TempDir(), "anchor.txt")
	if err := os.WriteFile(anchor, []byte("params unet 860M\nRESULT diffusers images=1 wall=0.783s images/s=1.277 steps/s=25.54\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err := runBenchDiffusion(context.Background(), []string{"--device", "cpu", "--ort-lib", testenv.ORTLib(), "--folder", folder,
		"--size", "64", "--steps", "2", "--jobs", "1", "--anchor", anchor}, &out)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(out.String())
	if !strings.Contains(out.String(), "side by side") || !strings.Contains(out.String(), "1.277") {
		t.Fatalf("no comparison row:\n%s", out.String())
	}
	empty := filepath.Join(t.TempDir(), "empty.txt")
	os.WriteFile(empty, []byte("nothing\n"), 0o644)
	if err := runBenchDiffusion(context.Background(), []string{"--device", "cpu", "--ort-lib", testenv.ORTLib(), "--folder", folder,
		"--size", "64", "--steps", "1", "--jobs", "1", "--anchor", empty}, &out); err == nil || !strings.Contains(err.Error(), "no \"RESULT diffusers") {
		t.Fatalf("anchor without results: %v", err)
	}
}
