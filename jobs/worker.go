package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"fashiond/jobs/internal/rdb"
	"fashiond/pipelines"
)

// Defaults of WorkerOptions.
const (
	DefaultConcurrency       = 2
	DefaultVideoConcurrency  = 1
	DefaultWebhookWorkers    = 4
	DefaultShutdownTimeout   = 5 * time.Minute
	DefaultTaskCheckInterval = 50 * time.Millisecond
)

// Crash recovery. asynq v0.26 gives a dequeued task a 30 s lease that the
// server's heartbeat extends every 5 s; its recoverer, which runs when a
// server starts and then once a minute, re-queues tasks whose lease expired
// more than 30 s ago. Alone that re-runs a crashed worker's job 60 to 120 s
// after the crash. A worker therefore also sweeps (at start and with every
// heartbeat) the lease sets of its queues: a lease not extended for
// orphanAfter whose job's runner has no live heartbeat is set to expire at
// once (score 0). At start the worker's servers then recover it in their
// start-up pass; a running worker that finds orphans starts a short-lived
// extra asynq server on those queues only for its start-up recoverer pass
// (it is stopped at once; a job it happened to dequeue runs to the end).
// So a crashed worker's job runs again about 15-20 s after the crash on any
// live worker of its model. The re-run is idempotent:
// outputs go to deterministic keys, the terminal transition is a Lua
// compare-and-set, the refund is flagged in the same script and credits are
// only charged at submission.
const orphanAfter = 15 * time.Second

// WorkerOptions configures NewWorker.
type WorkerOptions struct {
	// Concurrency is the number of image-model jobs run at once
	// (DefaultConcurrency).
	Concurrency int
	// VideoConcurrency is the number of image-to-video jobs run at once, in
	// a separate asynq server so that videos never hold the image slots
	// (DefaultVideoConcurrency).
	VideoConcurrency int
	// WebhookWorkers is the number of webhook deliveries at once
	// (DefaultWebhookWorkers); negative: this worker delivers none.
	WebhookWorkers int
	// Models is the subset of the registry this worker serves; empty: all.
	Models []string
	// Device is where this worker's models run, for GET /v1/models
	// (inference.Placement's Public; empty: not advertised).
	Device string
	// ShutdownTimeout is how long Shutdown lets running jobs finish before
	// they are pushed back to their queue for another worker
	// (DefaultShutdownTimeout).
	ShutdownTimeout time.Duration
	// TaskCheckInterval is the idle poll interval of the job queues
	// (DefaultTaskCheckInterval): the pickup latency of an idle worker is
	// about half to one and a half of it.
	TaskCheckInterval time.Duration
	// Log receives the worker's logs (the service's logger).
	Log *slog.Logger
	// Observer, when set, receives the worker's measurements (package
	// metrics implements it).
	Observer Observer
}

// Outcomes of a job attempt (Observer.JobFinished).
const (
	OutcomeSucceeded   = "succeeded"   // outputs stored, job succeeded
	OutcomeFailed      = "failed"      // the job failed (user input, pipeline error, crash budget)
	OutcomeTimeout     = "timeout"     // the job ran past its model's time limit
	OutcomeCanceled    = "canceled"    // its owner cancelled it while it ran
	OutcomeRetry       = "retry"       // a transient failure; the job runs again
	OutcomeInterrupted = "interrupted" // shutdown or a lost lease: back to the queue
)

// Outcomes of a webhook attempt (Observer.WebhookAttempt).
const (
	WebhookDelivered = "delivered" // the receiver answered 2xx
	WebhookRetry     = "retry"     // failed; it is tried again later
	WebhookRefused   = "refused"   // refused for good (410 Gone, a forbidden address, a bad URL)
	WebhookExhausted = "exhausted" // failed on its last allowed attempt
)

