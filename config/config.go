// Package config is fashiond's one typed configuration: every setting comes
// from a command-line flag or a FASHIOND_* environment variable (flags win),
// with the defaults documented in README.md.
package config

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
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
	MinBodyRate       int64         // FASHIOND_MIN_BODY_RATE: bytes/s a body must arrive at (its deadline is 10 s + size/rate)
	IdleTimeout       time.Duration // FASHIOND_IDLE_TIMEOUT: keep-alive connections idle this long are closed
	MaxConns          int           // FASHIOND_MAX_CONNS: open HTTP connections (0: half the open-file limit, at most 4096)
	MaxConnsPerIP     int           // FASHIOND_MAX_CONNS_PER_IP: open connections of one client address (0: MaxConns/4; -1: no cap, behind a reverse proxy)
	MaxLargeBodies    int           // FASHIOND_MAX_LARGE_BODIES: bodies of 1 MiB or more received at once
	InputQuota        int64         // FASHIOND_INPUT_QUOTA_BYTES: input image bytes one key's unfinished jobs may hold
	RedisMaxMemory    string        // FASHIOND_REDIS_MAXMEMORY: maxmemory of the private redis-server (noeviction)
	MaxCrashes        int           // FASHIOND_MAX_CRASHES: worker crashes of its own after which a job is failed
	MaxJobAge         time.Duration // FASHIOND_MAX_JOB_AGE: a job unfinished this long after submission is failed

	ORTLib         string // FASHIOND_ORT_LIB: libonnxruntime.so path
	ModelsDir      string // FASHIOND_MODELS_DIR: the model repository
	ModelsMirror   string // FASHIOND_MODELS_MIRROR: directory to install models from
	Device         string // FASHIOND_DEVICE: auto, cpu or cuda
	IntraOpThreads int    // FASHIOND_INTRA_OP_THREADS: ORT threads per session (0 = CPUs)
	CUDADeviceID   int    // FASHIOND_CUDA_DEVICE_ID
	CUDAMemLimit   int64  // FASHIOND_CUDA_MEM_LIMIT: bytes, 0 = unlimited
	CUDNNConvAlgo  string // FASHIOND_CUDNN_CONV_ALGO: EXHAUSTIVE, HEURISTIC, DEFAULT
	UpscalePolicy  string // FASHIOND_UPSCALE_POLICY: auto, sr-fast, sr-quality, lanczos
	Batching       string // FASHIOND_BATCHING: dynamic batching of model calls: auto (on with CUDA, off on CPU), on, off

	LogLevel  string // FASHIOND_LOG_LEVEL: debug, info, warn, error
	LogFormat string // FASHIOND_LOG_FORMAT: text or json
}

// Defaults returns the documented defaults.
func Defaults() Config {
	return Config{
		Addr:         "127.0.0.1:8080",
		DataDir:      "data",
		Retention:    72 * time.Hour,
		Concurrency:  2,
		MaxBodyBytes: 100 << 20, // two 25 MB images as base64 fit

		ReadHeaderTimeout: 10 * time.Second,
		MinBodyRate:       256 << 10,
		IdleTimeout:       60 * time.Second,
		MaxLargeBodies:    4,
		InputQuota:        1 << 30,
		RedisMaxMemory:    "1gb",
		MaxCrashes:        3,
		MaxJobAge:         time.Hour,
		ORTLib:            ".deps/onnxruntime/1.30.0/libonnxruntime.so.1",
		Device:            "auto",
		UpscalePolicy:     "auto",
		Batching:          "auto",
		CUDNNConvAlgo:     "HEURISTIC",
		LogLevel:          "info",
		LogFormat:         "text",
	}
}

