package video

import (
	"image"
	"testing"

	"fashiond/pipelines/raster"
)

// goldenDigests pins the output pixels (raster.Digest) of the real runs in
// this package's tests. They were recorded before render.go's and video.go's long
// functions were split into named steps, and the split kept them bit for
// bit. The perception models run on the CPU (ONNX Runtime) and the Go code
// here is deterministic: the same machine gives the same digests run after
// run (checked twice). A change meant to alter the output updates the
// digests it names and says why; another CPU (other SIMD paths in ONNX
// Runtime) may need them re-recorded.
var goldenDigests = map[string]string{
	"flatlay/first": "88c5904f8810a259e06560ac9556f9600cc1714d185034df833833e87d86d849",
	"flatlay/last":  "3ef526bcf3463025c626357f97f6b3c5714717873e2ce6a3acf3f668bd2a7ed1",
	"orbit/0.0":     "bd9039ec44812c1e4bfd9387ee82ca4c01b2a5174f25637dc28dace8178e1b68",
	"orbit/0.3":     "06f50e4cae9f6996c05cf295375c994d76d953d38a6047d8086ad8f7f25fbcab",
	"orbit/0.7":     "02e0920d248f0b90c9021a8a5236a782d5bd87c9bfc32cb3f39d85bd7f590c79",
	"orbit/1.0":     "c40750b5c3209989851cbb6fa5d176e101651e372ec79aaf62c4fa09c54cfe07",
	"pan-left/0.0":  "3ed1bd46008c3555e20fa1481416e62d0e6386a6d5b70e0f2721604dbac751b9",
	"pan-left/0.3":  "5b1bfcb2ba10938deb845612cb0bf6e163cb61849bbfe9fcbf319c1bf73206c9",
	"pan-left/0.7":  "9efc569572463a7519d4b6f2dc38ba2c06fc6fa9df88d1ceb9459e991877ad66",
	"pan-left/1.0":  "5bacf221d9a2d3a03f475346686318968498e1c86323fcf11b7eb90418b3a4d5",
	"pan-right/0.0": "147a84f7e68d59eb7c97f8811bcccc03319106a34afbc0f9918b61a4417cc8d8",
	"pan-right/0.3": "cd48dc642a3c39e0a202122eadee8b420bc58bbd2ca1eda8f7c374cbbec8c019",
	"pan-right/0.7": "289b73253233316868ad018c2e9a22c1b851a43be2df7c2c8b945490e06e34b1",
	"pan-right/1.0": "855871d8c1ae7285c5914420c451a6767aa5387c955a4bf7489d1ab6ec676f7e",
	"pull-out/0.0":  "f5ef9c928e6b10ed4d6c7489274979e70230dd17c539c8c1d3a0b17261afa45f",
	"pull-out/0.3":  "d76ef737b2e83c8de4451ea2b662231589c5722705ef09ff2cbf30a10a52c164",
	"pull-out/0.7":  "9970dce156b81570fa9cecc1ad83100a07b2269be24ae77002a590c8077c3fed",
	"pull-out/1.0":  "9758d11595e47f78adddca4ce6ccb9f69665b1f0bf3b787d4d0725587d881fde",
	"push-in/0.0":   "0bccce0a7ce80988185e440e43a36d9361f8f1176be8c90c4c9470e9076198dc",
	"push-in/0.3":   "f4c5ec0a07fd769c64c295f367e5c7a23e4c4b119a56a0675424371732032492",
	"push-in/0.7":   "fecbcb710a76e88f93c1ef15afc245f9b28b4da5633996cc4be445d3e66024b3",
	"push-in/1.0":   "4c085caffa108ef988bbc7db194a6e1fa89b136260a6bb60f628a359a5c24020",
	"static/0.0":    "e8f265437e6d70b4c5af86a7c7d250538eb865658ba6043bf68da391ccfabb95",
	"static/0.3":    "f143f59cf1fe969c381384fb109e934b8dcc7ddcae514618d5f8251593475c33",
	"static/0.7":    "2652328f461c8e84fe66b2674dc4aa0ad91082a4457bd9455a4fc13ee7ee23c5",
	"static/1.0":    "fc59db9d3522c7656ca82b8ef01f0252b4bfd0b57d722f7ffb0b1c7f64dcbd25",
	"tilt-down/0.0": "14d7eef70856f8af06a01bbff8b29e365daef630058bd957f74ecb962294baba",
	"tilt-down/0.3": "bdf05933632f09c70f62547528e942080dd9b34674c5bf675ad6a9268a030b6a",
	"tilt-down/0.7": "7ef92bbdeabebe03205052beb52857625999e3241181d9414d76bdf48082a29f",
	"tilt-down/1.0": "148de0f345d97cbfe07c2cc5c446a38d7e880d63e8a2e0f070a80371a10a1b01",
	"tilt-up/0.0":   "52131e1626507877eaf50e1d16eb5682e23bca14fb3a1f9b51befd00cfe9c78a",
	"tilt-up/0.3":   "68d4d2db23060a116312a44b5340c85cff13856310816a0fd5aeb43d31112bc5",
	"tilt-up/0.7":   "c07ccbe0fa60ef5a4d7f5b4cd8819c39151eaa53ea78845afe77e508dcb3c8d2",
	"tilt-up/1.0":   "a572f8f610ab6d3b4c1fa306f51411c4dddee85b52af4300f87ecb0b68de55b4",
}

// checkGolden fails the test when img's digest is not the one pinned for name.
func checkGolden(t *testing.T, name string, img *image.RGBA) {
	t.Helper()
	if got, want := raster.Digest(img), goldenDigests[name]; got != want {
		t.Errorf("golden %q: digest %s, want %s (the output pixels changed)", name, got, want)
	}
}
