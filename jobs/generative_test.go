package jobs

import (
	"context"
	"fashiond/internal/pipelinetest"
	"fashiond/pipelines"
	"fashiond/spec"
	"slices"
	"testing"
	"time"
)

// genGradient is a gradient pipeline that says it uses an installed
// generative model.
type genGradient struct{ gradient }

func (*genGradient) GenerativeModels() []string { return []string{"sd15-inpaint"} }

// TestModelsShowGenerativeStages: GET /v1/models's data says per model
// whether a live worker runs it with installed generative models, and
// which.
func TestModelsShowGenerativeStages(t *testing.T) {
	forBackends(t, func(t *testing.T, addr string) {
		e := newEnv(t, addr, Options{})
		e.worker(&genGradient{gradient{name: spec.ModelPromptTryOn, n: 1, w: 8, h: 8}}, &gradient{name: spec.ModelTryOn, n: 1, w: 8, h: 8})
		ms, err := e.svc.Models(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			switch m.Name {
			case spec.ModelPromptTryOn:
				if m.Stages != "generative" || !slices.Equal(m.GenerativeModels, []string{"sd15-inpaint"}) {
					t.Errorf("%s: %+v", m.Name, m)
				}
			default:
				if m.Stages != "reference" || len(m.GenerativeModels) != 0 || m.GenerativeModels == nil {
					t.Errorf("%s: %+v", m.Name, m)
				}
			}
		}
	})
}

// TestModelsShowDevices: GET /v1/models's data names the inference device of
// each live worker serving a model, once per distinct device.
func TestModelsShowDevices(t *testing.T) {
	forBackends(t, func(t *testing.T, addr string) {
		e := newEnv(t, addr, Options{})
		const gpu = "cuda:0 Fake GPU (plugin)"
		for _, dev := range []string{gpu, "cpu", gpu} {
			w, err := NewWorker(e.svc, pipelines.NewRegistry(&gradient{name: spec.ModelTryOn, n: 1, w: 8, h: 8}), pipelinetest.Loader{},
				WorkerOptions{Concurrency: 1, ShutdownTimeout: time.Second, Log: testLog(), Device: dev})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(w.Shutdown)
		}
		ms, err := e.svc.Models(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			want := []string{}
			if m.Name == spec.ModelTryOn {
				want = []string{"cpu", gpu}
			}
			if !slices.Equal(m.Devices, want) || m.Devices == nil {
				t.Errorf("%s: devices %q, want %q", m.Name, m.Devices, want)
			}
		}
	})
}