// Observer receives a worker's measurements. Its methods are called on the
// worker's goroutines and must not block.
type Observer interface {
	// QueueWait is the time from a job's submission to the start of its
	// first attempt.
	QueueWait(model string, wait time.Duration)
	// JobFinished is one attempt of a job: its outcome (Outcome*) and the
	// time from the start of the pipeline to the end.
	JobFinished(model, outcome string, took time.Duration)
	// StageFinished is the time a job spent in one stage its pipeline
	// reported through its progress (from the first report of the stage
	// to the first report of the next one or the end of the attempt).
	StageFinished(model, stage string, took time.Duration)
	// WebhookAttempt is one delivery attempt (Webhook*).
	WebhookAttempt(outcome string)
	// Heartbeat is one heartbeat write of worker: ok, or it failed.
	Heartbeat(worker string, ok bool)
}

// noObserver is the Observer of a worker without one.
type noObserver struct{}

func (noObserver) QueueWait(string, time.Duration)             {}
func (noObserver) JobFinished(string, string, time.Duration)   {}
func (noObserver) StageFinished(string, string, time.Duration) {}
func (noObserver) WebhookAttempt(string)                       {}
func (noObserver) Heartbeat(string, bool)                      {}

// Worker consumes the queues of the models it serves, runs their pipelines,
// stores outputs, delivers webhooks and advertises its models by heartbeat.
type Worker struct {
	svc    *Service
	reg    *pipelines.Registry
	loader pipelines.ImageLoader
	opts   WorkerOptions
	id     string
	models []string
	log    *slog.Logger

	base       context.Context // jobs' base context, cancelled when shutdown gives up
	cancelBase context.CancelFunc
	servers    []*asynq.Server
	mux        *asynq.ServeMux
	kicks      sync.WaitGroup // short-lived recoverer servers
	stopBeat   chan struct{}
	beatDone   chan struct{}
	mu         sync.Mutex
	started    bool
	stopped    bool
	// attempts holds the ids of the jobs this worker is running now
	// (from their claim to the end of the attempt).
	attempts sync.Map
}

// NewWorker prepares a worker for the models of reg (or opts.Models).
func NewWorker(svc *Service, reg *pipelines.Registry, loader pipelines.ImageLoader, opts WorkerOptions) (*Worker, error) {
	if svc == nil || reg == nil || loader == nil {
		return nil, errors.New("jobs: NewWorker needs a service, a registry and an image loader")
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if opts.VideoConcurrency <= 0 {
		opts.VideoConcurrency = DefaultVideoConcurrency
	}
	if opts.WebhookWorkers == 0 {
		opts.WebhookWorkers = DefaultWebhookWorkers
	}
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = DefaultShutdownTimeout
	}
	if opts.TaskCheckInterval <= 0 {
		opts.TaskCheckInterval = DefaultTaskCheckInterval
	}
	if opts.Log == nil {
		opts.Log = svc.opts.Log
	}
	if opts.Observer == nil {
		opts.Observer = noObserver{}
	}
	models := opts.Models
	if len(models) == 0 {
		models = reg.Names()
	}
	seen := map[string]bool{}
	var uniq []string
	for _, m := range models {
		if _, ok := reg.Get(m); !ok {
			return nil, fmt.Errorf("jobs: worker: no pipeline for model %q", m)
		}
		if !seen[m] {
			seen[m] = true
			uniq = append(uniq, m)
		}
	}
	if len(uniq) == 0 && opts.WebhookWorkers < 0 {
		return nil, errors.New("jobs: worker: no models to serve and no webhooks to deliver")
	}
	id := uuid.NewString()[:13]
	w := &Worker{svc: svc, reg: reg, loader: loader, opts: opts, id: id, models: uniq,
		log: opts.Log.With("component", "worker", "worker", id)}
	return w, nil
}

// ID is the worker's id (in heartbeats and job records).
func (w *Worker) ID() string { return w.id }

// Models lists the models the worker serves.
func (w *Worker) Models() []string { return append([]string(nil), w.models...) }

