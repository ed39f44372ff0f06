package jobs

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"fashiond/internal/pipelinetest"
	"fashiond/jobs/redistest"
	"fashiond/pipelines"
	"fashiond/spec"
)

// recObserver counts what a worker observes.
type recObserver struct {
	mu     sync.Mutex
	waits  map[string]int // model
	jobs   map[string]int // model/outcome
	stages map[string]int // model/stage
	hooks  map[string]int // outcome
	beats  map[bool]int
	minDur time.Duration // shortest job duration seen
}

func newRecObserver() *recObserver {
	return &recObserver{waits: map[string]int{}, jobs: map[string]int{}, stages: map[string]int{}, hooks: map[string]int{}, beats: map[bool]int{}, minDur: time.Hour}
}

func (o *recObserver) QueueWait(model string, wait time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if wait >= 0 {
		o.waits[model]++
	}
}

func (o *recObserver) JobFinished(model, outcome string, took time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.jobs[model+"/"+outcome]++
	o.minDur = min(o.minDur, took)
}

func (o *recObserver) StageFinished(model, stage string, took time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.stages[model+"/"+stage]++
}

func (o *recObserver) WebhookAttempt(outcome string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.hooks[outcome]++
}

func (o *recObserver) Heartbeat(_ string, ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.beats[ok]++
}

// snapshot copies the webhook counts.
func (o *recObserver) hookCounts() map[string]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return maps.Clone(o.hooks)
}

// TestWorkerObserver runs jobs of every outcome and webhooks of every
// outcome through a real worker and checks what its Observer was told.
func TestWorkerObserver(t *testing.T) {
	e := newEnv(t, redistest.Start(t), Options{})
	obs := newRecObserver()
	w, err := NewWorker(e.svc, pipelines.NewRegistry(
		&gradient{name: spec.ModelTryOn, n: 2, w: 8, h: 8},
		&failing{name: "fail", msg: "no garment found"},
		&failing{name: "flaky", msg: "busy", transient: true, okFrom: 2},
	), pipelinetest.Loader{}, WorkerOptions{Concurrency: 2, ShutdownTimeout: 3 * time.Second, Log: testLog(), Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Shutdown)
	answer := func(code int) string {
		s := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) { rw.WriteHeader(code) }))
		t.Cleanup(s.Close)
		return s.URL
	}
	ids := []string{
		e.submit(spec.ModelTryOn, 1, answer(http.StatusOK)).ID,
		e.submit(spec.ModelTryOn, 1, answer(http.StatusGone)).ID,
		e.submit(spec.ModelTryOn, 1, answer(http.StatusInternalServerError)).ID,
		e.submit("fail", 1, "").ID,
		e.submit("flaky", 1, "").ID,
	}
	for _, id := range ids {
		e.waitTerminal(id)
	}
	// Three attempts of the failing webhook: two retries, then the last.
	wantHooks := map[string]int{WebhookDelivered: 1, WebhookRefused: 1, WebhookRetry: 2, WebhookExhausted: 1}
	deadline := time.Now().Add(15 * time.Second)
	for !maps.Equal(obs.hookCounts(), wantHooks) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	w.Shutdown()
	obs.mu.Lock()
	defer obs.mu.Unlock()
	checks := []struct {
		name      string
		got, want map[string]int
	}{
		{"queue waits", obs.waits, map[string]int{spec.ModelTryOn: 3, "fail": 1, "flaky": 1}},
		{"job outcomes", obs.jobs, map[string]int{spec.ModelTryOn + "/" + OutcomeSucceeded: 3, "fail/" + OutcomeFailed: 1,
			"flaky/" + OutcomeRetry: 1, "flaky/" + OutcomeSucceeded: 1}},
		{"stages", obs.stages, map[string]int{spec.ModelTryOn + "/draw": 3, spec.ModelTryOn + "/" + stageStore: 3,
			"flaky/draw": 1, "flaky/" + stageStore: 1}},
		{"webhooks", obs.hooks, wantHooks},
	}
	for _, c := range checks {
		if !maps.Equal(c.got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
	if obs.beats[true] < 1 || obs.beats[false] != 0 {
		t.Errorf("heartbeats %v, want at least one ok and no failure", obs.beats)
	}
	if obs.minDur <= 0 {
		t.Errorf("a job attempt took %v", obs.minDur)
	}
}

func TestWebhookOutcome(t *testing.T) {
	tests := []struct {
		name         string
		err          error
		retried, max int
		want         string
	}{
		{name: "delivered", want: WebhookDelivered},
		{name: "first failure", err: errors.New("500"), retried: 0, max: 2, want: WebhookRetry},
		{name: "last failure", err: errors.New("500"), retried: 2, max: 2, want: WebhookExhausted},
		{name: "gone", err: fmt.Errorf("410: %w", asynq.SkipRetry), retried: 0, max: 2, want: WebhookRefused},
		{name: "gone on the last attempt", err: fmt.Errorf("410: %w", asynq.SkipRetry), retried: 2, max: 2, want: WebhookRefused},
	}
	for _, tc := range tests {
		if got := webhookOutcome(tc.err, tc.retried, tc.max); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// stageRec records the stages a stageClock reports, in order.
type stageRec struct {
	noObserver
	got  []string
	took []time.Duration
}

func (s *stageRec) StageFinished(model, stage string, took time.Duration) {
	s.got = append(s.got, model+"/"+stage)
	s.took = append(s.took, took)
}

func TestStageClock(t *testing.T) {
	rec := &stageRec{}
	c := &stageClock{obs: rec, model: "tryon"}
	c.enter("detect")
	time.Sleep(5 * time.Millisecond)
	c.enter("detect") // the same stage goes on
	c.enter("warp")
	c.enter("")
	c.enter("")
	want := []string{"tryon/detect", "tryon/warp"}
	if fmt.Sprint(rec.got) != fmt.Sprint(want) {
		t.Fatalf("stages %v, want %v", rec.got, want)
	}
	if rec.took[0] < 5*time.Millisecond {
		t.Errorf("detect took %v, want at least the 5ms it slept", rec.took[0])
	}
}
