package jobs

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"fashiond/fetch"
	"fashiond/jobs/internal/rdb"
	"fashiond/redisconn"
	"fashiond/spec"
	"fashiond/storage"
)

// Defaults of Options.
const (
	DefaultRetention       = 72 * time.Hour
	DefaultImageTimeout    = 5 * time.Minute
	DefaultVideoTimeout    = 15 * time.Minute
	DefaultMaxRetry        = 2
	DefaultMaxCrashes      = 3
	DefaultMaxJobAge       = time.Hour
	DefaultJanitorInterval = 30 * time.Second
	DefaultUnservedTimeout = 10 * time.Minute
	// WebhookTimeout bounds one webhook delivery attempt (the spec's 15 s).
	WebhookTimeout = 15 * time.Second
)

// Liveness of worker heartbeats: a worker beats every HeartbeatInterval and
// counts as live while its last beat is younger than HeartbeatTTL (five
// missed beats, so a worker whose CPU is saturated stays live); after a
// failed beat (Redis away) it retries every HeartbeatRetry, so its models
// are served again right after Redis returns.
const (
	HeartbeatInterval = 2 * time.Second
	HeartbeatTTL      = 10 * time.Second
	HeartbeatRetry    = 100 * time.Millisecond
)

// DefaultWebhookBackoff is the delay before webhook retry n (1-based; the
// last value repeats): 12 retries over about 23 hours.
var DefaultWebhookBackoff = []time.Duration{
	5 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 4 * time.Hour, 4 * time.Hour, 4 * time.Hour, 4 * time.Hour, 4 * time.Hour,
}

// Options configures Open.
type Options struct {
	// RedisURL is any URL redisconn.Parse accepts: "redis://[:password@]
	// host:port[/db]", rediss://, unix://, a bare "host:port",
	// "redis+sentinel://host:port,…/mastername[?wait_replicas=N…]" or
	// "redis+cluster://host:port,…[?wait_replicas=N…]" (a Redis Cluster:
	// the service's keys share one slot, asynq's queues spread by their
	// own hash tags). The one client made from it serves everything:
	// asynq's client, server and inspector share it. Ignored when Redis is
	// set.
	RedisURL string
	// Redis is an existing client to use instead of RedisURL; Close does
	// not close it.
	Redis redis.UniversalClient
	// Store holds outputs and studio images (required).
	Store storage.Store
	// Retention is how long jobs and their outputs live (DefaultRetention).
	Retention time.Duration
	// WebhookSecret is the Standard Webhooks secret "whsec_<base64>". Empty:
	// the secret kept in Redis, generated at the first start.
	WebhookSecret string
	// WebhookClient posts webhooks. Nil: fetch.NewClient with the default
	// address policy (no private addresses) and a 15 s timeout. Pass
	// fetch.NewClient(policy) with the service's FASHIOND_FETCH_ALLOW.
	WebhookClient *http.Client
	// WebhookBackoff is the retry schedule (DefaultWebhookBackoff); its
	// length is the number of retries.
	WebhookBackoff []time.Duration
	// Timeouts overrides the per-model run time limit (DefaultImageTimeout,
	// DefaultVideoTimeout for image-to-video).
	Timeouts map[string]time.Duration
	// MaxRetry is the retry budget of a job for transient failures
	// (DefaultMaxRetry). Negative: none. Attempts lost to a worker crash or
	// shutdown do not count (see MaxCrashes and MaxJobAge).
	MaxRetry int
	// MaxCrashes fails a job (with refund) that was the only job of a
	// worker that died while running it this many times: a poison input
	// (DefaultMaxCrashes).
	MaxCrashes int
	// InputQuota is the most bytes of input images one API key may have
	// stored at once, in its unfinished jobs (DefaultInputQuota); a
	// submission over it is refused with a *QuotaError, nothing charged.
	InputQuota int64
	// MaxJobAge fails a job that has not finished this long after its
	// submission, however its attempts were lost (DefaultMaxJobAge, or
	// three times the model's time limit when that is longer).
	MaxJobAge time.Duration
	// RetryDelay is the delay before retry n (1-based) of a job after a
	// transient failure (default n*2 s). A crashed worker's job is retried
	// without delay.
	RetryDelay func(n int) time.Duration
	// JanitorInterval is how often expired jobs are deleted and stuck jobs
	// failed (DefaultJanitorInterval); negative disables the janitor.
	JanitorInterval time.Duration
	// UnservedTimeout fails a queued job (with refund) when no live worker
	// has served its model for this long (DefaultUnservedTimeout).
	UnservedTimeout time.Duration
	// RateLimit is each API key's sustained request rate per second and
	// RateBurst its bucket size (DefaultRateLimit, DefaultRateBurst);
	// negative: no limit. A key's own limits (SetKeyLimits) win.
	RateLimit float64
	RateBurst int
	// MaxInFlight is the most unfinished jobs of one key
	// (DefaultMaxInFlight); negative: no limit.
	MaxInFlight int
	// Log receives the service's logs (slog.Default()).
	Log *slog.Logger
}