// Start advertises the worker's models, re-queues orphaned jobs of its
// queues and starts consuming. It returns at once.
func (w *Worker) Start() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		return errors.New("jobs: worker already started")
	}
	w.started = true
	ctx := context.Background()
	w.base, w.cancelBase = context.WithCancel(context.Background())
	if err := w.beat(ctx, true); err != nil {
		return err
	}
	w.reclaim(ctx)

	mux := asynq.NewServeMux()
	mux.HandleFunc(rdb.TaskJob, w.handleJob)
	mux.HandleFunc(rdb.TaskWebhook, w.handleWebhook)
	w.mux = mux
	images, video := map[string]int{}, map[string]int{}
	for _, m := range w.models {
		if isVideo(m) {
			video[rdb.QueueName(m)] = Priority(m)
		} else {
			images[rdb.QueueName(m)] = Priority(m)
		}
	}
	type server struct {
		queues      map[string]int
		concurrency int
		check       time.Duration
	}
	var specs []server
	if len(images) > 0 {
		specs = append(specs, server{images, w.opts.Concurrency, w.opts.TaskCheckInterval})
	}
	if len(video) > 0 {
		specs = append(specs, server{video, w.opts.VideoConcurrency, w.opts.TaskCheckInterval})
	}
	if w.opts.WebhookWorkers > 0 {
		specs = append(specs, server{map[string]int{rdb.WebhookQueue: 1}, w.opts.WebhookWorkers, 500 * time.Millisecond})
	}
	for _, sp := range specs {
		srv := w.newServer(sp.queues, sp.concurrency, sp.check)
		if err := srv.Start(mux); err != nil {
			for _, s := range w.servers {
				s.Shutdown()
			}
			w.servers = nil
			w.unadvertise(ctx)
			return fmt.Errorf("jobs: worker: %w", err)
		}
		w.servers = append(w.servers, srv)
	}
	w.stopBeat, w.beatDone = make(chan struct{}), make(chan struct{})
	go w.beatLoop()
	w.log.Info("worker started", "models", w.models, "concurrency", w.opts.Concurrency)
	return nil
}

func (w *Worker) newServer(queues map[string]int, concurrency int, check time.Duration) *asynq.Server {
	return asynq.NewServerFromRedisClient(w.svc.rdb, asynq.Config{
		Concurrency:              concurrency,
		Queues:                   queues,
		TaskCheckInterval:        check,
		DelayedTaskCheckInterval: time.Second,
		ShutdownTimeout:          w.opts.ShutdownTimeout,
		BaseContext:              func() context.Context { return w.base },
		RetryDelayFunc:           w.retryDelay,
		Logger:                   asynqLogger{w.log},
		LogLevel:                 asynq.WarnLevel,
	})
}

// kickRecoverer runs asynq's recoverer on queues now: a server on those
// queues is started and stopped at once; its start-up recoverer pass
// re-queues the tasks reclaim marked, and its Shutdown (in the background)
// waits for that pass and for a job it may have dequeued meanwhile.
func (w *Worker) kickRecoverer(queues []string) {
	qs := map[string]int{}
	for _, q := range queues {
		qs[q] = 1
	}
	srv := w.newServer(qs, 1, time.Second)
	if err := srv.Start(w.mux); err != nil {
		w.log.Warn("recover orphaned jobs", "err", err)
		return
	}
	srv.Stop()
	w.kicks.Add(1)
	go func() {
		defer w.kicks.Done()
		srv.Shutdown()
	}()
}

// Run starts the worker and shuts it down gracefully when ctx ends.
func (w *Worker) Run(ctx context.Context) error {
	if err := w.Start(); err != nil {
		return err
	}
	<-ctx.Done()
	w.Shutdown()
	return nil
}

// Shutdown stops advertising the worker's models (new submissions for models
// no other worker serves get ErrModelUnavailable), stops taking jobs, lets
// running jobs finish for ShutdownTimeout, then pushes the rest back to
// their queues for another worker and returns. Idempotent.
func (w *Worker) Shutdown() {
	w.mu.Lock()
	if !w.started || w.stopped {
		w.stopped = true
		w.mu.Unlock()
		return
	}
	w.stopped = true
	w.mu.Unlock()
	ctx := context.Background()
	w.unadvertise(ctx)
	// asynq pushes unfinished jobs back at ShutdownTimeout; a second later
	// their contexts end so the pipelines stop.
	giveUp := time.AfterFunc(w.opts.ShutdownTimeout+time.Second, w.cancelBase)
	var wg sync.WaitGroup
	for _, s := range w.servers {
		wg.Add(1)
		go func() { defer wg.Done(); s.Shutdown() }()
	}
	wg.Wait()
	giveUp.Stop()
	w.cancelBase()
	close(w.stopBeat)
	<-w.beatDone
	w.kicks.Wait()
	pipe := w.svc.rdb.TxPipeline()
	pipe.ZRem(ctx, rdb.KeyWorkers, w.id)
	pipe.Del(ctx, rdb.KeyWorker(w.id))
	if _, err := pipe.Exec(ctx); err != nil {
		w.log.Warn("remove worker heartbeat", "err", err)
	}
	w.log.Info("worker stopped")
}

