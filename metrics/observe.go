package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"fashiond/jobs"
)

// Buckets of the job, queue and model histograms.
var (
	// jobBuckets: 50 ms to about 27 minutes (a long video job).
	jobBuckets = prometheus.ExponentialBuckets(0.05, 2, 16)
	// waitBuckets: 10 ms to about 30 minutes in a queue.
	waitBuckets = prometheus.ExponentialBuckets(0.01, 3, 12)
	// itemBuckets: 1 to 64 items in one model call.
	itemBuckets = prometheus.ExponentialBuckets(1, 2, 7)
	// fillBuckets: an eighth to all of a UNet call's capacity.
	fillBuckets = prometheus.LinearBuckets(0.125, 0.125, 8)
)

// Results of a model call and of a heartbeat.
const (
	resultOK    = "ok"
	resultError = "error"
)

// workerMetrics are the metrics the worker, the perception models and the
// diffusion engine report through their observer hooks.
type workerMetrics struct {
	JobDuration       *prometheus.HistogramVec // model, outcome
	StageDuration     *prometheus.HistogramVec // model, stage
	QueueWaitTime     *prometheus.HistogramVec // model
	WebhookAttempts   *prometheus.CounterVec   // outcome
	Heartbeats        *prometheus.CounterVec   // result
	LastHeartbeat     prometheus.Gauge
	ModelCallDuration *prometheus.HistogramVec // model, result
	ModelCallItems    *prometheus.HistogramVec // model
	UNetCallDuration  *prometheus.HistogramVec // model, result
	UNetBatchFill     *prometheus.HistogramVec // model
	// InferenceDevice is 1 for the device this process's worker runs its
	// models on: device (cpu, cuda), route (in-core, plugin, ""), library
	// (the CUDA provider or core library) and gpu (the device's name).
	InferenceDevice *prometheus.GaugeVec
}

// newWorkerMetrics registers the observer metrics in m.
func (m *Metrics) newWorkerMetrics() {
	m.JobDuration = m.histVec("job_duration_seconds", "Time of one job attempt from the start of its pipeline to its end, by model and outcome (succeeded, failed, timeout, canceled, retry, interrupted).", jobBuckets, "model", "outcome")
	m.StageDuration = m.histVec("job_stage_duration_seconds", "Time a job spent in one stage its pipeline reported (store_outputs: storing the outputs), by model and stage.", jobBuckets, "model", "stage")
	m.QueueWaitTime = m.histVec("queue_wait_seconds", "Time from a job's submission to the start of its first attempt, by model.", waitBuckets, "model")
	m.WebhookAttempts = m.counterVec("webhook_attempts_total", "Webhook delivery attempts by outcome (delivered, retry, refused, exhausted).", "outcome")
	m.Heartbeats = m.counterVec("worker_heartbeats_total", "Worker heartbeat writes to Redis by result (ok, error).", "result")
	m.LastHeartbeat = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "worker_last_heartbeat_timestamp_seconds", Help: "Unix time of this process's worker's last successful heartbeat."})
	m.reg.MustRegister(m.LastHeartbeat)
	m.ModelCallDuration = m.histVec("model_call_duration_seconds", "Perception model calls (ONNX Runtime, including any wait in a dynamic batcher) by model graph and result (ok, error).", httpBuckets, "model", "result")
	m.ModelCallItems = m.histVec("model_call_items", "Items (dim-0 rows) one perception model call carried, by model graph.", itemBuckets, "model")
	m.UNetCallDuration = m.histVec("unet_call_duration_seconds", "Diffusion UNet calls (time in ONNX Runtime) by installed model and result (ok, error).", httpBuckets, "model", "result")
	m.InferenceDevice = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Name: "inference_device_info",
		Help: "1 for the inference device of this process's worker: device (cpu, cuda), CUDA route (in-core, plugin), provider library and GPU name."},
		[]string{"device", "route", "library", "gpu"})
	m.reg.MustRegister(m.InferenceDevice)
	m.UNetBatchFill = m.histVec("unet_batch_fill_ratio", "Rows one UNet call carried as a share of its maximum batch, by installed model.", fillBuckets, "model")
}

var _ jobs.Observer = (*Metrics)(nil)

// SetInferenceDevice records where this process's worker runs its models
// (one series; a later call replaces it).
func (m *Metrics) SetInferenceDevice(device, route, library, gpu string) {
	m.InferenceDevice.Reset()
	m.InferenceDevice.WithLabelValues(device, route, library, gpu).Set(1)
}

// QueueWait implements jobs.Observer.
func (m *Metrics) QueueWait(model string, wait time.Duration) {
	m.QueueWaitTime.WithLabelValues(model).Observe(wait.Seconds())
}

// JobFinished implements jobs.Observer.
func (m *Metrics) JobFinished(model, outcome string, took time.Duration) {
	m.JobDuration.WithLabelValues(model, outcome).Observe(took.Seconds())
}

// StageFinished implements jobs.Observer.
func (m *Metrics) StageFinished(model, stage string, took time.Duration) {
	m.StageDuration.WithLabelValues(model, stage).Observe(took.Seconds())
}

// WebhookAttempt implements jobs.Observer.
func (m *Metrics) WebhookAttempt(outcome string) {
	m.WebhookAttempts.WithLabelValues(outcome).Inc()
}

// Heartbeat implements jobs.Observer.
func (m *Metrics) Heartbeat(_ string, ok bool) {
	if !ok {
		m.Heartbeats.WithLabelValues(resultError).Inc()
		return
	}
	m.Heartbeats.WithLabelValues(resultOK).Inc()
	m.LastHeartbeat.SetToCurrentTime()
}

// ModelCall implements perception.CallObserver.
func (m *Metrics) ModelCall(model string, items int, took time.Duration, err error) {
	m.ModelCallDuration.WithLabelValues(model, result(err)).Observe(took.Seconds())
	if items > 0 {
		m.ModelCallItems.WithLabelValues(model).Observe(float64(items))
	}
}

// UNetCall implements diffusion.BatchObserver.
func (m *Metrics) UNetCall(model string, rows, maxRows int, took time.Duration, err error) {
	m.UNetCallDuration.WithLabelValues(model, result(err)).Observe(took.Seconds())
	if maxRows > 0 {
		m.UNetBatchFill.WithLabelValues(model).Observe(float64(rows) / float64(maxRows))
	}
}

// result is the result label of an error.
func result(err error) string {
	if err != nil {
		return resultError
	}
	return resultOK
}
