package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/hibiken/asynq"

	"fashiond/api"
	"fashiond/config"
	"fashiond/engine"
	"fashiond/fetch"
	"fashiond/inference"
	"fashiond/jobs"
	"fashiond/metrics"
	"fashiond/redisserver"
	"fashiond/storage"
)

// stack is what a subcommand opened, closed in reverse order. It is safe
// for concurrent use (a second signal closes the child processes while the
// main goroutine may still be starting), and Close closes each item once.
type stack struct {
	mu sync.Mutex
	cs []io.Closer
}

func (s *stack) push(c io.Closer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cs = append(s.cs, c)
}

// Close closes everything pushed so far, last first, and empties the stack.
func (s *stack) Close() error {
	s.mu.Lock()
	cs := s.cs
	s.cs = nil
	s.mu.Unlock()
	var errs []error
	for i := len(cs) - 1; i >= 0; i-- {
		if err := cs[i].Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// redisURL returns the Redis to use: FASHIOND_REDIS_URL, else (when private
// is true) a supervised redis-server with AOF in DATA_DIR/redis, else an
// in-process miniredis (non-persistent, logged loudly).
func redisURL(ctx context.Context, cfg config.Config, log *slog.Logger, private bool, children *stack) (string, error) {
	if cfg.RedisURL != "" {
		return cfg.RedisURL, nil
	}
	if !private {
		return "", errors.New("FASHIOND_REDIS_URL is required for a split deployment (api/worker); `fashiond serve` runs its own Redis")
	}
	dir := filepath.Join(cfg.DataDir, "redis")
	if u, ok := redisserver.Running(dir); ok {
		log.Info("using the private redis-server already running for this data directory", "dir", dir)
		return u, nil
	}
	if redisserver.Available("") {
		srv, err := redisserver.Start(ctx, redisserver.Options{Dir: dir, MaxMemory: cfg.RedisMaxMemory, Log: log})
		if err != nil {
			return "", err
		}
		children.push(srv)
		return srv.URL(), nil
	}
	m := miniredis.NewMiniRedis()
	if err := m.Start(); err != nil {
		return "", fmt.Errorf("embedded redis: %w", err)
	}
	children.push(closerFunc(func() error { m.Close(); return nil }))
	log.Warn("redis-server is not installed: using an IN-PROCESS, NON-PERSISTENT Redis (miniredis). Keys, credits and queued jobs are LOST on restart. Install redis-server (make setup) or set FASHIOND_REDIS_URL.")
	return "redis://" + m.Addr(), nil
}

// openStore opens the blob store of FASHIOND_STORAGE: DATA_DIR/blobs, or
// an S3 bucket (checked at start: a wrong endpoint, bucket or key stops
// the process here). The log names the bucket and endpoint, never a key.
func openStore(ctx context.Context, cfg config.Config, log *slog.Logger) (storage.Served, error) {
	if !cfg.IsS3() {
		return storage.NewLocal(filepath.Join(cfg.DataDir, "blobs"), cfg.CDNURL)
	}
	bucket, prefix, err := storage.ParseS3URL(cfg.Storage)
	if err != nil {
		return nil, fmt.Errorf("FASHIOND_STORAGE: %w", err)
	}
	lookup := map[string]storage.Lookup{"auto": storage.LookupAuto, "on": storage.LookupPath, "off": storage.LookupVirtual}[cfg.S3PathStyle]
	st, err := storage.NewS3(ctx, storage.S3Options{
		Bucket: bucket, Prefix: prefix, Endpoint: cfg.S3Endpoint, Region: cfg.S3Region,
		AccessKey: cfg.S3AccessKey, SecretKey: string(cfg.S3SecretKey), SessionToken: string(cfg.S3SessionToken),
		Lookup: lookup, BaseURL: cfg.CDNURL, Presign: cfg.S3Presign,
	})
	if err != nil {
		return nil, err
	}
	urls := "cdn_url " + cfg.CDNURL
	if cfg.S3Presign > 0 {
		urls = "presigned for " + cfg.S3Presign.String()
	}
	endpoint := cfg.S3Endpoint
	if endpoint == "" {
		endpoint = storage.DefaultS3Endpoint
	}
	log.Info("blob store: S3", "bucket", bucket, "prefix", prefix, "endpoint", endpoint, "result_urls", urls)
	return st, nil
}

func fetchPolicy(cfg config.Config) (fetch.Policy, error) {
	p := fetch.DefaultPolicy()
	allow, err := fetch.ParseAllow(cfg.FetchAllow)
	if err != nil {
		return p, fmt.Errorf("FASHIOND_FETCH_ALLOW: %w", err)
	}
	p.Allow = allow
	return p, nil
}

// openService opens the job service; a private Redis it starts is pushed on
// children (closed after everything on cl), the service on cl.
func openService(ctx context.Context, cfg config.Config, log *slog.Logger, private bool, cl, children *stack) (*jobs.Service, storage.Served, fetch.Policy, error) {
	pol, err := fetchPolicy(cfg)
	if err != nil {
		return nil, nil, pol, err
	}
	url, err := redisURL(ctx, cfg, log, private, children)
	if err != nil {
		return nil, nil, pol, err
	}
	store, err := openStore(ctx, cfg, log)
	if err != nil {
		return nil, nil, pol, err
	}
	hookPol := pol
	hookPol.TotalTimeout = jobs.WebhookTimeout
	svc, err := jobs.Open(ctx, jobs.Options{
		RedisURL: url, Store: store, Retention: cfg.Retention,
		WebhookSecret: cfg.WebhookSecret, WebhookClient: fetch.NewClient(hookPol), Log: log,
		InputQuota: cfg.InputQuota, MaxCrashes: cfg.MaxCrashes, MaxJobAge: cfg.MaxJobAge,
		RateLimit: cfg.RateLimit, RateBurst: cfg.RateBurst, MaxInFlight: cfg.MaxInFlight,
	})
	if err != nil {
		return nil, nil, pol, err
	}
	cl.push(svc)
	if err := provisionKeys(ctx, svc, cfg.APIKeys, log); err != nil {
		return nil, nil, pol, err
	}
	return svc, store, pol, nil
}

// provisionKeys applies FASHIOND_API_KEYS (key:credits,...). A key that
// exists already keeps its balance, so a restart never re-grants credits.
func provisionKeys(ctx context.Context, svc *jobs.Service, spec string, log *slog.Logger) error {
	grants, err := config.ParseAPIKeys(spec)
	if err != nil {
		return err
	}
	for i, g := range grants {
		created, err := svc.ProvisionKey(ctx, g.Key, g.Credits)
		if err != nil {
			return err
		}
		// Logs carry no key material, not even a hash prefix.
		log.Info("api key provisioned", "entry", i+1, "new", created)
	}
	return nil
}

func startWorker(ctx context.Context, cfg config.Config, log *slog.Logger, svc *jobs.Service, pol fetch.Policy, m *metrics.Metrics, device string, cl *stack) (*jobs.Worker, error) {
	reg, closer, err := engine.NewObserved(ctx, cfg, log, engine.Observers{Calls: m, UNet: m})
	if err != nil {
		return nil, err
	}
	cl.push(closer)
	var models []string
	for _, m := range strings.Split(cfg.Queues, ",") {
		if m = strings.TrimSpace(m); m != "" {
			models = append(models, m)
		}
	}
	w, err := jobs.NewWorker(svc, reg, fetch.NewLoader(pol), jobs.WorkerOptions{
		Concurrency: cfg.Concurrency, Models: models, Log: log, ShutdownTimeout: cfg.ShutdownGrace, Observer: m, Device: device,
	})
	if err != nil {
		return nil, err
	}
	if err := w.Start(); err != nil { // logs "worker started"
		return nil, err
	}
	cl.push(closerFunc(func() error { w.Shutdown(); return nil }))
	return w, nil
}

// openDevice opens the ONNX Runtime environment for the worker's lifetime
// (pushed on cl, so the CUDA provider is registered once) and resolves where
// its models run. With FASHIOND_DEVICE=cuda and no usable CUDA it returns
// the one-line reason, before Redis or the models are touched.
func openDevice(ctx context.Context, cfg config.Config, log *slog.Logger, cl *stack) (inference.Placement, error) {
	rt, err := inference.Open(ctx, runtimeConfig(cfg), log)
	if err != nil {
		return inference.Placement{}, err
	}
	p, err := rt.Placement("auto")
	if err != nil {
		rt.Close()
		return p, err
	}
	cl.push(rt)
	if p.Device == "cuda" {
		log.Info("inference device", "device", p.String(), "route", p.Route, "library", p.Library, "onnxruntime", rt.Version())
	} else {
		log.Info("inference device", "device", "cpu", "reason", p.Reason, "onnxruntime", rt.Version())
	}
	return p, nil
}

// runtimeConfig is the ONNX Runtime configuration of cfg.
func runtimeConfig(cfg config.Config) inference.Config {
	return inference.Config{
		LibPath: cfg.ORTLib, IntraOpThreads: cfg.IntraOpThreads, Device: cfg.Device,
		CUDADeviceID: cfg.CUDADeviceID, CUDAMemLimit: cfg.CUDAMemLimit, CUDNNConvSearch: cfg.CUDNNConvAlgo,
		CUDARoute: cfg.CUDARoute, CUDAArenaExtend: cfg.CUDAArena,
	}
}

// httpShutdownTimeout bounds how long in-flight HTTP requests may finish
// once a shutdown begins.
const httpShutdownTimeout = 10 * time.Second

// startHTTP listens on cfg.Addr and serves the API in the background; errc
// receives Serve's error. The returned server is stopped by drain.
func startHTTP(cfg config.Config, log *slog.Logger, svc *jobs.Service, store storage.Served, pol fetch.Policy, m *metrics.Metrics) (*http.Server, <-chan error, error) {
	opts := api.Options{Backend: m.Backend(svc), CDN: http.StripPrefix("/cdn", store.Handler()), MaxBodyBytes: cfg.MaxBodyBytes,
		FetchPolicy: pol, Log: log, Version: version, Limits: limits(cfg)}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, nil, err
	}
	srv := api.NewServer(opts)
	srv.Handler = withAdmin(withMetrics(m.Instrument(srv.Handler), m, cfg.MetricsAddr == ""), string(cfg.AdminToken), svc)
	ln = api.LimitListener(ln, opts.Limits)
	log.Info("listening", "addr", ln.Addr().String(), "public_url", cfg.PublicURL, "cdn_url", cfg.CDNURL)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	return srv, errc, nil
}

// withMetrics serves GET /metrics before h when onAPI (no separate
// FASHIOND_METRICS_ADDR listener).
func withMetrics(h http.Handler, m *metrics.Metrics, onAPI bool) http.Handler {
	if !onAPI {
		return h
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	mux.Handle("/", h)
	return mux
}

// startMetrics serves /metrics on FASHIOND_METRICS_ADDR (nil when unset).
func startMetrics(cfg config.Config, log *slog.Logger, m *metrics.Metrics) (*http.Server, error) {
	if cfg.MetricsAddr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", cfg.MetricsAddr)
	if err != nil {
		return nil, fmt.Errorf("FASHIOND_METRICS_ADDR: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: cfg.ReadHeaderTimeout}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics listener", "err", err)
		}
	}()
	log.Info("metrics listening", "addr", ln.Addr().String())
	return srv, nil
}

// queueDepth reads the jobs waiting in every model's queue (pending,
// scheduled and retrying) with asynq's inspector.
func queueDepth(svc *jobs.Service) metrics.QueueDepthFunc {
	insp := asynq.NewInspectorFromRedisClient(svc.Redis())
	return func(ctx context.Context) (map[string]int, error) {
		ms, err := svc.Models(ctx)
		if err != nil {
			return nil, err
		}
		existing, err := insp.Queues()
		if err != nil {
			return nil, err
		}
		out := make(map[string]int, len(ms))
		for _, mi := range ms {
			out[mi.Name] = 0 // a queue asynq has not created yet is empty
			if !slices.Contains(existing, jobs.QueueName(mi.Name)) {
				continue
			}
			q, err := insp.GetQueueInfo(jobs.QueueName(mi.Name))
			if err != nil {
				return nil, err
			}
			out[mi.Name] = q.Pending + q.Scheduled + q.Retry
		}
		return out, nil
	}
}

// limits are the HTTP server's connection and body limits from cfg.
func limits(cfg config.Config) api.Limits {
	return api.Limits{
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		BodyBaseTimeout:   cfg.BodyTimeout,
		MinBodyRate:       cfg.MinBodyRate,
		IdleTimeout:       cfg.IdleTimeout,
		MaxConns:          cfg.MaxConns,
		MaxConnsPerIP:     cfg.MaxConnsPerIP,
		MaxLargeBodies:    cfg.MaxLargeBodies,
	}
}

// signals cancels the returned context at the first SIGINT or SIGTERM (a
// graceful stop: intake ends, running jobs finish within the grace period,
// child processes stop last) and calls force at the second one. stop
// releases the signals.
func signals(log *slog.Logger, force func()) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-ch:
			log.Info("signal received: stopping gracefully (send it again to stop at once)", "signal", sig.String())
			cancel()
		case <-done:
			return
		}
		select {
		case sig := <-ch:
			log.Warn("second signal: stopping at once; running jobs are re-queued when a worker starts", "signal", sig.String())
			force()
		case <-done:
		}
	}()
	return ctx, func() { signal.Stop(ch); close(done); cancel() }
}

