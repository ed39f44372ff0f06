// Package config is fashiond's one typed configuration: every setting comes
// from a command-line flag or a FASHIOND_* environment variable (flags win),
// with the defaults documented in README.md.
package config

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"fashiond/redisconn"
	"fashiond/storage"
)

// Config is the whole configuration of every subcommand.
type Config struct {
	Addr          string        // FASHIOND_ADDR: HTTP listen address
	DataDir       string        // FASHIOND_DATA_DIR: blobs, redis AOF, studio, presets
	PublicURL     string        // FASHIOND_PUBLIC_URL: {base_url}
	CDNURL        string        // FASHIOND_CDN_URL: {cdn_url}; default {base_url}/cdn
	RedisURL      string        // FASHIOND_REDIS_URL: external Redis; empty = private redis-server
	APIKeys       string        // FASHIOND_API_KEYS: key:credits,key:credits provisioned at start
	FetchAllow    string        // FASHIOND_FETCH_ALLOW: CIDRs exempt from the private-address block
	WebhookSecret string        // FASHIOND_WEBHOOK_SECRET: whsec_... Standard Webhooks secret
	Retention     time.Duration // FASHIOND_RETENTION: job and output lifetime
	Queues        string        // FASHIOND_QUEUES: models this worker serves (comma list; empty = all it can)
	Concurrency   int           // FASHIOND_CONCURRENCY: jobs run at once per worker
	MaxBodyBytes  int64         // FASHIOND_MAX_BODY_BYTES: /v1/run body limit

	// Operating limits (docs/OPERATIONS.md).
	ReadHeaderTimeout time.Duration // FASHIOND_READ_HEADER_TIMEOUT: time to send request headers
	BodyTimeout       time.Duration // FASHIOND_BODY_TIMEOUT: base of a request body's deadline (deadline = BodyTimeout + size/MinBodyRate)
	MinBodyRate       int64         // FASHIOND_MIN_BODY_RATE: bytes/s a body must arrive at (its deadline is BodyTimeout + size/rate)
	IdleTimeout       time.Duration // FASHIOND_IDLE_TIMEOUT: keep-alive connections idle this long are closed
	MaxConns          int           // FASHIOND_MAX_CONNS: open HTTP connections (0: half the open-file limit, at most 4096)
	MaxConnsPerIP     int           // FASHIOND_MAX_CONNS_PER_IP: open connections of one client address (0: MaxConns/4; -1: no cap, behind a reverse proxy)
	MaxLargeBodies    int           // FASHIOND_MAX_LARGE_BODIES: bodies of 1 MiB or more received at once
	InputQuota        int64         // FASHIOND_INPUT_QUOTA_BYTES: input image bytes one key's unfinished jobs may hold
	RedisMaxMemory    string        // FASHIOND_REDIS_MAXMEMORY: maxmemory of the private redis-server (noeviction)
	MaxCrashes        int           // FASHIOND_MAX_CRASHES: worker crashes of its own after which a job is failed
	MaxJobAge         time.Duration // FASHIOND_MAX_JOB_AGE: a job unfinished this long after submission is failed
	RateLimit         float64       // FASHIOND_RATE_LIMIT: requests per second per API key, sustained (-1: no limit)
	RateBurst         int           // FASHIOND_RATE_BURST: requests per API key at once (the token bucket's size)
	MaxInFlight       int           // FASHIOND_MAX_IN_FLIGHT: unfinished jobs per API key (-1: no limit)

	ORTLib         string // FASHIOND_ORT_LIB: libonnxruntime.so path
	ModelsDir      string // FASHIOND_MODELS_DIR: the model repository
	ModelsMirror   string // FASHIOND_MODELS_MIRROR: directory to install models from
	ModelsURL      string // FASHIOND_MODELS_URL: base URL serving the model files by name
	ModelsGitHub   string // FASHIOND_MODELS_GITHUB: stands in for https://github.com in the origin URLs
	Device         string // FASHIOND_DEVICE: auto, cpu or cuda
	IntraOpThreads int    // FASHIOND_INTRA_OP_THREADS: ORT threads per session (0 = CPUs)
	CUDADeviceID   int    // FASHIOND_CUDA_DEVICE_ID
	CUDAMemLimit   int64  // FASHIOND_CUDA_MEM_LIMIT: bytes, 0 = unlimited
	CUDNNConvAlgo  string // FASHIOND_CUDNN_CONV_ALGO: EXHAUSTIVE, HEURISTIC, DEFAULT
	CUDARoute      string // FASHIOND_CUDA_ROUTE: auto, in-core or plugin (docs/GPU.md)
	CUDAArena      string // FASHIOND_CUDA_ARENA_EXTEND: kNextPowerOfTwo, kSameAsRequested or "" (ORT's default)
	UpscalePolicy  string // FASHIOND_UPSCALE_POLICY: auto, sr-fast, sr-quality, lanczos
	Batching       string // FASHIOND_BATCHING: dynamic batching of model calls: auto (on with CUDA, off on CPU), on, off
	// GenerativeInpainting and GenerativeTextToImage choose the installed
	// generative model of each role (FASHIOND_GENERATIVE_INPAINTING,
	// FASHIOND_GENERATIVE_TEXT_TO_IMAGE); empty: the only installed model of
	// the role, or none. "none" turns a role off.
	GenerativeInpainting  string
	GenerativeTextToImage string
	// GenerativeTryOn chooses the installed try-on model (fashiond.json
	// layout catvton) the tryon pipeline uses (FASHIOND_GENERATIVE_TRY_ON),
	// with the same rules.
	GenerativeTryOn string

	LogLevel  string // FASHIOND_LOG_LEVEL: debug, info, warn, error
	LogFormat string // FASHIOND_LOG_FORMAT: text or json

	MetricsAddr   string        // FASHIOND_METRICS_ADDR: separate /metrics listener; empty = on Addr
	AdminToken    Secret        // FASHIOND_ADMIN_TOKEN: the queue dashboard at /admin/queues; empty = not mounted; environment only
	ShutdownGrace time.Duration // FASHIOND_SHUTDOWN_GRACE: running jobs' time to finish on SIGINT/SIGTERM

	// Blob storage (docs/OPERATIONS.md, "S3 object storage").
	Storage        string        // FASHIOND_STORAGE: local (DATA_DIR/blobs) or s3://bucket[/prefix]
	S3Endpoint     string        // FASHIOND_S3_ENDPOINT (or AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL): http(s)://host[:port]; empty = AWS
	S3Region       string        // FASHIOND_S3_REGION (or AWS_REGION, AWS_DEFAULT_REGION); empty = us-east-1
	S3AccessKey    string        // FASHIOND_S3_ACCESS_KEY (or AWS_ACCESS_KEY_ID)
	S3SecretKey    Secret        // FASHIOND_S3_SECRET_KEY (or AWS_SECRET_ACCESS_KEY); environment only
	S3SessionToken Secret        // FASHIOND_S3_SESSION_TOKEN (or AWS_SESSION_TOKEN); environment only, optional
	S3PathStyle    string        // FASHIOND_S3_PATH_STYLE: auto, on (http://endpoint/bucket/key) or off (virtual-hosted)
	S3Presign      time.Duration // FASHIOND_S3_PRESIGN: result URLs presigned for this long; 0 = {cdn_url}/key

	// envErrs are environment values that could not be parsed; Finish
	// reports them so a typo never silently becomes a default.
	envErrs []string
}

