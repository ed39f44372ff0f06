package modelcreate

import (
	"context"
	_ "embed"
	"testing"

	"fashiond/internal/golden"
	"fashiond/internal/pipelinetest"
	"fashiond/pipelines/capability/raster"
)

// goldenList holds the recorded digests (golden.Digest) of this package's
// real runs; testdata/golden.sha256 says when and how they were recorded.
//
//go:embed testdata/golden.sha256
var goldenList string

// everyStepMethod is TestGenerateEverySampleStep's method, recorded with
// its digest: the steps in the order they run.
const everyStepMethod = "preset:man-seated-industrial+body-athletic(x1.06 shoulders, x1.00 hips)+lbs-mesh-warp(pose looking left)+" +
	"recolour(region=top (tshirt), colour=red #c8102e, no pattern)+face-transfer(5-landmark similarity, seamless clone)+style:editorial"

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
		"pose": "looking left", "bodyType": "athletic", "clothing": "red t-shirt", "faceModelId": faceRec.ID, "quality": "1k", "aspectRatio": "3:4"}))
	if err != nil {
		t.Fatal(err)
	}
	o := res.Outputs[0]
	writePNG(t, "mc_every_step.png", o.Image)
	if err := golden.CheckDigest(goldenList, "every-step", raster.RGBA(o.Image)); err != nil {
		t.Error(err)
	}
	if o.Method != everyStepMethod {
		t.Errorf("method %q, want %q", o.Method, everyStepMethod)
	}
}
