// Package metrics holds fashiond's Prometheus metrics: their definitions, in
// one registry with the Go and process collectors, the /metrics handler and
// small hooks (HTTP middleware, queue depth on scrape) that the serve, api
// and worker commands attach. Label values are bounded: routes are the API's
// route patterns, models the registered model names, reasons a fixed set.
package metrics

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// namespace prefixes every metric name.
const namespace = "fashiond"

// Metrics is one registry with every fashiond metric.
type Metrics struct {
	reg *prometheus.Registry

	HTTPRequests    *prometheus.CounterVec   // route, method, code
	HTTPDuration    *prometheus.HistogramVec // route
	Submissions     *prometheus.CounterVec   // model
	Rejections      *prometheus.CounterVec   // model, reason
	CreditsCharged  prometheus.Counter
	CreditsRefunded prometheus.Counter
	workerMetrics
}

// httpBuckets are the request-time buckets: 1 ms to about 65 s.
var httpBuckets = prometheus.ExponentialBuckets(0.001, 4, 9)

// New returns the metrics in a fresh registry that also holds the Go
// runtime and process collectors.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.HTTPRequests = m.counterVec("http_requests_total", "HTTP requests by route pattern, method and status code.", "route", "method", "code")
	m.HTTPDuration = m.histVec("http_request_duration_seconds", "HTTP request handling time by route pattern.", httpBuckets, "route")
	m.Submissions = m.counterVec("submissions_total", "Jobs accepted by POST /v1/run, by model.", "model")
	m.Rejections = m.counterVec("rejections_total", "Submissions refused by the job system, by model and reason.", "model", "reason")
	m.CreditsCharged = m.counter("credits_charged_total", "Credits reserved by accepted submissions.")
	m.CreditsRefunded = m.counter("credits_refunded_total", "Credits given back (cancelled jobs).")
	m.newWorkerMetrics()
	return m
}

func (m *Metrics) counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help})
	m.reg.MustRegister(c)
	return c
}

func (m *Metrics) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help}, labels)
	m.reg.MustRegister(c)
	return c
}

func (m *Metrics) histVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: name, Help: help, Buckets: buckets}, labels)
	m.reg.MustRegister(h)
	return h
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Registry is the registry, for collectors a command adds.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// QueueDepthFunc reports, per model, the jobs waiting in its queue.
type QueueDepthFunc func(ctx context.Context) (map[string]int, error)

// queueTimeout bounds one scrape's queue inspection.
const queueTimeout = 2 * time.Second

// WatchQueues adds fashiond_queue_depth{model}, read from depth at every
// scrape (a failed read exports nothing and is counted in
// fashiond_queue_depth_errors_total).
func (m *Metrics) WatchQueues(depth QueueDepthFunc) {
	m.reg.MustRegister(&queueCollector{depth: depth,
		desc:    prometheus.NewDesc(namespace+"_queue_depth", "Jobs waiting in a model's queue (pending, scheduled and retrying).", []string{"model"}, nil),
		errDesc: prometheus.NewDesc(namespace+"_queue_depth_errors_total", "Scrapes at which the queue depth could not be read.", nil, nil)})
}

// queueCollector reads the depths at each scrape and exports the count of
// failed reads itself, so a scrape whose read failed already shows it (a
// separately registered counter may be gathered before this collector runs:
// collectors are gathered concurrently).
type queueCollector struct {
	depth         QueueDepthFunc
	errs          atomic.Uint64
	desc, errDesc *prometheus.Desc
}

func (q *queueCollector) Describe(ch chan<- *prometheus.Desc) { ch <- q.desc; ch <- q.errDesc }

func (q *queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), queueTimeout)
	defer cancel()
	d, err := q.depth(ctx)
	if err != nil {
		q.errs.Add(1)
	}
	ch <- prometheus.MustNewConstMetric(q.errDesc, prometheus.CounterValue, float64(q.errs.Load()))
	if err != nil {
		return
	}
	for model, n := range d {
		ch <- prometheus.MustNewConstMetric(q.desc, prometheus.GaugeValue, float64(n), model)
	}
}

// Instrument counts and times every request of next by route. route maps a
// request to its route label: the pattern the API's mux matched, else the
// first path segments of a known prefix (see RouteOf).
func (m *Metrics) Instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		next.ServeHTTP(sw, r)
		route := RouteOf(r)
		m.HTTPRequests.WithLabelValues(route, methodLabel(r.Method), strconv.Itoa(sw.code)).Inc()
		m.HTTPDuration.WithLabelValues(route).Observe(time.Since(start).Seconds())
	})
}

// knownPrefixes are the API's path prefixes, longest first; a request that
// matched no mux pattern is labelled with the first that fits, else "other".
var knownPrefixes = []string{
	"/v1/models/saved", "/v1/run", "/v1/status", "/v1/cancel", "/v1/jobs", "/v1/credits", "/v1/models",
	"/cdn", "/healthz", "/readyz", "/metrics",
}

// RouteOf is the bounded route label of r: the mux pattern it matched (set
// on r by http.ServeMux), else a known path prefix, else "other".
func RouteOf(r *http.Request) string {
	if r.Pattern != "" {
		_, path, ok := strings.Cut(r.Pattern, " ")
		if !ok {
			path = r.Pattern
		}
		return path
	}
	for _, p := range knownPrefixes {
		if r.URL.Path == p || strings.HasPrefix(r.URL.Path, p+"/") {
			return p
		}
	}
	return "other"
}

// methodLabel bounds the method label to the standard methods.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions:
		return m
	}
	return "other"
}

// statusWriter records the status code a handler writes.
type statusWriter struct {
	http.ResponseWriter
	code        int
	wroteHeader bool
}

func (s *statusWriter) WriteHeader(code int) {
	if !s.wroteHeader {
		s.code, s.wroteHeader = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the underlying writer
// (flushing server-sent events, deadlines).
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Flush forwards to the underlying writer when it can flush.
func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
