package perception

import (
	"context"
	"fmt"
	"image"
	_ "image/jpeg"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"fashiond/inference"
	"fashiond/internal/testenv"
)

// originOutputTolerance is the largest absolute difference allowed between
// any output value of a converted graph and of the mirror's graph on the
// same input (float32 arithmetic in the same order gives 0).
const originOutputTolerance = 1e-5

// srCrop is the edge of the photo crop fed to the super-resolution graphs
// (small: realesrgan_x4plus takes seconds per 128x128 on two cores).
const srCrop = 32

// originCache is the npm tarball cache `make setup` fills on a machine
// without the mirror (gitignored, inside the tree).
func originCache() string { return filepath.Join(testenv.Root(), "data", "origins-cache") }

// npmReachable reports whether o's tarball can be had: cached and verified,
// or npm on PATH to fetch it.
func npmReachable(o *Origin) bool {
	if got, err := Integrity(filepath.Join(originCache(), TarballName(o.Npm))); err == nil && got == o.Integrity {
		return true
	}
	_, err := exec.LookPath("npm")
	return err == nil
}

// npmOriginManifests are the committed manifests with an npm origin.
func npmOriginManifests(t *testing.T) []Manifest {
	t.Helper()
	list, err := LoadManifests()
	if err != nil {
		t.Fatal(err)
	}
	var out []Manifest
	for _, m := range list {
		if m.Origin != nil && m.Origin.Npm != "" {
			out = append(out, m)
		}
	}
	return out
}

