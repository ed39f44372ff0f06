package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"fashiond/internal/pipelinetest"
	"fashiond/internal/testenv"
	"fashiond/spec"
)

// TestFashnTryOnThroughTheAPI: `fashiond models install` of the small
// random-weight FASHN VTON export (diffusion/testdata/fashn/tiny, the
// repository's TryOnModel at hidden 64) and a tryon job through a real
// `fashiond serve`: the job finishes with path generative, the method and
// notes name the model, its sampler and its random weights, and GET
// /v1/models lists it for tryon. The picture is noise-like inside the
// garment region (random weights); nothing here is a quality result.
func TestFashnTryOnThroughTheAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test of the binary")
	}
	bin := buildBinary(t)
	dir := modelsDir(t, bin)
	cmd := exec.Command(bin, "models", "install", "--name", "fashn-tiny", filepath.Join(pipelinetest.Root(), "diffusion/testdata/fashn/tiny"))
	cmd.Env = append(os.Environ(), "FASHIOND_MODELS_DIR="+dir, "FASHIOND_ORT_LIB="+testenv.ORTLib(), "FASHIOND_DEVICE=cpu")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("models install: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "installed fashn-tiny (try-on") {
		t.Errorf("install output:\n%s", out)
	}
	uri := func(rel string) string { return pipelinetest.DataURI(t, rel) }
	c := genCase{model: "tryon", inputs: map[string]any{"personImage": uri("images/fashn_model.webp"), "garmentImage": uri("garments/flatlay_tee_red.png"), "accuracy": "standard"}}
	sv := serveJobs(t, bin, dir, []genCase{c})
	j := sv.jobs["tryon"]
	if j.Status != spec.SuccessStatus("tryon") || len(j.Outputs) != 1 {
		t.Fatalf("job finished as %q error %v with %d outputs", j.Status, deref(j.Error), len(j.Outputs))
	}
	o := j.Outputs[0]
	notes := strings.Join(o.Notes, " | ")
	t.Logf("path %s, method %s, notes %s", o.Path, o.Method, notes)
	if o.Path != "generative" || !strings.Contains(o.Method, "try-on(fashn-tiny)") {
		t.Errorf("path %q method %q, want generative try-on(fashn-tiny)", o.Path, o.Method)
	}
	for _, s := range []string{"FASHN VTON layout", "20 steps", "guidance 1.5", "random weights", "noise-like", "BlazePose", "category tops"} {
		if !strings.Contains(notes, s) {
			t.Errorf("notes lack %q: %s", s, notes)
		}
	}
	if m := sv.models["tryon"]; !m.Served || m.Stages != "generative" || !slices.Contains(m.GenerativeModels, "fashn-tiny") {
		t.Errorf("GET /v1/models tryon: %+v", m)
	}
	testenv.WritePNG(t, "fashn_tryon_random_weights.png", sv.images["tryon"])
}
