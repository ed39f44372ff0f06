package metrics

import (
	"context"
	"image"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"fashiond/diffusion"
	"fashiond/fetch"
	"fashiond/inference"
	"fashiond/internal/pipelinetest"
	"fashiond/internal/testenv"
	"fashiond/jobs"
	"fashiond/jobs/redistest"
	"fashiond/perception"
	"fashiond/pipelines"
	"fashiond/spec"
	"fashiond/storage"
)

var (
	_ perception.CallObserver = (*Metrics)(nil)
	_ diffusion.BatchObserver = (*Metrics)(nil)
)

// histogram returns the sample count and sum of one series of h.
func histogram(t *testing.T, h *prometheus.HistogramVec, labels ...string) (uint64, float64) {
	t.Helper()
	r := prometheus.NewRegistry()
	r.MustRegister(h.WithLabelValues(labels...).(prometheus.Histogram))
	mfs, err := r.Gather()
	if err != nil || len(mfs) != 1 || len(mfs[0].GetMetric()) != 1 {
		t.Fatalf("gather %v: %v", labels, err)
	}
	hist := mfs[0].GetMetric()[0].GetHistogram()
	return hist.GetSampleCount(), hist.GetSampleSum()
}

// staged is a pipeline that reports two stages and returns one image.
type staged struct{ name string }

func (p staged) Name() string { return p.name }
func (p staged) Run(_ context.Context, req *pipelines.Request) (*pipelines.Result, error) {
	req.Progress("prepare", 0.2, "")
	time.Sleep(20 * time.Millisecond)
	req.Progress("render", 0.6, "")
	return &pipelines.Result{Outputs: []pipelines.Output{{Image: image.NewGray(image.Rect(0, 0, 4, 4))}}}, nil
}

// runJobs runs two jobs through a real job service and worker (on a real
// redis-server) observed by m: one succeeds and notifies a webhook that
// answers 200, one is of a model whose pipeline fails.
func runJobs(t *testing.T, m *Metrics) {
	t.Helper()
	ctx := context.Background()
	st, err := storage.NewLocal(t.TempDir(), "http://127.0.0.1:1/cdn")
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc, err := jobs.Open(ctx, jobs.Options{RedisURL: "redis://" + redistest.Start(t), Store: st, Log: log, JanitorInterval: -1,
		WebhookClient: fetch.NewClient(fetch.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, TotalTimeout: jobs.WebhookTimeout})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	key, err := svc.CreateKey(ctx, "test", 10)
	if err != nil {
		t.Fatal(err)
	}
	hooked := make(chan struct{}, 1)
	hook := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hooked <- struct{}{} }))
	t.Cleanup(hook.Close)
	w, err := jobs.NewWorker(svc, pipelines.NewRegistry(staged{spec.ModelTryOn}), pipelinetest.Loader{},
		jobs.WorkerOptions{Log: log, ShutdownTimeout: time.Second, Observer: m})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Shutdown()
	j, err := svc.Submit(ctx, jobs.SubmitRequest{Owner: jobs.OwnerOf(key), Model: spec.ModelTryOn, Cost: 1, Inputs: &spec.TryOnInputs{}, WebhookURL: hook.URL})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-hooked:
	case <-time.After(20 * time.Second):
		t.Fatalf("job %s: no webhook within 20 s", j.ID)
	}
	// The attempt is counted after the receiver answered.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if testutil.ToFloat64(m.WebhookAttempts.WithLabelValues(jobs.WebhookDelivered)) == 1 {
			break
		}
	}
}

