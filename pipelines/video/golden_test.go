package video

import (
	_ "embed"
	"image"
	"testing"

	"fashiond/pipelines/raster"
)

// goldenList holds the recorded digests (raster.Digest) of the real runs in
// this package's tests; testdata/golden.sha256 says when and how they
// were recorded.
//
//go:embed testdata/golden.sha256
var goldenList string

// checkGolden fails the test when img's digest is not the one recorded.
func checkGolden(t *testing.T, name string, img *image.RGBA) {
	t.Helper()
	if err := raster.CheckDigest(goldenList, name, img); err != nil {
		t.Error(err)
	}
}