// Secret is a setting that must never be printed: its String, GoString,
// text (JSON) and slog values are "[redacted]" (or "" when empty), so a Config printed
// with %+v or logged carries no credential. Use string(s) for the value.
type Secret string

const redacted = "[redacted]"

func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return redacted
}

// GoString is String (for %#v).
func (s Secret) GoString() string { return s.String() }

// LogValue is String (for log/slog).
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalText is String (for encoding/json and the like).
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// StorageLocal is FASHIOND_STORAGE's default: the local directory
// DATA_DIR/blobs, served under /cdn/.
const StorageLocal = "local"

// IsS3 reports whether the blob store is an S3 bucket.
func (c *Config) IsS3() bool { return c.Storage != StorageLocal }

// DefaultShutdownGrace is how long running jobs may finish on SIGINT/SIGTERM
// before they are pushed back to their queues.
const DefaultShutdownGrace = 5 * time.Minute

// Defaults returns the documented defaults.
func Defaults() Config {
	return Config{
		Addr:         "127.0.0.1:8080",
		DataDir:      "data",
		Retention:    72 * time.Hour,
		Concurrency:  2,
		MaxBodyBytes: 100 << 20, // two 25 MB images as base64 fit

		ReadHeaderTimeout: 10 * time.Second,
		BodyTimeout:       10 * time.Second,
		MinBodyRate:       256 << 10,
		IdleTimeout:       60 * time.Second,
		MaxLargeBodies:    4,
		InputQuota:        1 << 30,
		RedisMaxMemory:    "1gb",
		MaxCrashes:        3,
		MaxJobAge:         time.Hour,
		RateLimit:         20,
		RateBurst:         100,
		MaxInFlight:       1000,
		ORTLib:            ".deps/onnxruntime/1.30.0/libonnxruntime.so.1",
		Device:            "auto",
		UpscalePolicy:     "auto",
		Batching:          "auto",
		CUDNNConvAlgo:     "HEURISTIC",
		CUDARoute:         "auto",
		LogLevel:          "info",
		LogFormat:         "text",
		ShutdownGrace:     DefaultShutdownGrace,
		Storage:           StorageLocal,
		S3PathStyle:       "auto",
	}
}

// Group is a set of settings one subcommand uses; each subcommand's --help
// lists the flags of its groups only.
type Group uint

// The setting groups.
const (
	GroupLog          Group = 1 << iota // log-level, log-format
	GroupData                           // data-dir
	GroupURLs                           // public-url, cdn-url (result URLs)
	GroupHTTP                           // addr, body and connection limits, metrics-addr
	GroupRedis                          // redis-url
	GroupPrivateRedis                   // redis-maxmemory (the private redis-server)
	GroupJobs                           // api-keys, fetch-allow, webhook-secret, retention, quotas, job budgets
	GroupWorker                         // queues, concurrency, shutdown-grace
	GroupRuntime                        // ort-lib, models-dir, device, threads, CUDA
	GroupPipelines                      // upscale-policy, batching
	GroupInstall                        // models-mirror, models-url, models-github
	GroupStorage                        // storage, s3-* (the blob store)

	GroupAll = GroupStorage<<1 - 1
)

// commandGroups are the settings of each subcommand, by the first word of
// its flag set's name.
var commandGroups = map[string]Group{
	"serve":    GroupAll,
	"api":      GroupLog | GroupData | GroupURLs | GroupHTTP | GroupRedis | GroupJobs | GroupStorage,
	"worker":   GroupLog | GroupData | GroupURLs | GroupRedis | GroupJobs | GroupWorker | GroupRuntime | GroupPipelines | GroupInstall | GroupStorage,
	"keys":     GroupLog | GroupData | GroupURLs | GroupRedis | GroupPrivateRedis | GroupJobs | GroupStorage,
	"models":   GroupLog | GroupData | GroupRuntime | GroupInstall,
	"generate": GroupLog | GroupData | GroupRuntime,
	"bench":    GroupLog | GroupData | GroupRuntime,
	"version":  0,
}