func (w *Worker) beatLoop() {
	defer close(w.beatDone)
	t := time.NewTicker(HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-w.stopBeat:
			return
		case <-t.C:
			w.mu.Lock()
			advertise := !w.stopped
			w.mu.Unlock()
			ctx, cancel := context.WithTimeout(context.Background(), HeartbeatInterval)
			if err := w.beat(ctx, advertise); err != nil {
				w.log.Warn("heartbeat", "err", err)
				t.Reset(HeartbeatRetry)
				cancel()
				continue
			}
			t.Reset(HeartbeatInterval)
			if advertise {
				if qs := w.reclaim(ctx); len(qs) > 0 {
					w.kickRecoverer(qs)
				}
			}
			cancel()
		}
	}
}

// beat records the worker as live and, when advertise, as serving its
// models.
// workerInfo is what a worker advertises about itself (keyWorker).
type workerInfo struct {
	Models []string `json:"models"`
	Host   string   `json:"host"`
	PID    int      `json:"pid"`
	// Generative names, per model, the installed generative models its
	// pipeline uses on this worker.
	Generative map[string][]string `json:"generative,omitempty"`
	// Device is where the worker's models run (WorkerOptions.Device).
	Device string `json:"device,omitempty"`
}

// generativeModels is, per served model, the generative models its pipeline
// uses here.
func (w *Worker) generativeModels() map[string][]string {
	out := map[string][]string{}
	for _, m := range w.models {
		if p, ok := w.reg.Get(m); ok {
			if g := pipelines.GenerativeModels(p); len(g) > 0 {
				out[m] = g
			}
		}
	}
	return out
}

func (w *Worker) beat(ctx context.Context, advertise bool) error {
	now := float64(nowMS())
	pipe := w.svc.rdb.Pipeline()
	pipe.ZAdd(ctx, rdb.KeyWorkers, redis.Z{Score: now, Member: w.id})
	if advertise {
		host, _ := os.Hostname()
		info, _ := json.Marshal(workerInfo{Models: w.models, Host: host, PID: os.Getpid(), Generative: w.generativeModels(), Device: w.opts.Device})
		pipe.Set(ctx, rdb.KeyWorker(w.id), info, 3*HeartbeatTTL)
		for _, m := range w.models {
			pipe.ZAdd(ctx, rdb.KeyServed(m), redis.Z{Score: now, Member: w.id})
			pipe.SAdd(ctx, rdb.KeyModels, m)
			pipe.HSet(ctx, rdb.KeySlots(m), w.id, w.slots(m))
		}
	}
	// Forget workers that have been silent for a minute.
	pipe.ZRemRangeByScore(ctx, rdb.KeyWorkers, "-inf", strconv.FormatInt(nowMS()-60_000, 10))
	_, err := pipe.Exec(ctx)
	w.opts.Observer.Heartbeat(w.id, err == nil)
	if err != nil {
		return fmt.Errorf("jobs: heartbeat: %w", err)
	}
	return nil
}

// slots is the number of jobs of model the worker runs at once.
func (w *Worker) slots(model string) int {
	if isVideo(model) {
		return w.opts.VideoConcurrency
	}
	return w.opts.Concurrency
}

func (w *Worker) unadvertise(ctx context.Context) {
	pipe := w.svc.rdb.Pipeline()
	for _, m := range w.models {
		pipe.ZRem(ctx, rdb.KeyServed(m), w.id)
		pipe.HDel(ctx, rdb.KeySlots(m), w.id)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		w.log.Warn("withdraw heartbeat", "err", err)
	}
}