// Register binds every field to a flag on fs, with the environment (or the
// default) as the flag's default value.
func (c *Config) Register(fs *flag.FlagSet) {
	d := Defaults()
	fs.StringVar(&c.Addr, "addr", envStr("FASHIOND_ADDR", d.Addr), "HTTP listen address (FASHIOND_ADDR)")
	fs.StringVar(&c.DataDir, "data-dir", envStr("FASHIOND_DATA_DIR", d.DataDir), "data directory (FASHIOND_DATA_DIR)")
	fs.StringVar(&c.PublicURL, "public-url", envStr("FASHIOND_PUBLIC_URL", ""), "public base URL, {base_url} (FASHIOND_PUBLIC_URL; default http://ADDR)")
	fs.StringVar(&c.CDNURL, "cdn-url", envStr("FASHIOND_CDN_URL", ""), "URL that serves results, {cdn_url} (FASHIOND_CDN_URL; default {base_url}/cdn)")
	fs.StringVar(&c.RedisURL, "redis-url", envStr("FASHIOND_REDIS_URL", ""), "external Redis URL (FASHIOND_REDIS_URL; default: a private redis-server)")
	fs.StringVar(&c.APIKeys, "api-keys", envStr("FASHIOND_API_KEYS", ""), "keys provisioned at start, key:credits,... (FASHIOND_API_KEYS)")
	fs.StringVar(&c.FetchAllow, "fetch-allow", envStr("FASHIOND_FETCH_ALLOW", ""), "CIDRs exempt from the private-address block (FASHIOND_FETCH_ALLOW)")
	fs.StringVar(&c.WebhookSecret, "webhook-secret", envStr("FASHIOND_WEBHOOK_SECRET", ""), "Standard Webhooks secret whsec_... (FASHIOND_WEBHOOK_SECRET)")
	fs.DurationVar(&c.Retention, "retention", envDur("FASHIOND_RETENTION", d.Retention), "job and output retention (FASHIOND_RETENTION)")
	fs.StringVar(&c.Queues, "queues", envStr("FASHIOND_QUEUES", ""), "models this worker serves, comma separated (FASHIOND_QUEUES; default all)")
	fs.IntVar(&c.Concurrency, "concurrency", envInt("FASHIOND_CONCURRENCY", d.Concurrency), "jobs run at once per worker (FASHIOND_CONCURRENCY)")
	fs.Int64Var(&c.MaxBodyBytes, "max-body-bytes", int64(envInt("FASHIOND_MAX_BODY_BYTES", int(d.MaxBodyBytes))), "largest /v1/run body (FASHIOND_MAX_BODY_BYTES)")
	fs.DurationVar(&c.ReadHeaderTimeout, "read-header-timeout", envDur("FASHIOND_READ_HEADER_TIMEOUT", d.ReadHeaderTimeout), "time allowed to send request headers (FASHIOND_READ_HEADER_TIMEOUT)")
	fs.Int64Var(&c.MinBodyRate, "min-body-rate", int64(envInt("FASHIOND_MIN_BODY_RATE", int(d.MinBodyRate))), "bytes per second a request body must arrive at (FASHIOND_MIN_BODY_RATE)")
	fs.DurationVar(&c.IdleTimeout, "idle-timeout", envDur("FASHIOND_IDLE_TIMEOUT", d.IdleTimeout), "idle keep-alive connections are closed after (FASHIOND_IDLE_TIMEOUT)")
	fs.IntVar(&c.MaxConns, "max-conns", envInt("FASHIOND_MAX_CONNS", 0), "open HTTP connections, 0 = half the open-file limit (FASHIOND_MAX_CONNS)")
	fs.IntVar(&c.MaxConnsPerIP, "max-conns-per-ip", envInt("FASHIOND_MAX_CONNS_PER_IP", 0), "open connections of one client address, 0 = a quarter of max-conns, -1 = no cap (FASHIOND_MAX_CONNS_PER_IP)")
	fs.IntVar(&c.MaxLargeBodies, "max-large-bodies", envInt("FASHIOND_MAX_LARGE_BODIES", d.MaxLargeBodies), "request bodies of 1 MiB or more received at once (FASHIOND_MAX_LARGE_BODIES)")
	fs.Int64Var(&c.InputQuota, "input-quota-bytes", int64(envInt("FASHIOND_INPUT_QUOTA_BYTES", int(d.InputQuota))), "input image bytes one key's unfinished jobs may hold (FASHIOND_INPUT_QUOTA_BYTES)")
	fs.StringVar(&c.RedisMaxMemory, "redis-maxmemory", envStr("FASHIOND_REDIS_MAXMEMORY", d.RedisMaxMemory), "maxmemory of the private redis-server, policy noeviction (FASHIOND_REDIS_MAXMEMORY)")
	fs.IntVar(&c.MaxCrashes, "max-crashes", envInt("FASHIOND_MAX_CRASHES", d.MaxCrashes), "worker crashes of its own after which a job is failed (FASHIOND_MAX_CRASHES)")
	fs.DurationVar(&c.MaxJobAge, "max-job-age", envDur("FASHIOND_MAX_JOB_AGE", d.MaxJobAge), "a job unfinished this long after submission is failed (FASHIOND_MAX_JOB_AGE)")
	fs.StringVar(&c.ORTLib, "ort-lib", envStr("FASHIOND_ORT_LIB", d.ORTLib), "ONNX Runtime shared library (FASHIOND_ORT_LIB)")
	fs.StringVar(&c.ModelsDir, "models-dir", envStr("FASHIOND_MODELS_DIR", ""), "model repository (FASHIOND_MODELS_DIR; default DATA_DIR/models)")
	fs.StringVar(&c.ModelsMirror, "models-mirror", envStr("FASHIOND_MODELS_MIRROR", ""), "directory to install models from (FASHIOND_MODELS_MIRROR; default ../shared/models when present)")
	fs.StringVar(&c.Device, "device", envStr("FASHIOND_DEVICE", d.Device), "inference device: auto, cpu or cuda (FASHIOND_DEVICE)")
	fs.IntVar(&c.IntraOpThreads, "intra-op-threads", envInt("FASHIOND_INTRA_OP_THREADS", 0), "ONNX Runtime threads per session, 0 = CPUs (FASHIOND_INTRA_OP_THREADS)")
	fs.IntVar(&c.CUDADeviceID, "cuda-device-id", envInt("FASHIOND_CUDA_DEVICE_ID", 0), "CUDA device id (FASHIOND_CUDA_DEVICE_ID)")
	fs.Int64Var(&c.CUDAMemLimit, "cuda-mem-limit", int64(envInt("FASHIOND_CUDA_MEM_LIMIT", 0)), "CUDA arena limit in bytes, 0 = none (FASHIOND_CUDA_MEM_LIMIT)")
	fs.StringVar(&c.CUDNNConvAlgo, "cudnn-conv-algo", envStr("FASHIOND_CUDNN_CONV_ALGO", d.CUDNNConvAlgo), "cuDNN conv algorithm search: EXHAUSTIVE, HEURISTIC, DEFAULT (FASHIOND_CUDNN_CONV_ALGO)")
	fs.StringVar(&c.UpscalePolicy, "upscale-policy", envStr("FASHIOND_UPSCALE_POLICY", d.UpscalePolicy), "tier upscaling: auto, sr-fast, sr-quality, lanczos (FASHIOND_UPSCALE_POLICY)")
	fs.StringVar(&c.Batching, "batching", envStr("FASHIOND_BATCHING", d.Batching), "dynamic batching of model calls: auto (on with CUDA, off on CPU), on, off (FASHIOND_BATCHING)")
	fs.StringVar(&c.LogLevel, "log-level", envStr("FASHIOND_LOG_LEVEL", d.LogLevel), "debug, info, warn or error (FASHIOND_LOG_LEVEL)")
	fs.StringVar(&c.LogFormat, "log-format", envStr("FASHIOND_LOG_FORMAT", d.LogFormat), "text or json (FASHIOND_LOG_FORMAT)")
}