// Service is the job system over Redis: it implements Backend (for the API)
// and pipelines.Studio (for the pipelines), and is the base of a Worker.
type Service struct {
	rdb       redis.UniversalClient
	db        *rdb.DB // the Redis layer over rdb
	ownsRedis bool
	// waitReplicas and waitTimeout: the WAIT after submissions and
	// cancellations (redisconn.Spec; 0 without a Sentinel URL's
	// wait_replicas).
	waitReplicas int
	waitTimeout  time.Duration
	client       *asynq.Client
	insp         *asynq.Inspector
	store        storage.Store
	opts         Options
	secret       []byte // decoded webhook secret
	secretStr    string
	pathSecret   []byte // key of OpaqueOwner
	hook         *http.Client
	log          *slog.Logger
	events       *hub

	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
}

var (
	_ Backend = (*Service)(nil)
)

// Open connects to Redis, loads or creates the webhook secret and starts the
// janitor. Close it when done.
func Open(ctx context.Context, o Options) (*Service, error) {
	if o.Store == nil {
		return nil, errors.New("jobs: Options.Store is required")
	}
	if o.Retention <= 0 {
		o.Retention = DefaultRetention
	}
	if len(o.WebhookBackoff) == 0 {
		o.WebhookBackoff = DefaultWebhookBackoff
	}
	if o.MaxRetry == 0 {
		o.MaxRetry = DefaultMaxRetry
	} else if o.MaxRetry < 0 {
		o.MaxRetry = 0
	}
	if o.MaxCrashes <= 0 {
		o.MaxCrashes = DefaultMaxCrashes
	}
	if o.InputQuota <= 0 {
		o.InputQuota = DefaultInputQuota
	}
	if o.MaxJobAge <= 0 {
		o.MaxJobAge = DefaultMaxJobAge
	}
	if o.RetryDelay == nil {
		o.RetryDelay = func(n int) time.Duration { return time.Duration(n) * 2 * time.Second }
	}
	if o.JanitorInterval == 0 {
		o.JanitorInterval = DefaultJanitorInterval
	}
	if o.UnservedTimeout <= 0 {
		o.UnservedTimeout = DefaultUnservedTimeout
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	o.RateLimit, o.RateBurst, o.MaxInFlight = limitDefaults(o.RateLimit, o.RateBurst, o.MaxInFlight)
	s := &Service{store: o.Store, opts: o, log: o.Log.With("component", "jobs"), stop: make(chan struct{})}
	if o.Redis != nil {
		s.rdb = o.Redis
	} else {
		spec, err := redisconn.Parse(o.RedisURL)
		if err != nil {
			return nil, fmt.Errorf("jobs: redis URL: %w", err)
		}
		s.rdb, s.ownsRedis = spec.NewClient(), true
		s.waitReplicas, s.waitTimeout = spec.WaitReplicas, spec.WaitTimeout
	}
	s.db = rdb.New(s.rdb)
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		s.closeRedis()
		return nil, fmt.Errorf("jobs: redis: %w", err)
	}
	s.checkEviction(ctx)
	if err := s.db.MigrateKeys(ctx, s.log); err != nil {
		s.closeRedis()
		return nil, err
	}
	s.events = newHub(s.rdb)
	s.client = asynq.NewClientFromRedisClient(s.rdb)
	s.insp = asynq.NewInspectorFromRedisClient(s.rdb)
	if err := s.loadSecret(ctx, o.WebhookSecret); err != nil {
		s.closeRedis()
		return nil, err
	}
	if err := s.loadPathSecret(ctx); err != nil {
		s.closeRedis()
		return nil, err
	}
	s.hook = o.WebhookClient
	if s.hook == nil {
		s.hook = fetch.NewClient(fetch.Policy{TotalTimeout: WebhookTimeout})
	}
	if o.JanitorInterval > 0 {
		s.wg.Add(1)
		go s.janitor(o.JanitorInterval)
	}
	return s, nil
}

// limitDefaults applies the defaults of the per-key limits: 0 takes the
// default, a negative value turns the limit off (0 to the scripts).
func limitDefaults(rate float64, burst, inFlight int) (float64, int, int) {
	switch {
	case rate == 0:
		rate = DefaultRateLimit
	case rate < 0:
		rate = 0
	}
	switch {
	case burst == 0:
		burst = DefaultRateBurst
	case burst < 0:
		burst = 0
	}
	switch {
	case inFlight == 0:
		inFlight = DefaultMaxInFlight
	case inFlight < 0:
		inFlight = 0
	}
	return rate, burst, inFlight
}

// checkEviction warns when Redis may evict keys at its memory limit: job
// records, API keys and credits must never be evicted (job hashes carry a
// TTL, so even volatile-* policies would drop them). On a Redis Cluster
// every master is checked (each holds queues or the service's keys). A
// Redis that refuses CONFIG (managed services) is not checked.
func (s *Service) checkEviction(ctx context.Context) {
	check := func(ctx context.Context, c redis.Cmdable, node string) {
		v, err := c.ConfigGet(ctx, "maxmemory-policy").Result()
		if err != nil {
			return
		}
		if p := v["maxmemory-policy"]; p != "" && p != "noeviction" {
			s.log.Warn("Redis evicts keys at its memory limit: jobs, API keys or credits can be lost; set maxmemory-policy noeviction", "maxmemory-policy", p, "node", node)
		}
	}
	cc, ok := s.rdb.(*redis.ClusterClient)
	if !ok {
		check(ctx, s.rdb, "")
		return
	}
	_ = cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		check(ctx, n, n.Options().Addr)
		return nil
	})
}

