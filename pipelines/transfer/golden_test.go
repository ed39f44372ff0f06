package transfer

import (
	"image"
	"testing"

	"fashiond/pipelines/raster"
)

// goldenDigests pins the output pixels (raster.Digest) of the real runs in
// this package's tests. They were recorded before transfer.go's and person.go's long
// functions were split into named steps, and the split kept them bit for
// bit. The perception models run on the CPU (ONNX Runtime) and the Go code
// here is deterministic: the same machine gives the same digests run after
// run (checked twice). A change meant to alter the output updates the
// digests it names and says why; another CPU (other SIMD paths in ONNX
// Runtime) may need them re-recorded.
var goldenDigests = map[string]string{
	"sleeves-high":      "bbc4654a76da6f0dd8055153c90a929f78689032a9d81477236f669ea112ec99",
	"sleeves-hyper":     "746a721597c46dd73c183bd699fdda06acc1b0ea0ecc068a6082efd8ab8499a5",
	"tee-standard":      "e905842a77bc32ac2aef682b9039b14a6145c8a1deb6594967c3a22cdc10847d",
	"trousers-standard": "873526615b76a46b4033a4fa7ec74b4a4d475679934457a44b0e0871e7353e7b",
}

// checkGolden fails the test when img's digest is not the one pinned for name.
func checkGolden(t *testing.T, name string, img *image.RGBA) {
	t.Helper()
	if got, want := raster.Digest(img), goldenDigests[name]; got != want {
		t.Errorf("golden %q: digest %s, want %s (the output pixels changed)", name, got, want)
	}
}