// TestOriginConvertersMatchMirror converts each npm-origin model from its
// package (scripts/origins/tflite2onnx.py, ncnn2onnx.py), checks the result
// against the manifest's SHA-256 (convertNpm refuses anything else) and,
// with the mirror and ONNX Runtime present, runs the converted graph and
// the mirror's on the same real photo and compares every output value.
func TestOriginConvertersMatchMirror(t *testing.T) {
	ms := npmOriginManifests(t)
	mirror := filepath.Join(testenv.Root(), "..", "shared", "models")
	_, mirrorErr := os.Stat(filepath.Join(mirror, "SHA256SUMS"))
	if !npmReachable(ms[0].Origin) && mirrorErr != nil {
		t.Skip("neither the mirror (../shared/models) nor npm (or a cached tarball in data/origins-cache) is reachable")
	}
	for _, m := range ms {
		if !npmReachable(m.Origin) {
			t.Fatalf("%s: no cached tarball in %s and no npm on PATH to fetch %s", m.Name, originCache(), m.Origin.Npm)
		}
	}
	ctx := context.Background()
	repo, err := OpenRepository(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	opt := OriginOptions{Scripts: filepath.Join(testenv.Root(), "scripts", "origins"), Cache: originCache()}.withDefaults()
	var rt *inference.Runtime
	if mirrorErr == nil {
		if rt, err = inference.Open(ctx, inference.Config{LibPath: testenv.ORTLib(), IntraOpThreads: 2, Device: "cpu"}, nil); err != nil {
			t.Logf("no output comparison: ONNX Runtime unavailable: %v", err)
			rt = nil
		} else {
			defer rt.Close()
		}
	}
	for _, m := range ms {
		dst := filepath.Join(repo.Dir(), m.File)
		if err := repo.convertNpm(ctx, opt, m, dst); err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
		got, err := fileSHA256(ctx, dst)
		if err != nil {
			t.Fatal(err)
		}
		if mirrorErr != nil {
			t.Logf("%s: converted, SHA-256 %s = manifest; no mirror to compare outputs with", m.Name, got)
			continue
		}
		want, err := fileSHA256(ctx, filepath.Join(mirror, m.File))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: converted SHA-256 %s, mirror %s, byte-identical %v", m.Name, got, want, got == want)
		if rt != nil {
			diff := compareOutputs(t, rt, m, dst, filepath.Join(mirror, m.File))
			t.Logf("%s: max |converted - mirror| over every output = %g", m.Name, diff)
			if diff > originOutputTolerance {
				t.Errorf("%s: outputs differ by %g, more than %g", m.Name, diff, originOutputTolerance)
			}
		}
	}
}

// compareOutputs runs both graphs on the same photo input and returns the
// largest absolute difference over all their outputs.
func compareOutputs(t *testing.T, rt *inference.Runtime, m Manifest, a, b string) float64 {
	t.Helper()
	in := photoInput(t, m)
	var outs [2][]inference.Tensor
	for i, p := range []string{a, b} {
		s, err := rt.NewSession(context.Background(), inference.SessionSpec{Name: m.Name, Path: p, Inputs: m.InputNames(), Outputs: m.OutputNames(), Device: "cpu"})
		if err != nil {
			t.Fatal(err)
		}
		outs[i], err = s.Run(context.Background(), []inference.Tensor{in})
		s.Close()
		if err != nil {
			t.Fatalf("%s (%s): %v", m.Name, p, err)
		}
	}
	maxDiff := 0.0
	for k := range outs[0] {
		x, y := outs[0][k], outs[1][k]
		if fmt.Sprint(x.Shape) != fmt.Sprint(y.Shape) {
			t.Fatalf("%s output %d: shapes %v and %v", m.Name, k, x.Shape, y.Shape)
		}
		for j := range x.Data {
			maxDiff = math.Max(maxDiff, math.Abs(float64(x.Data[j])-float64(y.Data[j])))
		}
	}
	return maxDiff
}

// photoInput is a real photo as the model's input tensor: the whole photo
// sampled to 256x256 NHWC for BlazePose, a srCrop square NCHW from its
// middle for super-resolution; RGB scaled to 0..1 for both.
func photoInput(t *testing.T, m Manifest) inference.Tensor {
	t.Helper()
	f, err := os.Open(filepath.Join(testenv.Testdata(), "images", "codait_man_standing.jpg"))
	if err != nil {
		t.Skipf("no shared test photo: %v", err)
	}
	defer f.Close()
	img, _, err := image.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	bb := img.Bounds()
	px := func(x, y, c int) float32 {
		r, g, b, _ := img.At(x, y).RGBA()
		return float32([]uint32{r, g, b}[c]>>8) / 255
	}
	if strings.HasPrefix(m.Name, "blazepose") {
		const n = 256
		data := make([]float32, 0, n*n*3)
		for y := 0; y < n; y++ {
			for x := 0; x < n; x++ {
				for c := 0; c < 3; c++ {
					data = append(data, px(bb.Min.X+x*bb.Dx()/n, bb.Min.Y+y*bb.Dy()/n, c))
				}
			}
		}
		return inference.Tensor{Shape: []int64{1, n, n, 3}, Data: data}
	}
	x0, y0 := bb.Min.X+bb.Dx()/2-srCrop/2, bb.Min.Y+bb.Dy()/3
	data := make([]float32, 0, 3*srCrop*srCrop)
	for c := 0; c < 3; c++ {
		for y := 0; y < srCrop; y++ {
			for x := 0; x < srCrop; x++ {
				data = append(data, px(x0+x, y0+y, c))
			}
		}
	}
	return inference.Tensor{Shape: []int64{1, 3, srCrop, srCrop}, Data: data}
}

// TestOriginConverterScripts runs the converters' own tests
// (scripts/origins/test_converters.py: unknown operators and layers are
// errors naming them, fp16/fp32 weight tags, mutated inputs fail cleanly)
// on the real model files extracted from the npm tarballs.
func TestOriginConverterScripts(t *testing.T) {
	python := "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import onnx, numpy").Run(); err != nil {
		t.Skipf("%s lacks onnx/numpy (apt-get install python3-onnx python3-numpy): %v", python, err)
	}
	env := os.Environ()
	dir := t.TempDir()
	for _, m := range npmOriginManifests(t) {
		if m.Name != "blazepose_lite" && m.Name != "realesr_general_x4v3" {
			continue
		}
		tgz := filepath.Join(originCache(), TarballName(m.Origin.Npm))
		if got, err := Integrity(tgz); err != nil || got != m.Origin.Integrity {
			t.Skipf("no verified %s in %s (make setup-models without the mirror fetches it)", filepath.Base(tgz), originCache())
		}
		srcs, err := extractSources(tgz, dir, m.Origin.Sources)
		if err != nil {
			t.Fatal(err)
		}
		env = append(env, "ORIGIN_"+strings.ToUpper(m.Name)+"="+strings.Join(srcs, ","))
	}
	cmd := exec.Command(python, "-m", "unittest", "-v", "test_converters")
	cmd.Dir = filepath.Join(testenv.Root(), "scripts", "origins")
	cmd.Env = append(env, "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("scripts/origins/test_converters.py: %v", err)
	}
}
