package prompttryon

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"fashiond/internal/pipelinetest"
	"fashiond/pipelines"
)

// TestGenerativeStage runs prompt-tryon with the oracle inpainting contract
// model (a closed-form graph, not a real generative model): the output says
// path generative, names the model and passes the self-checks (nothing
// outside the subject changes, the face is kept).
func TestGenerativeStage(t *testing.T) {
	pl := New(pipelinetest.Perception(t), nil).WithInpainter(pipelinetest.ContractInpainter(t))
	b, _ := json.Marshal(map[string]any{"personImage": "file:images/fashn_model.webp", "prompt": "a red dress", "quality": "1k"})
	var steps []string
	res, err := pl.Run(context.Background(), &pipelines.Request{JobID: "t", Model: Name, Inputs: pipelinetest.Inputs(t, Name, string(b)), Images: pipelinetest.Loader{Dir: pipelinetest.Testdata(t)},
		Progress: func(stage string, _ float64, detail string) {
			if stage == "generative" {
				steps = append(steps, detail)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) == 0 || steps[len(steps)-1] != "sample 1/1, step 26/26" {
		t.Fatalf("generative progress %q, want it to end at step 26/26 (PNDM: 25 steps, 26 UNet calls)", steps)
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
}

// TestGenerativeStageNeedsTheGarmentRegion: on the astronaut's
// upper-body portrait no bottom region is found; the generative stage
// refuses as the reference path does instead of repainting what the
// garment band reaches. (It used the side-view portrait, whose top was not
// found before the body frame came from the face there.)
func TestGenerativeStageNeedsTheGarmentRegion(t *testing.T) {
	pl := New(pipelinetest.Perception(t), nil).WithInpainter(pipelinetest.ContractInpainter(t))
	_, err := run(t, pl, map[string]any{"personImage": "file:images/astronaut.png", "prompt": "olive trousers", "quality": "1k"})
	if err == nil || !strings.Contains(err.Error(), "found no bottom region") {
		t.Fatalf("err = %v", err)
	}
}