// ForCommand returns the setting groups of the subcommand whose flag set is
// named name ("models list" is the models command); GroupAll for an unknown
// name.
func ForCommand(name string) Group {
	first, _, _ := strings.Cut(name, " ")
	if g, ok := commandGroups[first]; ok {
		return g
	}
	return GroupAll
}

// Register binds the settings of the subcommand named by fs.Name() (see
// ForCommand) to flags on fs; see RegisterGroups.
func (c *Config) Register(fs *flag.FlagSet) { c.RegisterGroups(fs, ForCommand(fs.Name())) }

// RegisterGroups binds the settings of groups to flags on fs, with the
// environment (or the default) as each flag's default value. Every other
// setting still takes its environment value or default, so Finish checks
// the whole environment whichever the command.
func (c *Config) RegisterGroups(fs *flag.FlagSet, groups Group) {
	c.envErrs = nil
	hidden := flag.NewFlagSet("hidden", flag.ContinueOnError)
	regs := []struct {
		g   Group
		reg func(*flag.FlagSet, Config)
	}{
		{GroupLog, c.registerLog}, {GroupData, c.registerData}, {GroupURLs, c.registerURLs},
		{GroupHTTP, c.registerHTTP}, {GroupRedis, c.registerRedis}, {GroupPrivateRedis, c.registerPrivateRedis},
		{GroupJobs, c.registerJobs}, {GroupWorker, c.registerWorker}, {GroupRuntime, c.registerRuntime},
		{GroupPipelines, c.registerPipelines}, {GroupInstall, c.registerInstall}, {GroupStorage, c.registerStorage},
	}
	d := Defaults()
	for _, r := range regs {
		if groups&r.g != 0 {
			r.reg(fs, d)
		} else {
			r.reg(hidden, d)
		}
	}
}

func (c *Config) registerLog(fs *flag.FlagSet, d Config) {
	fs.StringVar(&c.LogLevel, "log-level", envStr("FASHIOND_LOG_LEVEL", d.LogLevel), "debug, info, warn or error (FASHIOND_LOG_LEVEL)")
	fs.StringVar(&c.LogFormat, "log-format", envStr("FASHIOND_LOG_FORMAT", d.LogFormat), "text or json (FASHIOND_LOG_FORMAT)")
}

func (c *Config) registerData(fs *flag.FlagSet, d Config) {
	fs.StringVar(&c.DataDir, "data-dir", envStr("FASHIOND_DATA_DIR", d.DataDir), "data directory (FASHIOND_DATA_DIR)")
}

func (c *Config) registerURLs(fs *flag.FlagSet, _ Config) {
	fs.StringVar(&c.PublicURL, "public-url", envStr("FASHIOND_PUBLIC_URL", ""), "public base URL, {base_url} (FASHIOND_PUBLIC_URL; default http://ADDR)")
	fs.StringVar(&c.CDNURL, "cdn-url", envStr("FASHIOND_CDN_URL", ""), "URL that serves results, {cdn_url} (FASHIOND_CDN_URL; default {base_url}/cdn)")
}

func (c *Config) registerHTTP(fs *flag.FlagSet, d Config) {
	fs.StringVar(&c.Addr, "addr", envStr("FASHIOND_ADDR", d.Addr), "HTTP listen address (FASHIOND_ADDR)")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", envStr("FASHIOND_METRICS_ADDR", ""), "separate listen address for /metrics (FASHIOND_METRICS_ADDR; default: /metrics on the API address)")
	c.AdminToken = Secret(envStr("FASHIOND_ADMIN_TOKEN", ""))
	fs.Int64Var(&c.MaxBodyBytes, "max-body-bytes", c.envInt64("FASHIOND_MAX_BODY_BYTES", d.MaxBodyBytes), "largest /v1/run body (FASHIOND_MAX_BODY_BYTES)")
	fs.DurationVar(&c.ReadHeaderTimeout, "read-header-timeout", c.envDur("FASHIOND_READ_HEADER_TIMEOUT", d.ReadHeaderTimeout), "time allowed to send request headers (FASHIOND_READ_HEADER_TIMEOUT)")
	fs.DurationVar(&c.BodyTimeout, "body-timeout", c.envDur("FASHIOND_BODY_TIMEOUT", d.BodyTimeout), "base of every request body's deadline, before and after authentication: base + size / min-body-rate (FASHIOND_BODY_TIMEOUT)")
	fs.Int64Var(&c.MinBodyRate, "min-body-rate", c.envInt64("FASHIOND_MIN_BODY_RATE", d.MinBodyRate), "bytes per second a request body must arrive at (FASHIOND_MIN_BODY_RATE)")
	fs.DurationVar(&c.IdleTimeout, "idle-timeout", c.envDur("FASHIOND_IDLE_TIMEOUT", d.IdleTimeout), "idle keep-alive connections are closed after (FASHIOND_IDLE_TIMEOUT)")
	fs.IntVar(&c.MaxConns, "max-conns", c.envInt("FASHIOND_MAX_CONNS", 0), "open HTTP connections, 0 = half the open-file limit (FASHIOND_MAX_CONNS)")
	fs.IntVar(&c.MaxConnsPerIP, "max-conns-per-ip", c.envInt("FASHIOND_MAX_CONNS_PER_IP", 0), "open connections of one client address, 0 = a quarter of max-conns, -1 = no cap (FASHIOND_MAX_CONNS_PER_IP)")
	fs.IntVar(&c.MaxLargeBodies, "max-large-bodies", c.envInt("FASHIOND_MAX_LARGE_BODIES", d.MaxLargeBodies), "request bodies of 1 MiB or more received at once (FASHIOND_MAX_LARGE_BODIES)")
}

