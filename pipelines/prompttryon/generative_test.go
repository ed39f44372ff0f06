package prompttryon

import (
	"context"
	"strings"
	"testing"

	"fashiond/pipelines/pipelinetest"
)

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