// exitForced is the exit status after a second SIGINT/SIGTERM (128+SIGINT).
const exitForced = 130

// role is what one of serve, api and worker runs in its process.
type role struct {
	name, summary string
	private       bool // may start a private redis-server
	api, worker   bool
}

var (
	roleServe = role{"serve", "Runs the API, a worker for every model it can serve and the local blob store in one\nprocess. Redis: FASHIOND_REDIS_URL, else a private redis-server with AOF in DATA_DIR/redis.", true, true, true}
	roleAPI   = role{"api", "Runs the HTTP API only. Needs FASHIOND_REDIS_URL and the workers' blob store\n(FASHIOND_STORAGE=s3://bucket, or a shared FASHIOND_DATA_DIR/blobs).", false, true, false}
	roleWork  = role{"worker", "Runs a job worker only: consumes the queues of the models it can serve\n(FASHIOND_QUEUES to pick a subset). Needs FASHIOND_REDIS_URL and the shared blob store\n(FASHIOND_STORAGE=s3://bucket, or a shared FASHIOND_DATA_DIR/blobs).", false, false, true}
)

func cmdServe(args []string) error  { return runRole(roleServe, args) }
func cmdAPI(args []string) error    { return runRole(roleAPI, args) }
func cmdWorker(args []string) error { return runRole(roleWork, args) }

