package main

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fashiond/internal/testenv"
)

// TestInstallThenGenerate is the README's walk-through on a contract model:
// install a folder, see it listed, generate a PNG, remove it.
func TestInstallThenGenerate(t *testing.T) {
	lib := testenv.ORTLib()
	src, _ := filepath.Abs("../../diffusion/testdata/contract/oracle-inpaint")
	dir := t.TempDir()
	common := []string{"--models-dir", dir, "--ort-lib", lib, "--device", "cpu"}
	var out bytes.Buffer
	if err := runModels(context.Background(), append([]string{"install", src, "--name", "inp"}, common...), &out); err != nil {
		t.Fatalf("install: %v\n%s", err, out.String())
	}
	out.Reset()
	if err := runModels(context.Background(), append([]string{"list"}, common...), &out); err != nil {
		t.Fatal(err)
	}
	if !regexpLine(out.String(), "inp", "inpainting", "float32", "verified", "cpu") {
		t.Fatalf("list lacks the installed model:\n%s", out.String())
	}
	img := filepath.Join(t.TempDir(), "img.png")
	mask := filepath.Join(t.TempDir(), "mask.png")
	writeTestPNG(t, img, false)
	writeTestPNG(t, mask, true)
	png := filepath.Join(t.TempDir(), "out.png")
	var stdout, stderr bytes.Buffer
	args := append([]string{"--model", "inp", "--prompt", "a shirt", "--steps", "4", "--seed", "5", "--image", img, "--mask", mask, "--out", png}, common...)
	if err := runGenerate(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("generate: %v\n%s", err, stderr.String())
	}
	for _, want := range []string{"wrote " + png, "64x32", "inpainting", "seed 5", "denoise", "VAE decode"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
		}
	}
	if !strings.Contains(stderr.String(), "step 5/5") { // PNDM repeats its first step: 4 steps are 5 UNet calls
		t.Errorf("no progress bar: %q", stderr.String())
	}
	checkPNG(t, png, 64, 32)
	// Bad flags are refused before anything loads.
	for _, c := range []struct{ args, want string }{
		{"--prompt x --out o.png", "--model is required"},
		{"--model inp --prompt x", "--out"},
		{"--model inp --out o.jpg", ".png"},
		{"--model inp --out o.png --mask m.png", "--mask needs --image"},
		{"--model inp --out o.png --scheduler heun", "--scheduler"},
		{"--model nope --out o.png", "no installed model"},
		{"--model inp --out o.png --prompt x", "needs an image and a mask"},
	} {
		err := runGenerate(context.Background(), append(strings.Fields(c.args), common...), &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.args, err, c.want)
		}
	}
	out.Reset()
	if err := runModels(context.Background(), append([]string{"remove", "inp"}, common...), &out); err != nil {
		t.Fatal(err)
	}
	if err := runModels(context.Background(), append([]string{"remove", "inp"}, common...), &out); err == nil {
		t.Fatal("removing twice succeeded")
	}
}

func regexpLine(text string, fields ...string) bool {
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) >= len(fields) && strings.Join(f[:len(fields)], " ") == strings.Join(fields, " ") {
			return true
		}
	}
	return false
}

func writeTestPNG(t *testing.T, path string, mask bool) {
	t.Helper()
	img := testPattern(64, 32, mask)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := png.Encode(f, img); err != nil {
		t.Fatal(err)
	}
}

func checkPNG(t *testing.T, path string, w, h int) {
	t.Helper()
	img := testenv.ReadPNG(t, path)
	if b := img.Bounds(); b.Dx() != w || b.Dy() != h {
		t.Fatalf("%s is %v, want %dx%d", path, b, w, h)
	}
}

// testPattern is a gradient, or (mask) white on the left half.
func testPattern(w, h int, mask bool) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			c := color.NRGBA{uint8(4 * x), uint8(8 * y), 90, 255}
			if mask {
				c = color.NRGBA{0, 0, 0, 255}
				if x < w/2 {
					c = color.NRGBA{255, 255, 255, 255}
				}
			}
			img.SetNRGBA(x, y, c)
		}
	}
	return img
}
