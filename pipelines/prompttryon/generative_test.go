package prompttryon

import (
	"context"
	"image"
	"strings"
	"testing"

	"fashiond/pipelines/pipelinetest"
)

func maskArea(m *image.Gray) int {
	n := 0
	for _, v := range m.Pix {
		if v != 0 {
			n++
		}
	}
	return n
}

// TestGarmentMaskFollowsTheGarment: a dress adds the legs, a jacket the
// arms, and the face is never in the mask.
func TestGarmentMaskFollowsTheGarment(t *testing.T) {
	f := photo(t, "images/fashn_model.webp")
	area := map[string]int{}
	for _, prompt := range []string{"a red top", "a red jacket", "a red dress"} {
		spec, err := Parse(prompt)
		if err != nil {
			t.Fatal(err)
		}
		face := image.Rect(f.r.w*2/5, 0, f.r.w*3/5, f.r.h/10)
		m := garmentMask(f.r, spec, &face)
		area[prompt] = maskArea(m)
		for y := face.Min.Y; y < face.Max.Y; y++ {
			for x := face.Min.X; x < face.Max.X; x++ {
				if m.GrayAt(x, y).Y != 0 {
					t.Fatalf("%s: face pixel (%d,%d) in the mask", prompt, x, y)
				}
			}
		}
	}
	if area["a red jacket"] <= area["a red top"] || area["a red dress"] <= area["a red jacket"] {
		t.Fatalf("mask areas %v: want top < jacket (sleeves) < dress (legs)", area)
	}
}

// TestGenerativeStage runs prompt-tryon with the oracle inpainting contract
// model (a closed-form graph, not a real generative model): the output says
// path generative, names the model and passes the self-checks (nothing
// outside the subject changes, the face is kept).
func TestGenerativeStage(t *testing.T) {
	pl := New(pipelinetest.Perception(t), nil).WithInpainter(pipelinetest.ContractInpainter(t))
	res, err := run(t, pl, map[string]any{"personImage": "file:images/fashn_model.webp", "prompt": "a red dress", "quality": "1k"})
	if err != nil {
		t.Fatal(err)
	}
	o := res.Outputs[0]
	if o.Path != "generative" || !strings.Contains(o.Method, "generative-inpainting(oracle-inpaint)") || !strings.Contains(strings.Join(o.Notes, " "), `"oracle-inpaint"`) {
		t.Fatalf("path %s, method %s, notes %q", o.Path, o.Method, o.Notes)
	}
	for _, c := range o.Checks {
		if !c.Pass {
			t.Fatalf("check %+v failed on a generative output that was returned", c)
		}
	}
	if len(o.Checks) < 3 {
		t.Fatalf("checks %+v", o.Checks)
	}
	_ = context.Background()
}
