package engine

import (
	"slices"
	"testing"

	"fashiond/ffmpeg"
	"fashiond/internal/pipelinetest"
)

func TestRegistryLeavesOutWhatCannotRun(t *testing.T) {
	p := pipelinetest.Perception(t)
	reg, skipped := Registry(p, nil, Generative{})
	for _, m := range []string{"product-to-model", "model-create"} {
		if _, ok := reg.Get(m); ok || skipped[m] == "" {
			t.Fatalf("%s registered without a preset library (skipped %q)", m, skipped[m])
		}
	}
	for _, m := range []string{"prompt-tryon", "pose-control", "tryon", "angle-generation", "image-to-video"} {
		if !slices.Contains(reg.Names(), m) {
			t.Fatalf("%s missing from %v (skipped: %v)", m, reg.Names(), skipped)
		}
	}
	old := ffmpeg.FFmpegBinary
	ffmpeg.FFmpegBinary = "ffmpeg-that-does-not-exist"
	defer func() { ffmpeg.FFmpegBinary = old }()
	reg, skipped = Registry(p, nil, Generative{})
	if _, ok := reg.Get("image-to-video"); ok || skipped["image-to-video"] == "" {
		t.Fatalf("image-to-video registered without ffmpeg (skipped %q)", skipped["image-to-video"])
	}
}