// Finish fills derived defaults and validates. Call after fs.Parse.
func (c *Config) Finish() error {
	if len(envErrs) > 0 {
		return fmt.Errorf("config: %s", strings.Join(envErrs, "; "))
	}
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
	if c.WebhookSecret != "" && !strings.HasPrefix(c.WebhookSecret, "whsec_") {
		return fmt.Errorf("config: FASHIOND_WEBHOOK_SECRET must start with whsec_")
	}
	switch c.Device {
	case "auto", "cpu", "cuda":
	default:
		return fmt.Errorf("config: FASHIOND_DEVICE must be auto, cpu or cuda, not %q", c.Device)
	}
	switch c.UpscalePolicy {
	case "auto", "sr-fast", "sr-quality", "lanczos":
	default:
		return fmt.Errorf("config: FASHIOND_UPSCALE_POLICY must be auto, sr-fast, sr-quality or lanczos, not %q", c.UpscalePolicy)
	}
	switch c.Batching {
	case "auto", "on", "off":
	case "true", "1":
		c.Batching = "on"
	case "false", "0":
		c.Batching = "off"
	default:
		return fmt.Errorf("config: FASHIOND_BATCHING must be auto, on or off, not %q", c.Batching)
	}
	if c.Concurrency < 1 {
		return fmt.Errorf("config: FASHIOND_CONCURRENCY must be at least 1")
	}
	return c.finishLimits()
}

