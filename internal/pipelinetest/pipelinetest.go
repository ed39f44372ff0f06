// Package pipelinetest holds test helpers shared by the pipeline packages:
// where the shared test data is, an image loader for files and data URIs, and
// (perception.go) the real perception models loaded from the repository.
package pipelinetest

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"image"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "image/jpeg"
	_ "image/png"

	_ "golang.org/x/image/webp"

	"fashiond/fetch"
	"fashiond/internal/testenv"
	"fashiond/spec"
)

// Root is the repository root (testenv.Root).
func Root() string { return testenv.Root() }

// WritePNG writes img as name under FASHIOND_TEST_OUT for people to look
// at; nothing when the variable is unset (testenv.WritePNG).
func WritePNG(t testing.TB, name string, img image.Image) { testenv.WritePNG(t, name, img) }

// Testdata is ../shared/testdata beside the repository, or FASHIOND_TESTDATA
// (testenv.Testdata); the test fails when it is missing.
func Testdata(t testing.TB) string {
	t.Helper()
	d := testenv.Testdata()
	if _, err := os.Stat(d); err != nil {
		t.Fatalf("test data not found at %s: %v", d, err)
	}
	return d
}

// File returns the path of a test data file, e.g. File(t, "images/astronaut.png").
func File(t testing.TB, rel string) string {
	return filepath.Join(Testdata(t), rel)
}

// Image decodes a test data image.
func Image(t testing.TB, rel string) image.Image {
	t.Helper()
	f, err := os.Open(File(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, _, err := image.Decode(f)
	if err != nil {
		t.Fatalf("decode %s: %v", rel, err)
	}
	return img
}

// DataURI returns a test data file as a data URI.
func DataURI(t testing.TB, rel string) string {
	t.Helper()
	b, err := os.ReadFile(File(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	uri, err := fetch.EncodeDataURI(b)
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return uri
}

// Inputs decodes a model's inputs given as JSON, with the spec's defaults
// (spec.DecodeInputs): a test's job that did not come through the API.
func Inputs(t testing.TB, model, raw string) spec.Inputs {
	t.Helper()
	in, err := spec.DecodeInputs(model, []byte(raw))
	if err != nil {
		t.Fatalf("inputs of %s: %v", model, err)
	}
	return in
}

// Loader loads "file:" paths relative to the test data, absolute paths, and
// data URIs. It is the test stand-in for fetch.Loader.
type Loader struct{ Dir string }

// Load implements pipelines.ImageLoader.
func (l Loader) Load(ctx context.Context, field, ref string) (image.Image, error) {
	var data []byte
	var err error
	switch {
	case strings.HasPrefix(ref, "data:"):
		_, b64, ok := strings.Cut(ref, ";base64,")
		if !ok {
			return nil, fmt.Errorf("%s: data URI without ;base64,", field)
		}
		data, err = base64.StdEncoding.DecodeString(b64)
	case strings.HasPrefix(ref, "file:"):
		data, err = os.ReadFile(filepath.Join(l.Dir, strings.TrimPrefix(ref, "file:")))
	default:
		data, err = os.ReadFile(ref)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %v", field, err)
	}
	img, _, err := l.Decode(field, data)
	return img, err
}

// Decode implements pipelines.ImageLoader.
func (l Loader) Decode(field string, data []byte) (image.Image, string, error) {
	img, format, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, "", fmt.Errorf("%s: %v", field, err)
	}
	return img, format, nil
}

// NoProgress is a pipelines.ProgressFunc that reports nothing, for
// requests and calls whose progress a test does not watch (a pipeline
// never checks its Progress for nil).
func NoProgress(string, float64, string) {}