// reclaim marks the orphaned tasks of the worker's queues for the asynq
// recoverer and returns the queues that had some.
func (w *Worker) reclaim(ctx context.Context) []string {
	var queues []string
	// A live server's lease score is its last extension + 30 s.
	stale := time.Now().Add(30*time.Second - orphanAfter).Unix()
	live := nowMS() - HeartbeatTTL.Milliseconds()
	for _, m := range w.models {
		n, err := w.reclaimQueue(ctx, rdb.QueueName(m), stale, live)
		if err != nil {
			w.log.Warn("reclaim orphaned jobs", "queue", rdb.QueueName(m), "err", err)
			continue
		}
		if n > 0 {
			w.log.Warn("jobs of a stopped worker will be re-run", "model", m, "count", n)
			queues = append(queues, rdb.QueueName(m))
		}
	}
	return queues
}

// reclaimQueue expires the stale leases of one queue whose job's runner has
// no live heartbeat, each in its own step (see rdb.DB.ExpireLease).
func (w *Worker) reclaimQueue(ctx context.Context, queue string, stale, live int64) (int, error) {
	ids, err := w.svc.db.StaleLeases(ctx, queue, stale)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, id := range ids {
		if w.runnerAlive(ctx, id, live) && !w.lostAttempt(ctx, id) {
			continue
		}
		done, err := w.svc.db.ExpireLease(ctx, queue, id, stale)
		if err != nil {
			return n, err
		}
		if done {
			n++
		}
	}
	return n, nil
}

// lostAttempt reports whether job id's record names this worker as its
// runner while this worker is not running it: the worker's end of the
// attempt (its terminal transition, asynq's acknowledgement) was written
// to a Redis master that a failover then discarded, and the new master
// still holds the task as active with a lease nobody extends. Its runner
// is alive, so without this only asynq's own recoverer would re-queue it,
// one to two minutes later.
func (w *Worker) lostAttempt(ctx context.Context, id string) bool {
	if _, running := w.attempts.Load(id); running {
		return false
	}
	runner, err := w.svc.rdb.HGet(ctx, rdb.KeyJobPrefix+id, rdb.FieldRunner).Result()
	return err == nil && runner == w.id
}

// runnerAlive reports whether the worker recorded as running the job has
// beaten its heartbeat since live (unix ms).
func (w *Worker) runnerAlive(ctx context.Context, id string, live int64) bool {
	runner, err := w.svc.rdb.HGet(ctx, rdb.KeyJobPrefix+id, rdb.FieldRunner).Result()
	if err != nil || runner == "" {
		return false
	}
	beat, err := w.svc.rdb.ZScore(ctx, rdb.KeyWorkers, runner).Result()
	return err == nil && int64(beat) >= live
}

func (w *Worker) retryDelay(n int, err error, t *asynq.Task) time.Duration {
	if t.Type() == rdb.TaskWebhook {
		b := w.svc.opts.WebhookBackoff
		if n >= len(b) {
			n = len(b) - 1
		}
		return b[n]
	}
	if errors.Is(err, asynq.ErrLeaseExpired) {
		return 0
	}
	return w.svc.opts.RetryDelay(n + 1)
}

// errShutdown ends a job attempt that the worker's shutdown interrupted;
// asynq has pushed the task back to its queue.
var errShutdown = errors.New("jobs: worker shut down during the job")

func (w *Worker) handleJob(ctx context.Context, t *asynq.Task) error {
	id := string(t.Payload())
	r, err := w.svc.load(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return nil // expired or rolled back: nothing to do
	}
	if err != nil {
		return err
	}
	if terminal(r.Status) {
		// A re-run after the terminal transition (the worker stopped
		// before acknowledging): make sure the webhook went out.
		w.svc.enqueueWebhook(ctx, r)
		return nil
	}
	retried, _ := asynq.GetRetryCount(ctx)
	attempt := retried + 1
	log := w.log.With("job", id, "model", r.Model, "attempt", attempt)
	claimed, own, err := w.claim(ctx, id, attempt)
	if err != nil || !claimed {
		return err
	}
	w.attempts.Store(id, struct{}{})
	defer w.endAttempt(id)
	if r.Runner == "" { // the job's first attempt
		w.opts.Observer.QueueWait(r.Model, time.Since(r.CreatedAt))
	}
	start := time.Now()
	outcome, err := w.runJob(ctx, r, own, attempt, log)
	w.opts.Observer.JobFinished(r.Model, outcome, time.Since(start))
	return err
}

