// Package testenv is the one place tests learn their environment: the
// repository root, the ONNX Runtime library, the model directory, the
// shared test data, ffmpeg, and where (if anywhere) tests may write images
// for people to look at. It imports only the standard library, so every
// package's tests (perception and inference included) can use it without an
// import cycle.
//
// Environment variables (each overrides the default):
//
//	FASHIOND_ORT_LIB      ONNX Runtime library (default <root>/.deps/onnxruntime/<ORTVersion>/libonnxruntime.so.1)
//	FASHIOND_MODELS_DIR   model directory (default <root>/data/models)
//	FASHIOND_TESTDATA     shared test data (default <root>/../shared/testdata)
//	FASHIOND_FFMPEG       ffmpeg binary (default "ffmpeg" on PATH)
//	FASHIOND_TEST_OUT     directory for images tests write for people to look
//	                      at; unset: tests write nothing outside t.TempDir()
package testenv

import (
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// ORTVersion is the ONNX Runtime release `make setup` installs under .deps.
const ORTVersion = "1.30.0"

// Root is the repository root, found from this file's location.
func Root() string {
	_, f, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(f), "..", ".."))
}

// ORTLib is the ONNX Runtime shared library path.
func ORTLib() string {
	return envOr("FASHIOND_ORT_LIB", filepath.Join(Root(), ".deps", "onnxruntime", ORTVersion, "libonnxruntime.so.1"))
}

// ModelsDir is the model directory.
func ModelsDir() string {
	return envOr("FASHIOND_MODELS_DIR", filepath.Join(Root(), "data", "models"))
}

// Testdata is the shared test data directory.
func Testdata() string {
	return envOr("FASHIOND_TESTDATA", filepath.Join(Root(), "..", "shared", "testdata"))
}

// FFmpeg is the ffmpeg binary to run ("" when none is found).
func FFmpeg() string {
	b := envOr("FASHIOND_FFMPEG", "ffmpeg")
	p, err := exec.LookPath(b)
	if err != nil {
		return ""
	}
	return p
}

// OutDir is FASHIOND_TEST_OUT ("" when unset: write nothing).
func OutDir() string { return os.Getenv("FASHIOND_TEST_OUT") }

// OutPath returns the path under FASHIOND_TEST_OUT for a file a test
// writes for people to look at, creating the directory; "" when the
// variable is unset (the test then writes nothing).
func OutPath(t testing.TB, name string) string {
	t.Helper()
	dir := OutDir()
	if dir == "" {
		return ""
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("FASHIOND_TEST_OUT: %v", err)
	}
	return filepath.Join(dir, name)
}

// WritePNG writes img as name under FASHIOND_TEST_OUT; nothing when the
// variable is unset.
func WritePNG(t testing.TB, name string, img image.Image) {
	t.Helper()
	path := OutPath(t, name)
	if path == "" {
		return
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatalf("write %s: %v", name, err)
	}
	defer f.Close()
	if err := png.Encode(f, img); err != nil {
		t.Fatalf("encode %s: %v", name, err)
	}
}

// ReadPNG decodes the PNG file at path; the test fails when it cannot.
func ReadPNG(t testing.TB, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
	return img
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
