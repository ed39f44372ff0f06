package angles

import (
	"image"
	"testing"

	"fashiond/pipelines/raster"
)

// goldenDigests pins the output pixels (raster.Digest) of the real runs in
// this package's tests, by "<photo>/<angle id>" (and "back-layer/astronaut"
// for backView's person layer). They were recorded before backView and
// foreshorten were split into named steps, and the split must keep them
// bit for bit. The perception models run on the CPU (ONNX Runtime) and the
// Go code here is deterministic: the same machine gives the same digests
// run after run (checked twice). A change meant to alter the output
// updates the digests it names and says why; another CPU (other SIMD paths
// in ONNX Runtime) may need them re-recorded.
var goldenDigests = map[string]string{
	"back-layer/astronaut":    "0dfb5181ade86aebd94777a4a38925843082a5d0a0161e3e5d9c4336237d2e24",
	"fashn_garment/back":      "d59576e1f883903abfecfad0a52297ad8ec4e06ced98ec10d72633f156981175",
	"fashn_garment/front":     "279622ac94d4a3d7a16226270f01599676e078862373699ea6528ddd5b5c6b72",
	"fashn_garment/left45":    "05a2eaa65344e629aa56611b6c62118ec500a54c90efaeb76e4f601415ca1a2e",
	"fashn_garment/leftSide":  "d10dd3b160fe5602a84ae5b71c6717d049d09ddf37669e180699795b3a97adba",
	"fashn_garment/right45":   "f566d605e0fee1ec9b0a9a6c55be3e4552c6497f5ddd6b0c2cc6d3cd282134f8",
	"fashn_garment/rightSide": "73f0af2f3b34dcd348099f9d8019e8c564480e3dfe6fbb8a259dc2eba0c8c918",
	"fashn_model/back":        "a149e997c2d8541bf1549e3e2b966ac09eb5deeef63efc5bc5bd8d4b7995d8bb",
	"fashn_model/front":       "46290357b27391e96e0efac0fec28c241cfec51209db5504b30fa1fdf61e510a",
	"fashn_model/left45":      "d4ae0bdc897d4fa9fcac0ef5d024868454fa04dc41ee08d3fb00e5df29234d87",
	"fashn_model/leftSide":    "122831bfc066b1eeb89cb921d6dae80ec98e8499d86abc970cf174974d40a1ef",
	"fashn_model/right45":     "028df5fe423dae56f9742451a52f4c8079e4b3376af9726c45f7ddccb142e5e3",
	"fashn_model/rightSide":   "15607236009f224688b57eb4156b69252f168f60c8665761d8bc38e826c28b66",
}

// checkGolden fails the test when img's digest is not the one pinned for
// name; the message carries the line to record.
func checkGolden(t *testing.T, name string, img image.Image) {
	t.Helper()
	if got, want := raster.Digest(raster.RGBA(img)), goldenDigests[name]; got != want {
		t.Errorf("golden %q: digest %s, want %s (the output pixels changed); record:\n\t%q: %q,", name, got, want, name, got)
	}
}
