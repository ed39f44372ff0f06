package repose

import (
	"image"
	"testing"

	"fashiond/pipelines/raster"
)

// goldenDigests pins the output pixels (raster.Digest) of the real runs in
// this package's tests. They were recorded before warp.go's long
// functions were split into named steps, and the split kept them bit for
// bit. The perception models run on the CPU (ONNX Runtime) and the Go code
// here is deterministic: the same machine gives the same digests run after
// run (checked twice). A change meant to alter the output updates the
// digests it names and says why; another CPU (other SIMD paths in ONNX
// Runtime) may need them re-recorded.
var goldenDigests = map[string]string{
	"template/0":       "07d624c327f06da2caa949a385cb5c2e4763bdd16cbf9deb9e1764812aa53960",
	"template/1":       "6bf09444083017e5d1d1b6e02eeb6485c16ec07df067b7aea6727a8351a44dc6",
	"template/waving":  "4a930bb80d01f485cda2cb0a79d0f324634211caa303b85283eebb8a85b58b3c",
	"text/arms out":    "91d2ff788bae42a4cc2b32f7734e3d24da81e8cfd32d26c2f59f41b268de28f7",
	"text/arms raised": "9d8ce6b011a848793a271a8af2e99015168ab9697c3448f66c8122b5e79a3738",
}

// checkGolden fails the test when img's digest is not the one pinned for name.
func checkGolden(t *testing.T, name string, img *image.RGBA) {
	t.Helper()
	if got, want := raster.Digest(img), goldenDigests[name]; got != want {
		t.Errorf("golden %q: digest %s, want %s (the output pixels changed)", name, got, want)
	}
}