func (c *Config) registerRedis(fs *flag.FlagSet, _ Config) {
	fs.StringVar(&c.RedisURL, "redis-url", envStr("FASHIOND_REDIS_URL", ""), "external Redis URL (FASHIOND_REDIS_URL; default: a private redis-server)")
}

func (c *Config) registerPrivateRedis(fs *flag.FlagSet, d Config) {
	fs.StringVar(&c.RedisMaxMemory, "redis-maxmemory", envStr("FASHIOND_REDIS_MAXMEMORY", d.RedisMaxMemory), "maxmemory of the private redis-server, policy noeviction (FASHIOND_REDIS_MAXMEMORY)")
}

func (c *Config) registerJobs(fs *flag.FlagSet, d Config) {
	fs.StringVar(&c.APIKeys, "api-keys", envStr("FASHIOND_API_KEYS", ""), "keys provisioned at start, key:credits,... (FASHIOND_API_KEYS)")
	fs.StringVar(&c.FetchAllow, "fetch-allow", envStr("FASHIOND_FETCH_ALLOW", ""), "CIDRs exempt from the private-address block (FASHIOND_FETCH_ALLOW)")
	fs.StringVar(&c.WebhookSecret, "webhook-secret", envStr("FASHIOND_WEBHOOK_SECRET", ""), "Standard Webhooks secret whsec_... (FASHIOND_WEBHOOK_SECRET)")
	fs.DurationVar(&c.Retention, "retention", c.envDur("FASHIOND_RETENTION", d.Retention), "job and output retention (FASHIOND_RETENTION)")
	fs.Int64Var(&c.InputQuota, "input-quota-bytes", c.envInt64("FASHIOND_INPUT_QUOTA_BYTES", d.InputQuota), "input image bytes one key's unfinished jobs may hold (FASHIOND_INPUT_QUOTA_BYTES)")
	fs.IntVar(&c.MaxCrashes, "max-crashes", c.envInt("FASHIOND_MAX_CRASHES", d.MaxCrashes), "worker crashes of its own after which a job is failed (FASHIOND_MAX_CRASHES)")
	fs.DurationVar(&c.MaxJobAge, "max-job-age", c.envDur("FASHIOND_MAX_JOB_AGE", d.MaxJobAge), "a job unfinished this long after submission is failed (FASHIOND_MAX_JOB_AGE)")
	fs.Float64Var(&c.RateLimit, "rate-limit", c.envFloat("FASHIOND_RATE_LIMIT", d.RateLimit), "requests per second per API key, sustained; -1 = no limit (FASHIOND_RATE_LIMIT)")
	fs.IntVar(&c.RateBurst, "rate-burst", c.envInt("FASHIOND_RATE_BURST", d.RateBurst), "requests per API key at once (FASHIOND_RATE_BURST)")
	fs.IntVar(&c.MaxInFlight, "max-in-flight", c.envInt("FASHIOND_MAX_IN_FLIGHT", d.MaxInFlight), "unfinished jobs per API key; -1 = no limit (FASHIOND_MAX_IN_FLIGHT)")
}

func (c *Config) registerWorker(fs *flag.FlagSet, d Config) {
	fs.StringVar(&c.Queues, "queues", envStr("FASHIOND_QUEUES", ""), "models this worker serves, comma separated (FASHIOND_QUEUES; default all)")
	fs.IntVar(&c.Concurrency, "concurrency", c.envInt("FASHIOND_CONCURRENCY", d.Concurrency), "jobs run at once per worker (FASHIOND_CONCURRENCY)")
	fs.DurationVar(&c.ShutdownGrace, "shutdown-grace", c.envDur("FASHIOND_SHUTDOWN_GRACE", d.ShutdownGrace), "on SIGINT/SIGTERM, how long running jobs may finish before they are re-queued (FASHIOND_SHUTDOWN_GRACE)")
}

func (c *Config) registerRuntime(fs *flag.FlagSet, d Config) {
	fs.StringVar(&c.ORTLib, "ort-lib", envStr("FASHIOND_ORT_LIB", d.ORTLib), "ONNX Runtime shared library (FASHIOND_ORT_LIB)")
	fs.StringVar(&c.ModelsDir, "models-dir", envStr("FASHIOND_MODELS_DIR", ""), "model repository (FASHIOND_MODELS_DIR; default DATA_DIR/models)")
	fs.StringVar(&c.Device, "device", envStr("FASHIOND_DEVICE", d.Device), "inference device: auto, cpu or cuda (FASHIOND_DEVICE)")
	fs.IntVar(&c.IntraOpThreads, "intra-op-threads", c.envInt("FASHIOND_INTRA_OP_THREADS", 0), "ONNX Runtime threads per session, 0 = CPUs (FASHIOND_INTRA_OP_THREADS)")
	fs.IntVar(&c.CUDADeviceID, "cuda-device-id", c.envInt("FASHIOND_CUDA_DEVICE_ID", 0), "CUDA device id (FASHIOND_CUDA_DEVICE_ID)")
	fs.Int64Var(&c.CUDAMemLimit, "cuda-mem-limit", c.envInt64("FASHIOND_CUDA_MEM_LIMIT", 0), "CUDA arena limit in bytes, 0 = none (FASHIOND_CUDA_MEM_LIMIT)")
	fs.StringVar(&c.CUDNNConvAlgo, "cudnn-conv-algo", envStr("FASHIOND_CUDNN_CONV_ALGO", d.CUDNNConvAlgo), "cuDNN conv algorithm search: EXHAUSTIVE, HEURISTIC, DEFAULT (FASHIOND_CUDNN_CONV_ALGO)")
	fs.StringVar(&c.CUDARoute, "cuda-route", envStr("FASHIOND_CUDA_ROUTE", d.CUDARoute), "how ONNX Runtime reaches CUDA: auto, in-core (official GPU builds) or plugin (provider library beside a CPU-build core) (FASHIOND_CUDA_ROUTE)")
	fs.StringVar(&c.CUDAArena, "cuda-arena-extend", envStr("FASHIOND_CUDA_ARENA_EXTEND", ""), "CUDA arena growth: kNextPowerOfTwo or kSameAsRequested; empty: ONNX Runtime's default (FASHIOND_CUDA_ARENA_EXTEND)")
}

