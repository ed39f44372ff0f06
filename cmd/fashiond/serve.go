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
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/alicebob/miniredis/v2"

	"fashiond/api"
	"fashiond/config"
	"fashiond/fetch"
	"fashiond/jobs"
	"fashiond/pipelines/all"
	"fashiond/redisserver"
	"fashiond/storage"
)

// stack is what a subcommand opened, closed in reverse order.
type stack []io.Closer

func (s *stack) push(c io.Closer) { *s = append(*s, c) }
func (s stack) Close() error {
	var errs []error
	for i := len(s) - 1; i >= 0; i-- {
		if err := s[i].Close(); err != nil {
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
func redisURL(ctx context.Context, cfg config.Config, log *slog.Logger, private bool, cl *stack) (string, error) {
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
		cl.push(srv)
		return srv.URL(), nil
	}
	m := miniredis.NewMiniRedis()
	if err := m.Start(); err != nil {
		return "", fmt.Errorf("embedded redis: %w", err)
	}
	cl.push(closerFunc(func() error { m.Close(); return nil }))
	log.Warn("redis-server is not installed: using an IN-PROCESS, NON-PERSISTENT Redis (miniredis). Keys, credits and queued jobs are LOST on restart. Install redis-server (make setup) or set FASHIOND_REDIS_URL.")
	return "redis://" + m.Addr(), nil
}

func openStore(cfg config.Config) (*storage.Local, error) {
	return storage.NewLocal(filepath.Join(cfg.DataDir, "blobs"), cfg.CDNURL)
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

func openService(ctx context.Context, cfg config.Config, log *slog.Logger, private bool, cl *stack) (*jobs.Service, *storage.Local, fetch.Policy, error) {
	pol, err := fetchPolicy(cfg)
	if err != nil {
		return nil, nil, pol, err
	}
	url, err := redisURL(ctx, cfg, log, private, cl)
	if err != nil {
		return nil, nil, pol, err
	}
	store, err := openStore(cfg)
	if err != nil {
		return nil, nil, pol, err
	}
	hookPol := pol
	hookPol.TotalTimeout = jobs.WebhookTimeout
	svc, err := jobs.Open(ctx, jobs.Options{
		RedisURL: url, Store: store, Retention: cfg.Retention,
		WebhookSecret: cfg.WebhookSecret, WebhookClient: fetch.NewClient(hookPol), Log: log,
		InputQuota: cfg.InputQuota, MaxCrashes: cfg.MaxCrashes, MaxJobAge: cfg.MaxJobAge,
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
	for i, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		k, c, ok := strings.Cut(item, ":")
		n, err := strconv.ParseInt(c, 10, 64)
		if !ok || k == "" || err != nil || n < 0 {
			return fmt.Errorf("FASHIOND_API_KEYS: entry %d must be key:credits with credits ≥ 0", strings.Count(spec[:strings.Index(spec, item)], ",")+1)
		}
		created, err := svc.ProvisionKey(ctx, k, n)
		if err != nil {
			return err
		}
		// Logs carry no key material, not even a hash prefix.
		log.Info("api key provisioned", "entry", i+1, "new", created)
	}
	return nil
}

func startWorker(ctx context.Context, cfg config.Config, log *slog.Logger, svc *jobs.Service, pol fetch.Policy, cl *stack) (*jobs.Worker, error) {
	reg, closer, err := all.New(ctx, cfg, log)
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
	w, err := jobs.NewWorker(svc, reg, fetch.NewLoader(pol), jobs.WorkerOptions{Concurrency: cfg.Concurrency, Models: models, Log: log})
	if err != nil {
		return nil, err
	}
	if err := w.Start(); err != nil {
		return nil, err
	}
	cl.push(closerFunc(func() error { w.Shutdown(); return nil }))
	log.Info("worker started", "models", w.Models(), "concurrency", cfg.Concurrency)
	return w, nil
}

func serveHTTP(ctx context.Context, cfg config.Config, log *slog.Logger, svc *jobs.Service, store *storage.Local, pol fetch.Policy) error {
	opts := api.Options{Backend: svc, CDN: http.StripPrefix("/cdn", store.Handler()), MaxBodyBytes: cfg.MaxBodyBytes,
		FetchPolicy: pol, Log: log, Version: version, Limits: limits(cfg)}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	srv := api.NewServer(opts)
	ln = api.LimitListener(ln, opts.Limits)
	log.Info("listening", "addr", ln.Addr().String(), "public_url", cfg.PublicURL, "cdn_url", cfg.CDNURL)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down: no new requests; running jobs finish")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}

// limits are the HTTP server's connection and body limits from cfg.
func limits(cfg config.Config) api.Limits {
	return api.Limits{
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		MinBodyRate:       cfg.MinBodyRate,
		IdleTimeout:       cfg.IdleTimeout,
		MaxConns:          cfg.MaxConns,
		MaxConnsPerIP:     cfg.MaxConnsPerIP,
		MaxLargeBodies:    cfg.MaxLargeBodies,
	}
}

func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// role is what one of serve, api and worker runs in its process.
type role struct {
	name, summary string
	private       bool // may start a private redis-server
	api, worker   bool
}

var (
	roleServe = role{"serve", "Runs the API, a worker for every model it can serve and the local blob store in one\nprocess. Redis: FASHIOND_REDIS_URL, else a private redis-server with AOF in DATA_DIR/redis.", true, true, true}
	roleAPI   = role{"api", "Runs the HTTP API only. Needs FASHIOND_REDIS_URL and a blob directory\n(FASHIOND_DATA_DIR/blobs) shared with the workers.", false, true, false}
	roleWork  = role{"worker", "Runs a job worker only: consumes the queues of the models it can serve\n(FASHIOND_QUEUES to pick a subset). Needs FASHIOND_REDIS_URL and the shared blob directory.", false, false, true}
)

func cmdServe(args []string) error  { return runRole(roleServe, args) }
func cmdAPI(args []string) error    { return runRole(roleAPI, args) }
func cmdWorker(args []string) error { return runRole(roleWork, args) }

// runRole opens the job service (and Redis), starts a worker and/or the HTTP
// API, and on SIGINT/SIGTERM stops taking work, lets running jobs finish and
// closes everything in reverse order.
func runRole(r role, args []string) error {
	cfg, _, err := parseConfig(r.name, r.summary, args, nil)
	if err != nil {
		return err
	}
	log := newLogger(cfg)
	ctx, stop := signalContext()
	defer stop()
	var cl stack
	defer func() {
		if err := cl.Close(); err != nil {
			log.Error("shutdown", "err", err)
		}
	}()
	svc, store, pol, err := openService(ctx, cfg, log, r.private, &cl)
	if err != nil {
		return err
	}
	if r.worker {
		if _, err := startWorker(ctx, cfg, log, svc, pol, &cl); err != nil {
			return err
		}
	}
	if r.api {
		return serveHTTP(ctx, cfg, log, svc, store, pol)
	}
	<-ctx.Done()
	log.Info("worker stopping: running jobs finish")
	return nil
}
