package posecontrol

import (
	"context"
	"image"
	"strings"
	"testing"

	"fashiond/internal/pipelinetest"
)

func TestDisocclusionMask(t *testing.T) {
	was, alpha := image.NewGray(image.Rect(0, 0, 200, 200)), image.NewGray(image.Rect(0, 0, 200, 200))
	for y := 50; y < 150; y++ {
		for x := 80; x < 120; x++ {
			was.Pix[y*200+x] = 255 // the person stood here
		}
		for x := 100; x < 140; x++ {
			alpha.Pix[y*200+x] = 255 // and moved right by 20 px
		}
	}
	m := disocclusion(was, alpha)
	if m.GrayAt(85, 100).Y != 255 || m.GrayAt(110, 100).Y != 0 || m.GrayAt(130, 100).Y != 0 || m.GrayAt(60, 100).Y != 0 {
		t.Fatalf("uncovered %d, body %d, new place %d, never covered %d", m.GrayAt(85, 100).Y, m.GrayAt(110, 100).Y, m.GrayAt(130, 100).Y, m.GrayAt(60, 100).Y)
	}
	if m.GrayAt(99, 100).Y != 0 {
		t.Fatal("the body's margin is in the mask")
	}
}

// TestGenerativeBackground runs pose-control with the oracle inpainting
// contract model (a closed-form graph, not a real generative model) on a
// re-pose whose classical output is refused for the smear of plate fill
// where the arm hung (the bikes photo, "arm raised": ghost_smear): with
// the inpainter the uncovered background is repainted, the output says
// path generative and its self-checks pass.
func TestGenerativeBackground(t *testing.T) {
	p := pipelinetest.Perception(t)
	in := Inputs{ModelImage: "file:images/pixabay_two_women_bikes.jpg", Quality: "1k", Poses: []PoseSpec{{Type: "custom", Text: "arm raised"}}}
	_, err := New(p).Run(context.Background(), request(t, in))
	if err == nil || !strings.Contains(err.Error(), "self-check ghost_smear failed") {
		t.Fatalf("classical re-pose: %v, want ghost_smear failing", err)
	}
	res, err := New(p).WithInpainter(pipelinetest.ContractInpainter(t)).Run(context.Background(), request(t, in))
	if err != nil {
		t.Fatal(err)
	}
	o := res.Outputs[0]
	if o.Path != "generative" || !strings.Contains(o.Method, "generative-background(oracle-inpaint)") {
		t.Fatalf("path %s method %s", o.Path, o.Method)
	}
	for _, c := range o.Checks {
		if !c.Pass {
			t.Fatalf("check %+v", c)
		}
	}
}