func (c *Config) registerPipelines(fs *flag.FlagSet, d Config) {
	fs.StringVar(&c.UpscalePolicy, "upscale-policy", envStr("FASHIOND_UPSCALE_POLICY", d.UpscalePolicy), "tier upscaling: auto, sr-fast, sr-quality, lanczos (FASHIOND_UPSCALE_POLICY)")
	fs.StringVar(&c.Batching, "batching", envStr("FASHIOND_BATCHING", d.Batching), "dynamic batching of model calls: auto (on with CUDA, off on CPU), on, off (FASHIOND_BATCHING)")
	fs.StringVar(&c.GenerativeInpainting, "generative-inpainting", envStr("FASHIOND_GENERATIVE_INPAINTING", ""), "installed inpainting model the pipelines use; empty: the only one installed; none: off (FASHIOND_GENERATIVE_INPAINTING)")
	fs.StringVar(&c.GenerativeTextToImage, "generative-text-to-image", envStr("FASHIOND_GENERATIVE_TEXT_TO_IMAGE", ""), "installed text-to-image model the pipelines use; empty: the only one installed; none: off (FASHIOND_GENERATIVE_TEXT_TO_IMAGE)")
	fs.StringVar(&c.GenerativeTryOn, "generative-try-on", envStr("FASHIOND_GENERATIVE_TRY_ON", ""), "installed try-on model (CatVTON layout) tryon uses; empty: the only one installed; none: off (FASHIOND_GENERATIVE_TRY_ON)")
}

func (c *Config) registerInstall(fs *flag.FlagSet, _ Config) {
	fs.StringVar(&c.ModelsMirror, "models-mirror", envStr("FASHIOND_MODELS_MIRROR", ""), "directory to install models from (FASHIOND_MODELS_MIRROR; default ../shared/models when present)")
	fs.StringVar(&c.ModelsURL, "models-url", envStr("FASHIOND_MODELS_URL", ""), "base URL serving the model files by name, used when there is no mirror (FASHIOND_MODELS_URL)")
	fs.StringVar(&c.ModelsGitHub, "models-github", envStr("FASHIOND_MODELS_GITHUB", ""), "base URL standing in for https://github.com in the models' origin URLs, e.g. an internal proxy (FASHIOND_MODELS_GITHUB)")
}

