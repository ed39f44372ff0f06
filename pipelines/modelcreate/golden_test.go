package modelcreate

import (
	"context"
	"image"
	"testing"

	"fashiond/pipelines/pipelinetest"
	"fashiond/pipelines/raster"
)

// goldenDigests pins the output pixels (raster.Digest) of the real runs in
// this package's tests, by test and sample. They were recorded before
// generate and sample were split into named steps, and the split must keep
// them bit for bit. The perception models run on the CPU (ONNX Runtime)
// and the Go code here is deterministic: the same machine gives the same
// digests run after run (checked twice). A change meant to alter the
// output updates the digests it names and says why; another CPU (other
// SIMD paths in ONNX Runtime) may need them re-recorded.
var goldenDigests = map[string]string{
	"a man seated outdoors, industrial":                   "ac09a46183aa057b51a8e7c7324ce79adfd49a3da434408588f31e0ddcfd627b",
	"a man seated outdoors, industrial, left hand on hip": "63a41e1f8739038109c3afdf4222e5160de8d168692c0ec4cd5add166cc5bbc9",
	"body type/0":                   "f977a6500550ecaea09607c691cb40936b268586a4b87753922e10172ff0fe60",
	"every-step":                    "fd2af1ff729ef407722312ebe8796b5582fbd92d51943ba4c8b4744b5ed3216c",
	"face-border/black-double":      "6bf44efa9133f136548826a2a8511a2499a71cb07852dc59113dd08a497e056f",
	"face-border/oracle-inpaint":    "1dacc9cf66e7aa0ff942108a5e15ffec173bb94063de7c9f23d9c7e0075ce404",
	"face-transfer":                 "6bf44efa9133f136548826a2a8511a2499a71cb07852dc59113dd08a497e056f",
	"nothing changes/0":             "d2fbae4e95acc0aa1a508fb078eeb3475ec147a33250187c573999b922d17bcf",
	"nothing changes/1":             "e8ba418a99590892d1e49dc13d0324ace164aba690ada4a428d658debea4bda7",
	"pose and clothing/0":           "226b9bb077e2b6968c3656ed2759326172a202d8c92677596afc7d75e33144d2",
	"pose-refined/black-double":     "aee38bb077be81f5f0f50c4ec66c55fd4efc2133c7c6e80343ca96989c5d7fca",
	"pose-refined/tint-double":      "deec777391525ac83ef8db6bc9ce9de8400f02bcffba6a4823ddf9cd16d120ff",
	"poseImageBase64":               "aee38bb077be81f5f0f50c4ec66c55fd4efc2133c7c6e80343ca96989c5d7fca",
	"poseModelId":                   "423743f2011953e0e0336704c00bc58c9447ae5d3f5eef70c3ecfb4192fb2f0c",
	"text-to-image/oracle-fallback": "b1cb87ca3fe992b3ec46128e943227271dcf8d27d7a2d6e12ead306cdb2343dc",
	"text-to-image/photo-double":    "b30e3d65e2a0a1a0335de3773d565fc9a5604f87cdc9a08259f19bad1654f32b",
}

// checkGolden fails the test when img's digest is not the one pinned for
// name; the message carries the line to record.
func checkGolden(t *testing.T, name string, img image.Image) {
	t.Helper()
	if got, want := raster.Digest(raster.RGBA(img)), goldenDigests[name]; got != want {
		t.Errorf("golden %q: digest %s, want %s (the output pixels changed); record:\n\t%q: %q,", name, got, want, name, got)
	}
}

// everyStepMethod is TestGenerateEverySampleStep's method, recorded with
// its digest: the steps in the order they run.
const everyStepMethod = "preset:man-seated-industrial+body-athletic(x1.06 shoulders, x1.00 hips)+lbs-mesh-warp(pose arms raised)+" +
	"recolour(region=top (tshirt), colour=red #c8102e, no pattern)+face-transfer(5-landmark similarity, colour match, seamless clone)+style:editorial"

// TestGenerateEverySampleStep runs one generate request that takes every
// classical step of a sample in turn: a preset, re-posed from a pose text,
// reshaped to a body type, its clothing recoloured, a saved face
// transferred and a style named in the prompt; the output is pinned by its
// digest and its method names the steps in order.
func TestGenerateEverySampleStep(t *testing.T) {
	p := pipelinetest.Perception(t)
	pl := New(p, library(t))
	st := newStudio()
	ctx := context.Background()
	if _, err := pl.Run(ctx, request(t, st, map[string]any{"type": "upload", "name": "face", "imageBase64": pipelinetest.DataURI(t, "images/gocv_face.jpg"), "quality": "1k", "aspectRatio": "1:1"})); err != nil {
		t.Fatal(err)
	}
	faceRec, _ := st.last()
	res, err := pl.Run(ctx, request(t, st, map[string]any{"type": "generate", "prompt": "a man seated outdoors, industrial, editorial", "gender": "male",
		"pose": "arms raised", "bodyType": "athletic", "clothing": "red t-shirt", "faceModelId": faceRec.ID, "quality": "1k", "aspectRatio": "3:4"}))
	if err != nil {
		t.Fatal(err)
	}
	o := res.Outputs[0]
	writePNG(t, "mc_every_step.png", o.Image)
	checkGolden(t, "every-step", o.Image)
	if o.Method != everyStepMethod {
		t.Errorf("method %q, want %q", o.Method, everyStepMethod)
	}
}