// Bounds of the operating limits.
const (
	minBodyRateFloor = 1 << 10 // bytes/s: below, a body deadline is meaningless
	maxConnsCeiling  = 4096
	minConns         = 16
)

// finishLimits validates the operating limits and derives MaxConns.
func (c *Config) finishLimits() error {
	switch {
	case c.MaxBodyBytes < 1<<10:
		return fmt.Errorf("config: FASHIOND_MAX_BODY_BYTES must be at least 1024")
	case c.ReadHeaderTimeout <= 0 || c.IdleTimeout <= 0 || c.MaxJobAge <= 0:
		return fmt.Errorf("config: FASHIOND_READ_HEADER_TIMEOUT, FASHIOND_IDLE_TIMEOUT and FASHIOND_MAX_JOB_AGE must be positive durations")
	case c.MinBodyRate < minBodyRateFloor:
		return fmt.Errorf("config: FASHIOND_MIN_BODY_RATE must be at least %d bytes per second", minBodyRateFloor)
	case c.MaxConns < 0 || c.MaxConns > 0 && c.MaxConns < minConns:
		return fmt.Errorf("config: FASHIOND_MAX_CONNS must be 0 (automatic) or at least %d", minConns)
	case c.MaxConnsPerIP < -1:
		return fmt.Errorf("config: FASHIOND_MAX_CONNS_PER_IP must be -1 (no cap), 0 (a quarter of FASHIOND_MAX_CONNS) or a count")
	case c.MaxLargeBodies < 1 || c.MaxCrashes < 1:
		return fmt.Errorf("config: FASHIOND_MAX_LARGE_BODIES and FASHIOND_MAX_CRASHES must be at least 1")
	case c.InputQuota < 1<<20:
		return fmt.Errorf("config: FASHIOND_INPUT_QUOTA_BYTES must be at least 1048576")
	case !memSize.MatchString(strings.ToLower(c.RedisMaxMemory)):
		return fmt.Errorf("config: FASHIOND_REDIS_MAXMEMORY must be a size such as 512mb or 2gb, not %q", c.RedisMaxMemory)
	}
	if c.MaxConns == 0 {
		c.MaxConns = autoMaxConns()
	}
	if c.MaxConnsPerIP == 0 {
		c.MaxConnsPerIP = max(c.MaxConns/4, 1)
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

func envStr(k, d string) string {
	if v, ok := os.LookupEnv(k); ok {
		return v
	}
	return d
}

// envErrs collects environment values that could not be parsed; Finish
// reports them so a typo never silently becomes a default.
var envErrs []string

func envInt(k string, d int) int {
	if v, ok := os.LookupEnv(k); ok {
		n, err := strconv.Atoi(v)
		if err == nil {
			return n
		}
		envErrs = append(envErrs, fmt.Sprintf("%s=%q is not an integer", k, v))
	}
	return d
}

func envDur(k string, d time.Duration) time.Duration {
	if v, ok := os.LookupEnv(k); ok {
		x, err := time.ParseDuration(v)
		if err == nil {
			return x
		}
		envErrs = append(envErrs, fmt.Sprintf("%s=%q is not a duration (e.g. 72h)", k, v))
	}
	return d
}