// registerStorage binds the blob store settings. The secret key and the
// session token have no flag (a command line is visible to every user of
// the machine): they come from the environment only.
func (c *Config) registerStorage(fs *flag.FlagSet, d Config) {
	fs.StringVar(&c.Storage, "storage", envStr("FASHIOND_STORAGE", d.Storage), "blob store: local (DATA_DIR/blobs) or s3://bucket[/prefix] (FASHIOND_STORAGE)")
	fs.StringVar(&c.S3Endpoint, "s3-endpoint", envFirst(d.S3Endpoint, "FASHIOND_S3_ENDPOINT", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"), "S3 endpoint http(s)://host[:port]; empty = AWS (FASHIOND_S3_ENDPOINT)")
	fs.StringVar(&c.S3Region, "s3-region", envFirst(d.S3Region, "FASHIOND_S3_REGION", "AWS_REGION", "AWS_DEFAULT_REGION"), "S3 region; empty = us-east-1 (FASHIOND_S3_REGION)")
	fs.StringVar(&c.S3AccessKey, "s3-access-key", envFirst("", "FASHIOND_S3_ACCESS_KEY", "AWS_ACCESS_KEY_ID"), "S3 access key id (FASHIOND_S3_ACCESS_KEY or AWS_ACCESS_KEY_ID; the secret key only from FASHIOND_S3_SECRET_KEY or AWS_SECRET_ACCESS_KEY)")
	fs.StringVar(&c.S3PathStyle, "s3-path-style", envStr("FASHIOND_S3_PATH_STYLE", d.S3PathStyle), "S3 bucket addressing: auto, on (endpoint/bucket/key) or off (bucket.endpoint/key) (FASHIOND_S3_PATH_STYLE)")
	fs.DurationVar(&c.S3Presign, "s3-presign", c.envDur("FASHIOND_S3_PRESIGN", d.S3Presign), "result URLs as presigned S3 URLs valid this long (e.g. 24h, at most 168h); 0 = {cdn_url}/key (FASHIOND_S3_PRESIGN)")
	c.S3SecretKey = Secret(envFirst("", "FASHIOND_S3_SECRET_KEY", "AWS_SECRET_ACCESS_KEY"))
	c.S3SessionToken = Secret(envFirst("", "FASHIOND_S3_SESSION_TOKEN", "AWS_SESSION_TOKEN"))
}

// Finish validates every setting and fills the derived defaults. Call after
// fs.Parse. An invalid setting is an error naming its variable; every
// invalid one is reported at once.
func (c *Config) Finish() error {
	errs := append([]string(nil), c.envErrs...)
	for _, check := range []func() error{
		c.checkLog, c.checkData, c.checkHTTP, c.checkURLs, c.checkRedis, c.checkJobs,
		c.checkWorker, c.checkRuntime, c.checkPipelines, c.checkLimits, c.checkStorage,
	} {
		if err := check(); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("config: %s", strings.Join(errs, "; "))
	}
	c.derive()
	return nil
}

// derive fills the defaults that depend on other settings.
func (c *Config) derive() {
	if c.PublicURL == "" {
		c.PublicURL = "http://" + c.Addr
	}
	c.PublicURL = strings.TrimRight(c.PublicURL, "/")
	if c.CDNURL == "" {
		c.CDNURL = c.PublicURL + "/cdn"
	}
	c.CDNURL = strings.TrimRight(c.CDNURL, "/")
	if c.ModelsDir == "" {
		c.ModelsDir = filepath.Join(c.DataDir, "models")
	}
	if c.MaxConns == 0 {
		c.MaxConns = autoMaxConns()
	}
	if c.MaxConnsPerIP == 0 {
		c.MaxConnsPerIP = max(c.MaxConns/4, 1)
	}
}

func (c *Config) checkLog() error {
	c.LogLevel = strings.ToLower(strings.TrimSpace(c.LogLevel))
	c.LogFormat = strings.ToLower(strings.TrimSpace(c.LogFormat))
	switch c.LogLevel {
	case "debug", "info", "warn", "warning", "error":
	default:
		return fmt.Errorf("FASHIOND_LOG_LEVEL must be debug, info, warn or error, not %q", c.LogLevel)
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		return fmt.Errorf("FASHIOND_LOG_FORMAT must be text or json, not %q", c.LogFormat)
	}
	return nil
}

func (c *Config) checkData() error {
	if strings.TrimSpace(c.DataDir) == "" {
		return errors.New("FASHIOND_DATA_DIR must not be empty")
	}
	return nil
}

// minAdminToken is the shortest FASHIOND_ADMIN_TOKEN accepted.
const minAdminToken = 16

func (c *Config) checkHTTP() error {
	if err := checkAddr(c.Addr); err != nil {
		return fmt.Errorf("FASHIOND_ADDR: %w", err)
	}
	if t := c.AdminToken; t != "" && len(t) < minAdminToken {
		return fmt.Errorf("FASHIOND_ADMIN_TOKEN must be at least %d characters (it guards the queue dashboard)", minAdminToken)
	}
	if c.MetricsAddr == "" {
		return nil
	}
	if err := checkAddr(c.MetricsAddr); err != nil {
		return fmt.Errorf("FASHIOND_METRICS_ADDR: %w", err)
	}
	if c.MetricsAddr == c.Addr {
		return errors.New("FASHIOND_METRICS_ADDR must differ from FASHIOND_ADDR (leave it empty to serve /metrics on the API address)")
	}
	return nil
}

// checkAddr accepts host:port with a numeric port (":0" and ":8080" too).
func checkAddr(a string) error {
	_, port, err := net.SplitHostPort(a)
	if err != nil {
		return fmt.Errorf("%q is not host:port", a)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("%q: the port must be a number from 0 to 65535", a)
	}
	return nil
}

func (c *Config) checkURLs() error {
	if err := checkBaseURL(c.PublicURL); err != nil {
		return fmt.Errorf("FASHIOND_PUBLIC_URL: %w", err)
	}
	if err := checkBaseURL(c.CDNURL); err != nil {
		return fmt.Errorf("FASHIOND_CDN_URL: %w", err)
	}
	if err := checkBaseURL(c.ModelsURL); err != nil {
		return fmt.Errorf("FASHIOND_MODELS_URL: %w", err)
	}
	if err := checkBaseURL(c.ModelsGitHub); err != nil {
		return fmt.Errorf("FASHIOND_MODELS_GITHUB: %w", err)
	}
	return nil
}

// checkBaseURL accepts an empty value (the default) or an absolute http(s)
// URL without credentials, query or fragment.
func checkBaseURL(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return fmt.Errorf("%q is not a URL", s)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%q must be an http:// or https:// URL", s)
	case u.Host == "":
		return fmt.Errorf("%q has no host", s)
	case u.User != nil || u.RawQuery != "" || u.Fragment != "":
		return fmt.Errorf("%q must have no credentials, query or fragment", s)
	}
	return nil
}

func (c *Config) checkRedis() error {
	if !memSize.MatchString(strings.ToLower(c.RedisMaxMemory)) {
		return fmt.Errorf("FASHIOND_REDIS_MAXMEMORY must be a size such as 512mb or 2gb, not %q", c.RedisMaxMemory)
	}
	if c.RedisURL == "" {
		return nil
	}
	// One parser for every Redis client (redisconn); its errors never
	// repeat a password.
	if _, err := redisconn.Parse(c.RedisURL); err != nil {
		return fmt.Errorf("FASHIOND_REDIS_URL: %w", err)
	}
	return nil
}

func (c *Config) checkJobs() error {
	if c.WebhookSecret != "" && !strings.HasPrefix(c.WebhookSecret, "whsec_") {
		return errors.New("FASHIOND_WEBHOOK_SECRET must start with whsec_")
	}
	if _, err := ParseAPIKeys(c.APIKeys); err != nil {
		return err
	}
	if err := checkAllow(c.FetchAllow); err != nil {
		return err
	}
	if c.Retention <= 0 {
		return errors.New("FASHIOND_RETENTION must be a positive duration")
	}
	return nil
}

// KeyGrant is one FASHIOND_API_KEYS entry.
type KeyGrant struct {
	Key     string
	Credits int64
}

// ParseAPIKeys parses FASHIOND_API_KEYS: key:credits entries separated by
// commas, credits ≥ 0. Errors name the entry by position, never the key.
func ParseAPIKeys(spec string) ([]KeyGrant, error) {
	var out []KeyGrant
	for i, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		k, cr, ok := strings.Cut(item, ":")
		n, err := strconv.ParseInt(strings.TrimSpace(cr), 10, 64)
		if !ok || strings.TrimSpace(k) == "" || err != nil || n < 0 {
			return nil, fmt.Errorf("FASHIOND_API_KEYS: entry %d must be key:credits with credits ≥ 0", i+1)
		}
		out = append(out, KeyGrant{Key: strings.TrimSpace(k), Credits: n})
	}
	return out, nil
}

