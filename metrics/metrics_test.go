package metrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"fashiond/jobs"
)

// scrape returns the registry's text exposition.
func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("/metrics: %d", rec.Code)
	}
	b, _ := io.ReadAll(rec.Body)
	return string(b)
}

func TestInstrumentRoutes(t *testing.T) {
	m := New()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/status/{id}", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(404) })
	mux.HandleFunc("POST /v1/run", func(w http.ResponseWriter, r *http.Request) {})
	h := m.Instrument(mux)
	for _, req := range []*http.Request{
		httptest.NewRequest("GET", "/v1/status/abc", nil),
		httptest.NewRequest("GET", "/v1/status/def", nil),
		httptest.NewRequest("POST", "/v1/run", nil),
		httptest.NewRequest("GET", "/no/such/path/123", nil),
		httptest.NewRequest("BREW", "/v1/run", nil),
	} {
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	out := scrape(t, m)
	for _, want := range []string{
		`fashiond_http_requests_total{code="404",method="GET",route="/v1/status/{id}"} 2`,
		`fashiond_http_requests_total{code="200",method="POST",route="/v1/run"} 1`,
		`fashiond_http_requests_total{code="404",method="GET",route="other"} 1`,
		`fashiond_http_requests_total{code="405",method="other",route="/v1/run"} 1`,
		`fashiond_http_request_duration_seconds_count{route="/v1/status/{id}"} 2`,
		"go_goroutines", "process_resident_memory_bytes",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("scrape lacks %s", want)
		}
	}
	if strings.Contains(out, "abc") || strings.Contains(out, "/no/such") {
		t.Error("a raw path leaked into a label")
	}
}

// stubBackend answers Submit and Cancel; the rest is never called.
type stubBackend struct {
	jobs.Backend
	err      error
	replayed bool
}

func (s stubBackend) Submit(_ context.Context, req jobs.SubmitRequest) (*jobs.Job, error) {
	if s.err != nil {
		return nil, s.err
	}
	return &jobs.Job{Model: req.Model, Replayed: s.replayed}, nil
}

func (s stubBackend) Cancel(context.Context, string, string) (*jobs.Job, error) {
	return &jobs.Job{CreditsRefunded: 3}, nil
}

func TestBackendCounts(t *testing.T) {
	m := New()
	ctx := context.Background()
	tests := []struct {
		b     stubBackend
		model string
		cost  int
	}{
		{stubBackend{}, "tryon", 1},
		{stubBackend{}, "tryon", 2},
		{stubBackend{replayed: true}, "tryon", 2},
		{stubBackend{err: &jobs.CreditsError{Balance: 0, Cost: 6}}, "image-to-video", 6},
		{stubBackend{err: fmt.Errorf("submit: %w", jobs.ErrModelUnavailable)}, "pose-control", 1},
		{stubBackend{err: errors.New("redis: connection refused")}, "tryon", 1},
	}
	for _, tc := range tests {
		m.Backend(tc.b).Submit(ctx, jobs.SubmitRequest{Model: tc.model, Cost: tc.cost})
	}
	m.Backend(stubBackend{}).Cancel(ctx, "o", "j")
	out := scrape(t, m)
	for _, want := range []string{
		`fashiond_submissions_total{model="tryon"} 2`,
		`fashiond_credits_charged_total 3`,
		`fashiond_credits_refunded_total 3`,
		`fashiond_rejections_total{model="image-to-video",reason="insufficient_credits"} 1`,
		`fashiond_rejections_total{model="pose-control",reason="model_unavailable"} 1`,
		`fashiond_rejections_total{model="tryon",reason="error"} 1`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("scrape lacks %s:\n%s", want, out)
		}
	}
}

func TestQueueDepth(t *testing.T) {
	m := New()
	fail := false
	m.WatchQueues(func(context.Context) (map[string]int, error) {
		if fail {
			return nil, errors.New("redis down")
		}
		return map[string]int{"tryon": 4, "image-to-video": 0}, nil
	})
	out := scrape(t, m)
	if !strings.Contains(out, `fashiond_queue_depth{model="tryon"} 4`) || !strings.Contains(out, `fashiond_queue_depth{model="image-to-video"} 0`) {
		t.Fatalf("queue depth missing:\n%s", out)
	}
	fail = true
	out = scrape(t, m)
	if strings.Contains(out, `fashiond_queue_depth{`) || !strings.Contains(out, "fashiond_queue_depth_errors_total 1") {
		t.Fatalf("a failed read must export no depth and count an error:\n%s", out)
	}
}
