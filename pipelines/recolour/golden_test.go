package recolour

import (
	"image"
	"testing"

	"fashiond/pipelines/raster"
)

// goldenDigests pins the output pixels (raster.Digest) of the real runs in
// this package's tests. They were recorded before regions.go's, dress.go's and parse.go's long
// functions were split into named steps, and the split kept them bit for
// bit. The perception models run on the CPU (ONNX Runtime) and the Go code
// here is deterministic: the same machine gives the same digests run after
// run (checked twice). A change meant to alter the output updates the
// digests it names and says why; another CPU (other SIMD paths in ONNX
// Runtime) may need them re-recorded.
var goldenDigests = map[string]string{
	"blush floral shirt":                       "99dafeaf4c389f22b3bc46392d482ccf5365b301f81f903a34ccf3c8992d7429",
	"charcoal pinstripe shirt":                 "7fb7a7e2c865c10201858b6d2431c8f2b8a87e5d143f0de576a66aa8452c2043",
	"denim shirt":                              "ac8e9289cb276a2397e2b8037513eeba3de343df7d7e2af8ae91f0b79dd23169",
	"emerald polka dot shirt":                  "ecd54cd0e89bc3456bbdc4e5e7cfe417533ea08f1b3eccc3811f00253238472f",
	"houndstooth shirt":                        "6804b6060d5a4d93204b538e4625d4468c3e07c73cd01f7395500d9b6be20f32",
	"images/astronaut.png/lavender suit":       "e69ffd7af193941b400b9e1e218ff855970d2817bca5652b828baa7bafb14924",
	"images/astronaut.png/navy top":            "223967ee68bb906e4fbd146c365ccd7eb9daf70aff301962427569d84e1cef16",
	"images/astronaut.png/teal jacket":         "620af7173d2be946f960dee258896bbdb8c315e0452a5ca42a1352b9bad2af03",
	"images/fashn_model.webp/burgundy shirt":   "ad5534de710c11693927f131862fb6b9bd4d84405cced61908a6027dae73936e",
	"images/fashn_model.webp/cobalt trousers":  "c20064f939636a7b5b8f01b3d6ba5d0dac59706cf87effa0d9e9be737bb33925",
	"images/fashn_model.webp/emerald t-shirt":  "fa12ac6d103c9d7fcbd53243260f371acf79bef96eb3b48ba5e7e35c0a22671d",
	"images/fashn_model.webp/mustard jumpsuit": "aff629a1901d85938bdc3bfd6eee6fc817e1ae691a1ab415c6287131386868bd",
	"images/fashn_model.webp/olive chinos":     "91c707dd609196824af901eb3e1074ba44fa0d9ce4431bdecd51f0bdd978009e",
	"navy shirt with white horizontal stripes": "46d5cfc714cd41200cf34569dd9b9a6fd5dd98278e77b55caf57ebb55f8460ed",
	"red and navy plaid shirt":                 "d3fabe960487f70591dae034ccbeefe331f9e28862eb18693aea8c694521320e",
	"red checked shirt":                        "db9761b4ca7c1eb424540639f0d684cb925bee2e8133f7e3e830e217e4ef9435",
	"red gingham shirt":                        "77daeb73d3a454e45f141191b8c0562fbabaadd015b4da9f61f2c70f69093feb",
	"white shirt with black vertical stripes":  "b5e83993ca4b883d8d2a9cbed0fe3b7bec34f126beda3ffb596cc0c3d73c1fac",
}

// checkGolden fails the test when img's digest is not the one pinned for name.
func checkGolden(t *testing.T, name string, img *image.RGBA) {
	t.Helper()
	if got, want := raster.Digest(img), goldenDigests[name]; got != want {
		t.Errorf("golden %q: digest %s, want %s (the output pixels changed)", name, got, want)
	}
}