// checkAllow validates FASHIOND_FETCH_ALLOW with the rules of
// fetch.ParseAllow: addresses or CIDR prefixes, comma separated.
func checkAllow(csv string) error {
	for _, f := range strings.Split(csv, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		_, perr := netip.ParsePrefix(f)
		_, aerr := netip.ParseAddr(f)
		if perr != nil && aerr != nil {
			return fmt.Errorf("FASHIOND_FETCH_ALLOW: %q is neither an address nor a CIDR prefix", f)
		}
	}
	return nil
}

// modelName is a queue (model) name in FASHIOND_QUEUES.
var modelName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

func (c *Config) checkWorker() error {
	if c.Concurrency < 1 {
		return errors.New("FASHIOND_CONCURRENCY must be at least 1")
	}
	if c.ShutdownGrace <= 0 {
		return errors.New("FASHIOND_SHUTDOWN_GRACE must be a positive duration")
	}
	for _, q := range strings.Split(c.Queues, ",") {
		if q = strings.TrimSpace(q); q != "" && !modelName.MatchString(q) {
			return fmt.Errorf("FASHIOND_QUEUES: %q is not a model name", q)
		}
	}
	return nil
}

func (c *Config) checkRuntime() error {
	switch c.Device {
	case "auto", "cpu", "cuda":
	default:
		return fmt.Errorf("FASHIOND_DEVICE must be auto, cpu or cuda, not %q", c.Device)
	}
	c.CUDNNConvAlgo = strings.ToUpper(c.CUDNNConvAlgo)
	switch c.CUDNNConvAlgo {
	case "EXHAUSTIVE", "HEURISTIC", "DEFAULT":
	default:
		return fmt.Errorf("FASHIOND_CUDNN_CONV_ALGO must be EXHAUSTIVE, HEURISTIC or DEFAULT, not %q", c.CUDNNConvAlgo)
	}
	switch c.CUDARoute {
	case "auto", "in-core", "plugin":
	default:
		return fmt.Errorf("FASHIOND_CUDA_ROUTE must be auto, in-core or plugin, not %q", c.CUDARoute)
	}
	switch c.CUDAArena {
	case "", "kNextPowerOfTwo", "kSameAsRequested":
	default:
		return fmt.Errorf("FASHIOND_CUDA_ARENA_EXTEND must be kNextPowerOfTwo or kSameAsRequested (or empty), not %q", c.CUDAArena)
	}
	switch {
	case strings.TrimSpace(c.ORTLib) == "":
		return errors.New("FASHIOND_ORT_LIB must not be empty")
	case c.IntraOpThreads < 0:
		return errors.New("FASHIOND_INTRA_OP_THREADS must be 0 (one per CPU) or more")
	case c.CUDADeviceID < 0:
		return errors.New("FASHIOND_CUDA_DEVICE_ID must be 0 or more")
	case c.CUDAMemLimit < 0:
		return errors.New("FASHIOND_CUDA_MEM_LIMIT must be 0 (no limit) or a byte count")
	}
	return nil
}

func (c *Config) checkPipelines() error {
	switch c.UpscalePolicy {
	case "auto", "sr-fast", "sr-quality", "lanczos":
	default:
		return fmt.Errorf("FASHIOND_UPSCALE_POLICY must be auto, sr-fast, sr-quality or lanczos, not %q", c.UpscalePolicy)
	}
	switch c.Batching {
	case "auto", "on", "off":
	case "true", "1":
		c.Batching = "on"
	case "false", "0":
		c.Batching = "off"
	default:
		return fmt.Errorf("FASHIOND_BATCHING must be auto, on or off, not %q", c.Batching)
	}
	for _, g := range []struct{ name, v string }{
		{"FASHIOND_GENERATIVE_INPAINTING", c.GenerativeInpainting}, {"FASHIOND_GENERATIVE_TEXT_TO_IMAGE", c.GenerativeTextToImage},
		{"FASHIOND_GENERATIVE_TRY_ON", c.GenerativeTryOn},
	} {
		if g.v != "" && !generativeName.MatchString(g.v) {
			return fmt.Errorf("%s must be an installed model's name (%s) or none, not %q", g.name, generativeName, g.v)
		}
	}
	return nil
}

// generativeName is the form of an installed generative model's name.
var generativeName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// Bounds of the operating limits.
const (
	minBodyBytes     = 1 << 10
	minBodyRateFloor = 1 << 10 // bytes/s: below, a body deadline is meaningless
	maxConnsCeiling  = 4096
	minConns         = 16
	minInputQuota    = 1 << 20
)

// checkLimits validates the operating limits.
func (c *Config) checkLimits() error {
	switch {
	case c.MaxBodyBytes < minBodyBytes:
		return fmt.Errorf("FASHIOND_MAX_BODY_BYTES must be at least %d, not %d", minBodyBytes, c.MaxBodyBytes)
	case c.ReadHeaderTimeout <= 0:
		return errors.New("FASHIOND_READ_HEADER_TIMEOUT must be a positive duration")
	case c.BodyTimeout <= 0:
		return errors.New("FASHIOND_BODY_TIMEOUT must be a positive duration")
	case c.IdleTimeout <= 0:
		return errors.New("FASHIOND_IDLE_TIMEOUT must be a positive duration")
	case c.MaxJobAge <= 0:
		return errors.New("FASHIOND_MAX_JOB_AGE must be a positive duration")
	case c.MinBodyRate < minBodyRateFloor:
		return fmt.Errorf("FASHIOND_MIN_BODY_RATE must be at least %d bytes per second", minBodyRateFloor)
	case c.MaxConns < 0 || c.MaxConns > 0 && c.MaxConns < minConns:
		return fmt.Errorf("FASHIOND_MAX_CONNS must be 0 (automatic) or at least %d", minConns)
	case c.MaxConnsPerIP < -1:
		return errors.New("FASHIOND_MAX_CONNS_PER_IP must be -1 (no cap), 0 (a quarter of FASHIOND_MAX_CONNS) or a count")
	case c.MaxLargeBodies < 1:
		return errors.New("FASHIOND_MAX_LARGE_BODIES must be at least 1")
	case c.MaxCrashes < 1:
		return errors.New("FASHIOND_MAX_CRASHES must be at least 1")
	case c.InputQuota < minInputQuota:
		return fmt.Errorf("FASHIOND_INPUT_QUOTA_BYTES must be at least %d", minInputQuota)
	}
	return c.checkClientLimits()
}