func (s *Service) closeRedis() {
	if s.ownsRedis {
		s.rdb.Close()
	}
}

// Close stops the janitor and closes the connections Open made. It is
// idempotent and nil-safe.
// RedisConn is the service's Redis connection as an asynq connection
// option, for tools that read the queues (the queue dashboard); they must
// not close it.
func (s *Service) RedisConn() asynq.RedisConnOpt { return sharedRedis{s.rdb} }

// sharedRedis hands an existing client to asynq tooling.
type sharedRedis struct{ c redis.UniversalClient }

// MakeRedisClient implements asynq.RedisConnOpt.
func (r sharedRedis) MakeRedisClient() interface{} { return r.c }

func (s *Service) Close() error {
	if s == nil {
		return nil
	}
	s.closeOnce.Do(func() {
		close(s.stop)
		s.wg.Wait()
		s.events.close()
		s.client.Close()
		s.insp.Close()
		s.closeRedis()
	})
	return nil
}

// Redis is the service's Redis client (for the lead's health checks and
// operator commands).
func (s *Service) Redis() redis.UniversalClient { return s.rdb }

// Store is the blob store.
func (s *Service) Store() storage.Store { return s.store }

// Retention is the configured job lifetime.
func (s *Service) Retention() time.Duration { return s.opts.Retention }

// Ready reports whether Redis answers and, with wait_replicas, whether
// its master has the online replicas that submissions need: a
// *ReplicasError (matching ErrReplicasOffline) when it answers but has
// too few (see ReplicaState).
func (s *Service) Ready(ctx context.Context) error {
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	return s.ReplicaState(ctx)
}

// WebhookSecret is the "whsec_..." secret webhooks are signed with (for an
// operator command that shows it; never log it).
func (s *Service) WebhookSecret() string { return s.secretStr }

func (s *Service) loadSecret(ctx context.Context, given string) error {
	if given == "" {
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			return err
		}
		fresh := "whsec_" + base64.StdEncoding.EncodeToString(b)
		set, err := s.rdb.SetNX(ctx, rdb.KeySecret, fresh, 0).Result()
		if err != nil {
			return fmt.Errorf("jobs: webhook secret: %w", err)
		}
		if set {
			s.log.Info("generated a webhook signing secret and stored it in Redis (show it with `fashiond keys webhook-secret`; it is never logged)")
		}
		given, err = s.rdb.Get(ctx, rdb.KeySecret).Result()
		if err != nil {
			return fmt.Errorf("jobs: webhook secret: %w", err)
		}
	}
	key, err := decodeSecret(given)
	if err != nil {
		return err
	}
	s.secret, s.secretStr = key, given
	return nil
}

// loadPathSecret loads (creating it once) the secret behind opaque owner
// ids in public paths. It is its own secret, so that changing the webhook
// secret never moves saved models' files.
func (s *Service) loadPathSecret(ctx context.Context) error {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return err
	}
	if err := s.rdb.SetNX(ctx, rdb.KeyPathSecret, base64.StdEncoding.EncodeToString(b), 0).Err(); err != nil {
		return fmt.Errorf("jobs: path secret: %w", err)
	}
	v, err := s.rdb.Get(ctx, rdb.KeyPathSecret).Result()
	if err != nil {
		return fmt.Errorf("jobs: path secret: %w", err)
	}
	s.pathSecret, err = base64.StdEncoding.DecodeString(v)
	if err != nil || len(s.pathSecret) < 16 {
		return errors.New("jobs: the path secret in Redis is malformed")
	}
	return nil
}

// timeout is a model's run time limit.
func (s *Service) timeout(model string) time.Duration {
	if d, ok := s.opts.Timeouts[model]; ok && d > 0 {
		return d
	}
	if model == spec.ModelImageToVideo {
		return DefaultVideoTimeout
	}
	return DefaultImageTimeout
}

// maxAge is how long a job of model may take from submission to its end.
func (s *Service) maxAge(model string) time.Duration {
	return max(s.opts.MaxJobAge, 3*s.timeout(model))
}

// runningTTL bounds how long a dead worker's running set stays readable.
const runningTTL = 24 * time.Hour

// taskMaxRetry is asynq's retry budget of a job task: high, because asynq
// counts an attempt lost to a worker crash as a retry. The job's own
// budgets are Options.MaxRetry (transient failures), MaxCrashes and
// MaxJobAge.
const taskMaxRetry = 1000

// QueueName is the asynq queue of a model's jobs (for tools that inspect
// the queues).
func QueueName(model string) string { return rdb.QueueName(model) }

func nowMS() int64 { return time.Now().UnixMilli() }