// runJob runs one claimed attempt of job r: its pipeline, storing its
// outputs and the terminal transition. It returns the attempt's outcome
// (Outcome*) and the error for asynq.
func (w *Worker) runJob(ctx context.Context, r *record, own int64, attempt int, log *slog.Logger) (string, error) {
	id := r.ID
	if msg := w.overBudget(r, own); msg != "" {
		return OutcomeFailed, w.finishError(ctx, r, msg, log)
	}
	pl, ok := w.reg.Get(r.Model)
	if !ok {
		return OutcomeFailed, w.finishError(ctx, r, fmt.Sprintf("model %s is not served by this worker", r.Model), log)
	}
	inputs, err := r.typedInputs()
	if err != nil {
		return OutcomeFailed, w.finishError(ctx, r, "internal error: "+err.Error(), log)
	}
	limit := w.svc.timeout(r.Model)
	cctx, stopJob := context.WithCancelCause(ctx)
	defer stopJob(nil)
	rctx, cancel := context.WithTimeout(cctx, limit)
	defer cancel()
	unwatch := w.watchCancel(rctx, id, stopJob)
	defer unwatch()
	start := time.Now()
	stages := &stageClock{obs: w.opts.Observer, model: r.Model}
	defer stages.enter("")
	req := &pipelines.Request{
		JobID: id, Model: r.Model, Owner: r.Owner, Inputs: inputs,
		Images: inputLoader{store: w.svc.store, jobID: id, next: w.loader}, Studio: w.svc.Studio(), Progress: w.progress(rctx, id, attempt, stopJob, stages),
	}
	res, err := runPipeline(rctx, pl, req)
	if errors.Is(context.Cause(cctx), errCanceled) {
		return OutcomeCanceled, w.canceled(ctx, r, log)
	}
	var outs []string
	var info []OutputInfo
	if err == nil {
		stages.enter(stageStore)
		outs, info, err = w.svc.storeOutputs(rctx, id, res)
	}
	if err != nil {
		return w.attemptFailed(ctx, rctx, r, attempt, limit, err, log)
	}
	done, err := w.svc.succeed(ctx, r, outs, info)
	if err != nil {
		return OutcomeFailed, err
	}
	if !done {
		return OutcomeCanceled, w.canceled(ctx, r, log) // it ended meanwhile: drop the outputs of a cancelled job
	}
	took := time.Since(start)
	log.Info("job succeeded", "outputs", len(outs), "took", took.Round(time.Millisecond))
	w.svc.recordDuration(ctx, r.Model, took)
	r.Status = SuccessStatus(r.Model)
	w.svc.enqueueWebhook(ctx, r)
	return OutcomeSucceeded, nil
}

// attemptFailed ends an attempt whose pipeline or output storage failed
// with err: back to the queue (shutdown, lost lease, transient failure
// within the retry budget) or the job fails. rctx is the job's context.
func (w *Worker) attemptFailed(ctx, rctx context.Context, r *record, attempt int, limit time.Duration, err error, log *slog.Logger) (string, error) {
	switch {
	case w.base.Err() != nil:
		log.Warn("job interrupted by shutdown; it goes back to the queue")
		return OutcomeInterrupted, errShutdown
	case ctx.Err() != nil:
		// asynq cancelled the attempt (lease lost): another worker
		// owns the job now.
		return OutcomeInterrupted, ctx.Err()
	case errors.Is(rctx.Err(), context.DeadlineExceeded):
		return OutcomeTimeout, w.finishError(ctx, r, fmt.Sprintf("the job took longer than %s and was stopped", limit), log)
	case pipelines.IsTransient(err) && w.retryTransient(ctx, r.ID):
		log.Warn("transient failure; the job will be retried", "err", err)
		_, _ = w.svc.setProgress(ctx, r.ID, Progress{Stage: "retrying", Detail: errorMessage(err), Attempt: attempt})
		return OutcomeRetry, err
	}
	return OutcomeFailed, w.finishError(ctx, r, errorMessage(err), log)
}