// runRole opens the job service (and Redis), starts a worker and/or the HTTP
// API and runs until SIGINT/SIGTERM; then it stops taking requests and jobs,
// lets running jobs finish within FASHIOND_SHUTDOWN_GRACE (the rest are
// re-queued untouched) and closes everything in reverse order, the private
// redis-server last.
func runRole(r role, args []string) error {
	cfgp, _, err := parseConfig(r.name, r.summary, args, nil)
	if err != nil {
		return err
	}
	cfg := *cfgp
	log := newLogger(cfg)
	var cl, children stack
	ctx, stop := signals(log, func() {
		children.Close()
		os.Exit(exitForced)
	})
	defer stop()
	defer func() {
		// Child processes last: the worker and the service still use Redis.
		if err := errors.Join(cl.Close(), children.Close()); err != nil {
			log.Error("shutdown", "err", err)
		}
	}()
	var place inference.Placement
	if r.worker {
		// FASHIOND_DEVICE=cuda without CUDA stops here, in one line.
		if place, err = openDevice(ctx, cfg, log, &cl); err != nil {
			return err
		}
		// A fresh data directory gets its models before anything starts.
		if err := provisionModels(ctx, cfg, log); err != nil {
			return err
		}
	}
	svc, store, pol, err := openService(ctx, cfg, log, r.private, &cl, &children)
	if err != nil {
		return err
	}
	m := metrics.New()
	var w *jobs.Worker
	if r.worker {
		m.SetInferenceDevice(place.Device, place.Route, place.Library, place.GPU)
		if w, err = startWorker(ctx, cfg, log, svc, pol, m, place.Public(), &cl); err != nil {
			return err
		}
	}
	m.WatchQueues(queueDepth(svc))
	msrv, err := startMetrics(cfg, log, m)
	if err != nil {
		return err
	}
	if msrv != nil {
		cl.push(msrv)
	}
	var srv *http.Server
	var errc <-chan error
	if r.api {
		if srv, errc, err = startHTTP(cfg, log, svc, store, pol, m); err != nil {
			return err
		}
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	return drain(log, cfg, srv, w)
}

// drain stops intake at once on both sides (the HTTP server stops accepting,
// the worker stops dequeuing and un-advertises its models), then waits for
// in-flight requests and running jobs.
func drain(log *slog.Logger, cfg config.Config, srv *http.Server, w *jobs.Worker) error {
	log.Info("shutting down: no new requests or jobs; running jobs finish", "grace", cfg.ShutdownGrace.String())
	var wg sync.WaitGroup
	var httpErr error
	if srv != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sctx, cancel := context.WithTimeout(context.Background(), httpShutdownTimeout)
			defer cancel()
			httpErr = srv.Shutdown(sctx)
		}()
	}
	if w != nil {
		wg.Add(1)
		go func() { defer wg.Done(); w.Shutdown() }()
	}
	wg.Wait()
	return httpErr
}