func TestWorkerMetrics(t *testing.T) {
	m := New()
	runJobs(t, m)
	if n, sum := histogram(t, m.JobDuration, spec.ModelTryOn, jobs.OutcomeSucceeded); n != 1 || sum < 0.02 {
		t.Errorf("job duration: %d samples, sum %gs; want 1 of at least 0.02s (the pipeline sleeps 20ms)", n, sum)
	}
	if n, sum := histogram(t, m.StageDuration, spec.ModelTryOn, "prepare"); n != 1 || sum < 0.02 {
		t.Errorf("stage prepare: %d samples, sum %gs; want 1 of at least 0.02s", n, sum)
	}
	for _, stage := range []string{"render", "store_outputs"} {
		if n, _ := histogram(t, m.StageDuration, spec.ModelTryOn, stage); n != 1 {
			t.Errorf("stage %s: %d samples, want 1", stage, n)
		}
	}
	if n, sum := histogram(t, m.QueueWaitTime, spec.ModelTryOn); n != 1 || sum <= 0 || sum > 20 {
		t.Errorf("queue wait: %d samples, sum %gs; want 1 between 0 and 20s", n, sum)
	}
	if got := testutil.ToFloat64(m.WebhookAttempts.WithLabelValues(jobs.WebhookDelivered)); got != 1 {
		t.Errorf("webhook attempts delivered = %g, want 1", got)
	}
	if got := testutil.ToFloat64(m.Heartbeats.WithLabelValues(resultOK)); got < 1 {
		t.Errorf("heartbeats ok = %g, want at least 1 (the one at start)", got)
	}
	if last := testutil.ToFloat64(m.LastHeartbeat); time.Since(time.Unix(int64(last), 0)) > time.Minute {
		t.Errorf("last heartbeat at %g, want within the last minute", last)
	}
}

// runModels runs the person segmentation and the pose model once each
// through a real model suite observed by m.
func runModels(t *testing.T, m *Metrics) {
	t.Helper()
	ctx := context.Background()
	rt, err := inference.Open(ctx, inference.Config{LibPath: testenv.ORTLib(), IntraOpThreads: 1, Device: "cpu"}, nil)
	if err != nil {
		t.Fatalf("%v (run make setup)", err)
	}
	t.Cleanup(func() { rt.Close() })
	s, err := perception.NewSuite(ctx, rt, testenv.ModelsDir(), perception.SuiteOptions{Observer: m})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	img := image.NewRGBA(image.Rect(0, 0, 96, 128))
	if _, err := s.PersonMask(ctx, img); err != nil {
		t.Fatal(err)
	}
	_, _ = s.Pose(ctx, img) // no person: an error or an empty pose, the call is made either way
}

func TestModelCallMetrics(t *testing.T) {
	m := New()
	runModels(t, m)
	if n, sum := histogram(t, m.ModelCallDuration, perception.ModelSelfie, resultOK); n != 1 || sum <= 0 {
		t.Errorf("selfie calls: %d, sum %gs; want 1 taking some time", n, sum)
	}
	if n, sum := histogram(t, m.ModelCallItems, perception.ModelSelfie); n != 1 || sum != 1 {
		t.Errorf("selfie items: %d samples summing to %g, want 1 call of 1 item", n, sum)
	}
	if n, _ := histogram(t, m.ModelCallDuration, perception.ModelPoseFull, resultOK); n != 1 {
		t.Errorf("pose calls: %d, want 1", n)
	}
}

// unetMaxBatch is the contract model's UNet batch in the UNet test: a
// guided job's two rows fill half of it.
const unetMaxBatch = 4

// runUNet generates one image with the oracle contract model observed by m
// and returns its UNet call count.
func runUNet(t *testing.T, m *Metrics) int {
	t.Helper()
	ctx := context.Background()
	rt, err := inference.Open(ctx, inference.Config{LibPath: testenv.ORTLib(), IntraOpThreads: 1, Device: "cpu"}, nil)
	if err != nil {
		t.Fatalf("%v (run make setup)", err)
	}
	t.Cleanup(func() { rt.Close() })
	dm, err := diffusion.Load(ctx, rt, filepath.Join(testenv.Root(), "diffusion", "testdata", "contract", "oracle-floatb"),
		diffusion.Options{Name: "oracle", MaxBatch: unetMaxBatch, Observer: m})
	if err != nil {
		t.Fatalf("%v (run make setup)", err)
	}
	t.Cleanup(func() { dm.Close() })
	res, err := dm.Generate(ctx, diffusion.Request{Prompt: "a shirt", Steps: 3, Guidance: 7.5, Seed: 1, Width: 64, Height: 64})
	if err != nil {
		t.Fatal(err)
	}
	return res.Timings.Calls
}