// stageStore is the stage label of storing a job's outputs.
const stageStore = "store_outputs"

// stageClock times the stages a job's pipeline reports through its
// progress and tells the observer when each ends.
type stageClock struct {
	obs   Observer
	model string
	mu    sync.Mutex
	stage string
	since time.Time
}

// enter starts stage ("" ends the current one); a repeated stage goes on.
func (c *stageClock) enter(stage string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if stage == c.stage {
		return
	}
	now := time.Now()
	if c.stage != "" {
		c.obs.StageFinished(c.model, c.stage, now.Sub(c.since))
	}
	c.stage, c.since = stage, now
}

// errCanceled is the cause of a job context its owner's cancel ended.
var errCanceled = errors.New("jobs: the job was cancelled")

// watchCancel ends the job's context with errCanceled when the job is
// cancelled: on its cancel event, or at once when it was cancelled before
// the watch began. The returned func stops watching.
func (w *Worker) watchCancel(ctx context.Context, id string, stop context.CancelCauseFunc) func() {
	unwatch, err := w.svc.events.watch(ctx, id, func(p string) {
		if p == StatusCanceled {
			stop(errCanceled)
		}
	})
	if err != nil {
		// The progress checkpoints still see the cancel.
		w.log.Warn("watch job events", "job", id, "err", err)
		unwatch = func() {}
	}
	if st, err := w.svc.rdb.HGet(ctx, rdb.KeyJob(id), rdb.FieldStatus).Result(); err == nil && st == StatusCanceled {
		stop(errCanceled)
	}
	return unwatch
}

// canceled ends an attempt whose job was cancelled (or otherwise ended
// while it ran): its outputs, if any were stored, are deleted, and the
// task is acknowledged.
func (w *Worker) canceled(ctx context.Context, r *record, log *slog.Logger) error {
	if st, err := w.svc.rdb.HGet(ctx, rdb.KeyJob(r.ID), rdb.FieldStatus).Result(); err == nil && st == StatusCanceled {
		if err := w.svc.store.DeletePrefix(ctx, r.ID+"/"); err != nil {
			log.Warn("delete the outputs of a cancelled job", "err", err)
		}
		log.Info("job cancelled while running; stopped")
	}
	return nil
}

// claim starts an attempt on job id (see rdb.DB.Claim); own is the number
// of worker crashes that were the job's own.
func (w *Worker) claim(ctx context.Context, id string, attempt int) (claimed bool, own int64, err error) {
	p0, _ := json.Marshal(Progress{Stage: "running", Attempt: attempt})
	return w.svc.db.Claim(ctx, rdb.Claim{JobID: id, Worker: w.id, Attempt: attempt, Progress: p0, RunningTTL: runningTTL})
}

// endAttempt records that this worker's attempt on job id is over (so a
// later claim does not count it as a crash).
func (w *Worker) endAttempt(id string) {
	w.attempts.Delete(id)
	ctx, cancel := context.WithTimeout(context.Background(), HeartbeatInterval)
	defer cancel()
	if err := w.svc.db.EndAttempt(ctx, id, w.id); err != nil {
		w.log.Warn("record the end of an attempt", "job", id, "err", err)
	}
}

// overBudget is the failure message of a job that must not run again: it
// crashed its worker MaxCrashes times on its own, or it is older than its
// maximum age; "" otherwise.
func (w *Worker) overBudget(r *record, ownCrashes int64) string {
	o := w.svc.opts
	if ownCrashes >= int64(o.MaxCrashes) {
		return fmt.Sprintf("the job stopped the worker running it %d times (a worker process died while running only this job); it is not run again, credits refunded", ownCrashes)
	}
	if age := w.svc.maxAge(r.Model); time.Since(r.CreatedAt) > age {
		return fmt.Sprintf("the job did not finish within %s of its submission (attempts were lost to worker restarts); credits refunded", age)
	}
	return ""
}