// checkClientLimits validates the per-key limits of the client API.
func (c *Config) checkClientLimits() error {
	switch {
	case c.RateLimit != -1 && !(c.RateLimit > 0):
		return fmt.Errorf("FASHIOND_RATE_LIMIT must be a positive number of requests per second or -1 (no limit), not %v", c.RateLimit)
	case c.RateLimit > 0 && c.RateBurst < 1:
		return fmt.Errorf("FASHIOND_RATE_BURST must be at least 1, not %d", c.RateBurst)
	case c.MaxInFlight != -1 && c.MaxInFlight < 1:
		return fmt.Errorf("FASHIOND_MAX_IN_FLIGHT must be at least 1 or -1 (no limit), not %d", c.MaxInFlight)
	}
	return nil
}

// Bounds of FASHIOND_S3_PRESIGN: SigV4 presigned URLs live at most 7 days.
const (
	minPresign = time.Second
	maxPresign = 7 * 24 * time.Hour
)

// checkStorage validates the blob store settings. No message repeats a
// credential.
func (c *Config) checkStorage() error {
	c.Storage = strings.TrimSpace(c.Storage)
	if c.Storage == "" {
		c.Storage = StorageLocal
	}
	switch strings.ToLower(strings.TrimSpace(c.S3PathStyle)) {
	case "auto", "":
		c.S3PathStyle = "auto"
	case "on", "true", "1":
		c.S3PathStyle = "on"
	case "off", "false", "0":
		c.S3PathStyle = "off"
	default:
		return fmt.Errorf("FASHIOND_S3_PATH_STYLE must be auto, on or off, not %q", c.S3PathStyle)
	}
	if c.S3Presign < 0 || c.S3Presign > 0 && (c.S3Presign < minPresign || c.S3Presign > maxPresign) {
		return fmt.Errorf("FASHIOND_S3_PRESIGN must be 0 (no presigning) or from %s to %s, not %s", minPresign, maxPresign, c.S3Presign)
	}
	if !c.IsS3() {
		if c.S3Presign > 0 {
			return errors.New("FASHIOND_S3_PRESIGN needs FASHIOND_STORAGE=s3://bucket[/prefix]")
		}
		return nil
	}
	if _, _, err := storage.ParseS3URL(c.Storage); err != nil {
		return fmt.Errorf("FASHIOND_STORAGE must be local or s3://bucket[/prefix]: %w", err)
	}
	if _, _, err := storage.ParseEndpoint(c.S3Endpoint); err != nil {
		return fmt.Errorf("FASHIOND_S3_ENDPOINT: %w", err)
	}
	switch {
	case c.S3AccessKey == "" || c.S3SecretKey == "":
		return errors.New("FASHIOND_STORAGE=s3://… needs FASHIOND_S3_ACCESS_KEY and FASHIOND_S3_SECRET_KEY (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)")
	case c.S3Presign > 0 && c.CDNURL != "":
		return errors.New("FASHIOND_CDN_URL and FASHIOND_S3_PRESIGN exclude each other: result URLs are either {cdn_url}/key or presigned")
	}
	return nil
}

// memSize is a redis-server memory size: digits and an optional unit.
var memSize = regexp.MustCompile(`^[1-9][0-9]*(b|k|kb|m|mb|g|gb)?$`)

// autoMaxConns is half the process's open-file limit (the other half for
// Redis connections, blobs and models), within [minConns, maxConnsCeiling].
func autoMaxConns() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 512
	}
	return int(min(max(lim.Cur/2, minConns), maxConnsCeiling))
}

// envFirst is the first of the variables keys that is set and not empty,
// else d.
func envFirst(d string, keys ...string) string {
	for _, k := range keys {
		if v := os.Getenv(k); v != "" {
			return v
		}
	}
	return d
}

func envStr(k, d string) string {
	if v, ok := os.LookupEnv(k); ok {
		return v
	}
	return d
}

func (c *Config) envInt(k string, d int) int {
	return int(c.envInt64(k, int64(d)))
}

func (c *Config) envInt64(k string, d int64) int64 {
	if v, ok := os.LookupEnv(k); ok {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err == nil {
			return n
		}
		c.envErrs = append(c.envErrs, fmt.Sprintf("%s=%q is not an integer", k, v))
	}
	return d
}

func (c *Config) envFloat(k string, d float64) float64 {
	if v, ok := os.LookupEnv(k); ok {
		x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err == nil {
			return x
		}
		c.envErrs = append(c.envErrs, fmt.Sprintf("%s=%q is not a number", k, v))
	}
	return d
}

func (c *Config) envDur(k string, d time.Duration) time.Duration {
	if v, ok := os.LookupEnv(k); ok {
		x, err := time.ParseDuration(strings.TrimSpace(v))
		if err == nil {
			return x
		}
		c.envErrs = append(c.envErrs, fmt.Sprintf("%s=%q is not a duration (e.g. 72h)", k, v))
	}
	return d
}