func TestUNetMetrics(t *testing.T) {
	m := New()
	calls := runUNet(t, m)
	if calls < 3 {
		t.Fatalf("%d UNet calls for 3 steps", calls)
	}
	if n, _ := histogram(t, m.UNetCallDuration, "oracle", resultOK); int(n) != calls {
		t.Errorf("UNet call samples %d, want %d", n, calls)
	}
	if n, sum := histogram(t, m.UNetBatchFill, "oracle"); int(n) != calls || sum != float64(calls)*2/unetMaxBatch {
		t.Errorf("UNet fill: %d samples summing to %g, want %d of 0.5 (2 guided rows of %d)", n, sum, calls, unetMaxBatch)
	}
}

// families are the fashiond metric families, all documented in
// docs/OPERATIONS.md.
var families = []string{
	"fashiond_http_requests_total", "fashiond_http_request_duration_seconds",
	"fashiond_submissions_total", "fashiond_rejections_total",
	"fashiond_credits_charged_total", "fashiond_credits_refunded_total",
	"fashiond_queue_depth", "fashiond_queue_depth_errors_total", "fashiond_queue_wait_seconds",
	"fashiond_job_duration_seconds", "fashiond_job_stage_duration_seconds",
	"fashiond_model_call_duration_seconds", "fashiond_model_call_items",
	"fashiond_unet_call_duration_seconds", "fashiond_unet_batch_fill_ratio",
	"fashiond_webhook_attempts_total",
	"fashiond_worker_heartbeats_total", "fashiond_worker_last_heartbeat_timestamp_seconds",
	"fashiond_inference_device_info",
}

// TestScrapeEveryFamily drives every observed code path into one registry
// and scrapes /metrics over HTTP from a running server, as Prometheus
// would: every fashiond metric family is there.
func TestScrapeEveryFamily(t *testing.T) {
	m := New()
	m.WatchQueues(func(context.Context) (map[string]int, error) { return map[string]int{spec.ModelTryOn: 0}, nil })
	runJobs(t, m)
	runModels(t, m)
	runUNet(t, m)
	m.SetInferenceDevice("cpu", "", "", "")
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	srv := httptest.NewServer(m.Instrument(mux))
	defer srv.Close()
	if _, err := m.Backend(stubBackend{}).Submit(context.Background(), jobs.SubmitRequest{Model: spec.ModelTryOn, Cost: 1}); err != nil {
		t.Fatal(err)
	}
	_, _ = m.Backend(stubBackend{err: jobs.ErrModelUnavailable}).Submit(context.Background(), jobs.SubmitRequest{Model: spec.ModelTryOn})
	_, _ = m.Backend(stubBackend{}).Cancel(context.Background(), "o", "j")
	http.Get(srv.URL + "/metrics") // counted by the next scrape
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	out := string(b)
	for _, fam := range families {
		if !strings.Contains(out, "\n# TYPE "+fam+" ") {
			t.Errorf("/metrics lacks the family %s", fam)
		}
	}
	for _, fam := range []string{"go_goroutines", "process_resident_memory_bytes"} {
		if !strings.Contains(out, "# TYPE "+fam+" ") {
			t.Errorf("/metrics lacks %s", fam)
		}
	}
}

// TestFamiliesDocumented: every family is in docs/OPERATIONS.md's metrics
// table.
func TestFamiliesDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "docs", "OPERATIONS.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, fam := range families {
		if !strings.Contains(string(b), "| `"+fam+"` |") {
			t.Errorf("docs/OPERATIONS.md does not document %s", fam)
		}
	}
}

// TestInferenceDevice: the info gauge holds one series, the last one set.
func TestInferenceDevice(t *testing.T) {
	m := New()
	m.SetInferenceDevice("cpu", "", "", "")
	m.SetInferenceDevice("cuda", "plugin", "/opt/ort/libonnxruntime_providers_cuda.so", "NVIDIA H100 80GB HBM3")
	if n := testutil.CollectAndCount(m.InferenceDevice); n != 1 {
		t.Fatalf("%d series, want 1", n)
	}
	if v := testutil.ToFloat64(m.InferenceDevice.WithLabelValues("cuda", "plugin", "/opt/ort/libonnxruntime_providers_cuda.so", "NVIDIA H100 80GB HBM3")); v != 1 {
		t.Fatalf("value %v", v)
	}
}