// retryTransient counts a transient failure of job id and reports whether
// the job's retry budget (Options.MaxRetry) allows another attempt.
func (w *Worker) retryTransient(ctx context.Context, id string) bool {
	n, err := w.svc.rdb.HIncrBy(ctx, rdb.KeyJob(id), rdb.FieldFailures, 1).Result()
	return err == nil && n <= int64(w.svc.opts.MaxRetry)
}

func (w *Worker) finishError(ctx context.Context, r *record, msg string, log *slog.Logger) error {
	done, err := w.svc.fail(ctx, r, msg)
	if err != nil {
		return err
	}
	if done {
		log.Info("job failed", "error", msg)
		r.Status = StatusError
		w.svc.enqueueWebhook(ctx, r)
	}
	return fmt.Errorf("%s: %w", msg, asynq.SkipRetry)
}

// errorMessage is the job's error text for a pipeline error: the message of
// a *pipelines.Error, else the error prefixed "internal error: ".
func errorMessage(err error) string {
	var pe *pipelines.Error
	if errors.As(err, &pe) {
		return pe.Msg
	}
	return "internal error: " + err.Error()
}

// runPipeline runs p, turning a panic into a permanent job error.
func runPipeline(ctx context.Context, p pipelines.Pipeline, req *pipelines.Request) (res *pipelines.Result, err error) {
	defer func() {
		if v := recover(); v != nil {
			slog.Error("pipeline panic", "model", req.Model, "job", req.JobID, "panic", v, "stack", string(debug.Stack()))
			res, err = nil, pipelines.Failf("internal error: the %s pipeline crashed", req.Model)
		}
	}()
	res, err = p.Run(ctx, req)
	if err == nil && (res == nil || len(res.Outputs) == 0) {
		err = pipelines.Failf("internal error: the %s pipeline returned no output", req.Model)
	}
	return res, err
}

// progress returns the job's ProgressFunc: it writes at most every 200 ms,
// and always on a new stage or at the end. A write that finds the job
// ended (cancelled) stops the job: progress reports are its checkpoints.
func (w *Worker) progress(ctx context.Context, id string, attempt int, stop context.CancelCauseFunc, stages *stageClock) pipelines.ProgressFunc {
	var mu sync.Mutex
	var last time.Time
	var lastStage string
	return func(stage string, fraction float64, detail string) {
		stages.enter(stage)
		mu.Lock()
		defer mu.Unlock()
		if fraction < 0 {
			fraction = 0
		} else if fraction > 1 {
			fraction = 1
		}
		if stage == lastStage && fraction < 1 && time.Since(last) < 200*time.Millisecond {
			return
		}
		last, lastStage = time.Now(), stage
		ended, err := w.svc.setProgress(ctx, id, Progress{Stage: stage, Fraction: fraction, Detail: detail, Attempt: attempt})
		switch {
		case ended:
			stop(errCanceled)
		case err != nil && ctx.Err() == nil:
			w.log.Debug("progress", "job", id, "err", err)
		}
	}
}

// asynqLogger sends asynq's logs to slog.
type asynqLogger struct{ l *slog.Logger }

func (a asynqLogger) Debug(args ...any) { a.l.Debug(fmt.Sprint(args...), "from", "asynq") }
func (a asynqLogger) Info(args ...any)  { a.l.Info(fmt.Sprint(args...), "from", "asynq") }
func (a asynqLogger) Warn(args ...any) {
	msg := fmt.Sprint(args...)
	a.l.Log(context.Background(), asynqWarnLevel(msg), msg, "from", "asynq")
}
func (a asynqLogger) Error(args ...any) { a.l.Error(fmt.Sprint(args...), "from", "asynq") }
func (a asynqLogger) Fatal(args ...any) {
	a.l.Error(fmt.Sprint(args...), "from", "asynq")
	os.Exit(1)
}
