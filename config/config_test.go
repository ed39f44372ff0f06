package config

import (
	"bytes"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"
)

func parse(t *testing.T, env map[string]string, args ...string) (Config, error) {
	t.Helper()
	// The environment of `make test` sets FASHIOND_* (models dir, ORT
	// library): start every case from a clean one.
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "FASHIOND_") || strings.HasPrefix(k, "AWS_") {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	var c Config
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	c.Register(fs)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	return c, c.Finish()
}

func TestConfig(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		check   func(Config) bool
		wantErr string
	}{
		{"defaults", nil, nil, func(c Config) bool {
			return c.Addr == "127.0.0.1:8080" && c.PublicURL == "http://127.0.0.1:8080" &&
				c.CDNURL == "http://127.0.0.1:8080/cdn" && c.Retention == 72*time.Hour && c.ModelsDir == "data/models"
		}, ""},
		{"env", map[string]string{"FASHIOND_ADDR": "0.0.0.0:9", "FASHIOND_PUBLIC_URL": "https://x.example/", "FASHIOND_RETENTION": "1h"}, nil,
			func(c Config) bool {
				return c.Addr == "0.0.0.0:9" && c.PublicURL == "https://x.example" && c.CDNURL == "https://x.example/cdn" && c.Retention == time.Hour
			}, ""},
		{"flag wins over env", map[string]string{"FASHIOND_ADDR": "0.0.0.0:9"}, []string{"-addr", "127.0.0.1:7"},
			func(c Config) bool { return c.Addr == "127.0.0.1:7" }, ""},
		{"cdn override", map[string]string{"FASHIOND_CDN_URL": "https://cdn.example/r"}, nil,
			func(c Config) bool { return c.CDNURL == "https://cdn.example/r" }, ""},
		{"bad secret", map[string]string{"FASHIOND_WEBHOOK_SECRET": "nope"}, nil, nil, "whsec_"},
		{"bad device", map[string]string{"FASHIOND_DEVICE": "tpu"}, nil, nil, "FASHIOND_DEVICE"},
		{"bad int", map[string]string{"FASHIOND_CONCURRENCY": "lots"}, nil, nil, "FASHIOND_CONCURRENCY"},
		{"bad duration", map[string]string{"FASHIOND_RETENTION": "3 days"}, nil, nil, "FASHIOND_RETENTION"},
		{"bad policy", map[string]string{"FASHIOND_UPSCALE_POLICY": "magic"}, nil, nil, "FASHIOND_UPSCALE_POLICY"},
		{"limit defaults", nil, nil, func(c Config) bool {
			return c.ReadHeaderTimeout == 10*time.Second && c.BodyTimeout == 10*time.Second && c.MinBodyRate == 256<<10 && c.IdleTimeout == time.Minute &&
				c.MaxConns >= minConns && c.MaxConns <= maxConnsCeiling && c.MaxLargeBodies == 4 && c.InputQuota == 1<<30 &&
				c.RedisMaxMemory == "1gb" && c.MaxCrashes == 3 && c.MaxJobAge == time.Hour
		}, ""},
		{"limits from env", map[string]string{"FASHIOND_MAX_CONNS": "64", "FASHIOND_REDIS_MAXMEMORY": "512mb", "FASHIOND_MAX_JOB_AGE": "2h"}, nil,
			func(c Config) bool {
				return c.MaxConns == 64 && c.RedisMaxMemory == "512mb" && c.MaxJobAge == 2*time.Hour
			}, ""},
		{"slow body rate", map[string]string{"FASHIOND_MIN_BODY_RATE": "10"}, nil, nil, "FASHIOND_MIN_BODY_RATE"},
		{"too few conns", map[string]string{"FASHIOND_MAX_CONNS": "3"}, nil, nil, "FASHIOND_MAX_CONNS"},
		{"bad maxmemory", map[string]string{"FASHIOND_REDIS_MAXMEMORY": "lots"}, nil, nil, "FASHIOND_REDIS_MAXMEMORY"},
		{"tiny quota", map[string]string{"FASHIOND_INPUT_QUOTA_BYTES": "100"}, nil, nil, "FASHIOND_INPUT_QUOTA_BYTES"},
		{"per-ip default", map[string]string{"FASHIOND_MAX_CONNS": "64"}, nil, func(c Config) bool { return c.MaxConnsPerIP == 16 }, ""},
		{"per-ip off", map[string]string{"FASHIOND_MAX_CONNS_PER_IP": "-1"}, nil, func(c Config) bool { return c.MaxConnsPerIP == -1 }, ""},
		{"per-ip invalid", map[string]string{"FASHIOND_MAX_CONNS_PER_IP": "-5"}, nil, nil, "FASHIOND_MAX_CONNS_PER_IP"},
		{"zero crashes", map[string]string{"FASHIOND_MAX_CRASHES": "0"}, nil, nil, "FASHIOND_MAX_CRASHES"},
		{"zero idle", map[string]string{"FASHIOND_IDLE_TIMEOUT": "0s"}, nil, nil, "FASHIOND_IDLE_TIMEOUT"},
		{"body timeout from env", map[string]string{"FASHIOND_BODY_TIMEOUT": "2s"}, nil, func(c Config) bool { return c.BodyTimeout == 2*time.Second }, ""},
		{"storage default", nil, nil, func(c Config) bool {
			return c.Storage == "local" && !c.IsS3() && c.S3PathStyle == "auto" && c.S3Presign == 0
		}, ""},
		{"s3", s3Env(map[string]string{"FASHIOND_S3_ENDPOINT": "http://127.0.0.1:9000", "FASHIOND_S3_REGION": "eu-west-3", "FASHIOND_S3_PATH_STYLE": "true"}), nil,
			func(c Config) bool {
				return c.IsS3() && c.Storage == "s3://results/prod" && c.S3Endpoint == "http://127.0.0.1:9000" && c.S3Region == "eu-west-3" &&
					c.S3PathStyle == "on" && c.S3AccessKey == "AKID" && string(c.S3SecretKey) == "sekrit" && c.CDNURL == "http://127.0.0.1:8080/cdn"
			}, ""},
		{"s3 from AWS variables", map[string]string{"FASHIOND_STORAGE": "s3://results", "AWS_ACCESS_KEY_ID": "AKAWS", "AWS_SECRET_ACCESS_KEY": "awssecret",
			"AWS_SESSION_TOKEN": "tok", "AWS_REGION": "us-west-2", "AWS_ENDPOINT_URL": "https://minio.internal:9000"}, nil,
			func(c Config) bool {
				return c.S3AccessKey == "AKAWS" && string(c.S3SecretKey) == "awssecret" && string(c.S3SessionToken) == "tok" &&
					c.S3Region == "us-west-2" && c.S3Endpoint == "https://minio.internal:9000"
			}, ""},
		{"FASHIOND_S3 wins over AWS", s3Env(map[string]string{"AWS_ACCESS_KEY_ID": "AKAWS", "AWS_REGION": "us-west-2"}), nil,
			func(c Config) bool { return c.S3AccessKey == "AKID" && c.S3Region == "us-west-2" }, ""},
		{"s3 flags", s3Env(nil), []string{"-s3-presign", "12h", "-s3-path-style", "off", "-storage", "s3://other"},
			func(c Config) bool {
				return c.Storage == "s3://other" && c.S3Presign == 12*time.Hour && c.S3PathStyle == "off"
			}, ""},
		{"s3 cdn prefix", s3Env(map[string]string{"FASHIOND_CDN_URL": "https://results.example.com"}), nil,
			func(c Config) bool { return c.CDNURL == "https://results.example.com" && c.S3Presign == 0 }, ""},
		{"s3 without keys", map[string]string{"FASHIOND_STORAGE": "s3://results"}, nil, nil, "FASHIOND_S3_ACCESS_KEY"},
		{"s3 without secret", map[string]string{"FASHIOND_STORAGE": "s3://results", "FASHIOND_S3_ACCESS_KEY": "AKID"}, nil, nil, "FASHIOND_S3_SECRET_KEY"},
		{"bad storage", map[string]string{"FASHIOND_STORAGE": "gs://results"}, nil, nil, "FASHIOND_STORAGE"},
		{"bad bucket", s3Env(map[string]string{"FASHIOND_STORAGE": "s3://Results_1"}), nil, nil, "FASHIOND_STORAGE"},
		{"bad prefix", s3Env(map[string]string{"FASHIOND_STORAGE": "s3://results/../x"}), nil, nil, "FASHIOND_STORAGE"},
		{"bad endpoint", s3Env(map[string]string{"FASHIOND_S3_ENDPOINT": "minio:9000"}), nil, nil, "FASHIOND_S3_ENDPOINT"},
		{"bad path style", map[string]string{"FASHIOND_S3_PATH_STYLE": "sometimes"}, nil, nil, "FASHIOND_S3_PATH_STYLE"},
		{"presign too long", s3Env(map[string]string{"FASHIOND_S3_PRESIGN": "200h"}), nil, nil, "FASHIOND_S3_PRESIGN"},
		{"presign negative", s3Env(map[string]string{"FASHIOND_S3_PRESIGN": "-1h"}), nil, nil, "FASHIOND_S3_PRESIGN"},
		{"presign not a duration", s3Env(map[string]string{"FASHIOND_S3_PRESIGN": "1 day"}), nil, nil, "FASHIOND_S3_PRESIGN"},
		{"presign with local", map[string]string{"FASHIOND_S3_PRESIGN": "1h"}, nil, nil, "FASHIOND_STORAGE=s3"},
		{"presign and cdn", s3Env(map[string]string{"FASHIOND_S3_PRESIGN": "1h", "FASHIOND_CDN_URL": "https://cdn.example"}), nil, nil, "exclude"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parse(t, tc.env, tc.args...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to mention %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(c) {
				t.Fatalf("unexpected config %+v", c)
			}
		})
	}
}

func TestBatchingValues(t *testing.T) {
	for in, want := range map[string]string{"auto": "auto", "on": "on", "true": "on", "off": "off", "0": "off"} {
		c, err := parse(t, map[string]string{"FASHIOND_BATCHING": in})
		if err != nil || c.Batching != want {
			t.Fatalf("FASHIOND_BATCHING=%s: %q, %v; want %q", in, c.Batching, err, want)
		}
	}
	if _, err := parse(t, map[string]string{"FASHIOND_BATCHING": "sometimes"}); err == nil {
		t.Fatal("FASHIOND_BATCHING=sometimes accepted")
	}
}

// TestInvalidSettings: every invalid value is a start-up error naming its
// variable (issue 12: several of these used to start silently).
func TestInvalidSettings(t *testing.T) {
	tests := []struct{ env, value string }{
		{"FASHIOND_LOG_FORMAT", "xml"},
		{"FASHIOND_LOG_LEVEL", "verbose"},
		{"FASHIOND_MAX_BODY_BYTES", "-1"},
		{"FASHIOND_MAX_BODY_BYTES", "12abc"},
		{"FASHIOND_PUBLIC_URL", "ftp://x"},
		{"FASHIOND_PUBLIC_URL", "http://"},
		{"FASHIOND_PUBLIC_URL", "https://x.example/?a=1"},
		{"FASHIOND_CDN_URL", "cdn.example.com"},
		{"FASHIOND_ADDR", "8080"},
		{"FASHIOND_ADDR", "127.0.0.1:http-alt"},
		{"FASHIOND_ADDR", "127.0.0.1:70000"},
		{"FASHIOND_METRICS_ADDR", "localhost"},
		{"FASHIOND_REDIS_URL", "http://127.0.0.1:6379"},
		{"FASHIOND_REDIS_URL", "redis://"},
		{"FASHIOND_REDIS_URL", "redis+sentinel://127.0.0.1:26379"},
		{"FASHIOND_REDIS_URL", "redis+sentinel://h:1,h:99999/mymaster"},
		{"FASHIOND_REDIS_URL", "redis+sentinel://h:1/mymaster?db=1&timeout=3"},
		{"FASHIOND_REDIS_URL", "redis+cluster://h:1?db=1"},
		{"FASHIOND_REDIS_URL", "redis+cluster://h:1/0"},
		{"FASHIOND_API_KEYS", "key-without-credits"},
		{"FASHIOND_API_KEYS", "k:-5"},
		{"FASHIOND_FETCH_ALLOW", "10.0.0.0/33"},
		{"FASHIOND_FETCH_ALLOW", "intranet"},
		{"FASHIOND_WEBHOOK_SECRET", "secret"},
		{"FASHIOND_RETENTION", "0s"},
		{"FASHIOND_RETENTION", "-1h"},
		{"FASHIOND_RETENTION", "3 days"},
		{"FASHIOND_QUEUES", "tryon,Bad Model"},
		{"FASHIOND_CONCURRENCY", "0"},
		{"FASHIOND_CONCURRENCY", "lots"},
		{"FASHIOND_SHUTDOWN_GRACE", "0s"},
		{"FASHIOND_DATA_DIR", ""},
		{"FASHIOND_ORT_LIB", ""},
		{"FASHIOND_DEVICE", "tpu"},
		{"FASHIOND_INTRA_OP_THREADS", "-2"},
		{"FASHIOND_CUDA_DEVICE_ID", "-1"},
		{"FASHIOND_CUDA_MEM_LIMIT", "-1"},
		{"FASHIOND_CUDNN_CONV_ALGO", "FASTEST"},
		{"FASHIOND_CUDA_ROUTE", "tensorrt"},
		{"FASHIOND_CUDA_ARENA_EXTEND", "doubling"},
		{"FASHIOND_UPSCALE_POLICY", "magic"},
		{"FASHIOND_BATCHING", "sometimes"},
		{"FASHIOND_GENERATIVE_INPAINTING", "SD 1.5"},
		{"FASHIOND_ADMIN_TOKEN", "short"},
		{"FASHIOND_GENERATIVE_TEXT_TO_IMAGE", "../etc"},
		{"FASHIOND_READ_HEADER_TIMEOUT", "0s"},
		{"FASHIOND_BODY_TIMEOUT", "0s"},
		{"FASHIOND_MIN_BODY_RATE", "10"},
		{"FASHIOND_IDLE_TIMEOUT", "-1s"},
		{"FASHIOND_MAX_CONNS", "3"},
		{"FASHIOND_MAX_CONNS_PER_IP", "-5"},
		{"FASHIOND_MAX_LARGE_BODIES", "0"},
		{"FASHIOND_INPUT_QUOTA_BYTES", "100"},
		{"FASHIOND_REDIS_MAXMEMORY", "lots"},
		{"FASHIOND_MAX_CRASHES", "0"},
		{"FASHIOND_MAX_JOB_AGE", "0s"},
		{"FASHIOND_RATE_LIMIT", "0"},
		{"FASHIOND_RATE_LIMIT", "-2"},
		{"FASHIOND_RATE_LIMIT", "fast"},
		{"FASHIOND_RATE_BURST", "0"},
		{"FASHIOND_MAX_IN_FLIGHT", "0"},
		{"FASHIOND_MAX_IN_FLIGHT", "-3"},
	}
	for _, tc := range tests {
		t.Run(tc.env+"="+tc.value, func(t *testing.T) {
			_, err := parse(t, map[string]string{tc.env: tc.value})
			if err == nil || !strings.Contains(err.Error(), tc.env) {
				t.Fatalf("%s=%q: err = %v, want an error naming %s", tc.env, tc.value, err, tc.env)
			}
		})
	}
}

// TestValidSettings: the accepted spellings of the checked settings.
func TestValidSettings(t *testing.T) {
	tests := []struct {
		env   map[string]string
		check func(Config) bool
	}{
		{map[string]string{"FASHIOND_LOG_FORMAT": "JSON", "FASHIOND_LOG_LEVEL": "Warning"},
			func(c Config) bool { return c.LogFormat == "json" && c.LogLevel == "warning" }},
		{map[string]string{"FASHIOND_ADDR": ":8080"}, func(c Config) bool { return c.PublicURL == "http://:8080" }},
		{map[string]string{"FASHIOND_METRICS_ADDR": "127.0.0.1:9100"}, func(c Config) bool { return c.MetricsAddr == "127.0.0.1:9100" }},
		{map[string]string{"FASHIOND_REDIS_URL": "rediss://:pw@redis.example:6380/2"}, func(c Config) bool { return c.RedisURL != "" }},
		{map[string]string{"FASHIOND_REDIS_URL": "unix:///run/redis.sock"}, func(c Config) bool { return c.RedisURL != "" }},
		{map[string]string{"FASHIOND_REDIS_URL": "redis+sentinel://:pw@s1:26379,s2:26379/mymaster?db=2&sentinel_password=sp"},
			func(c Config) bool { return c.RedisURL != "" }},
		{map[string]string{"FASHIOND_REDIS_URL": "redis+cluster://:pw@a:7000,b:7001?wait_replicas=1"},
			func(c Config) bool { return c.RedisURL != "" }},
		{map[string]string{"FASHIOND_FETCH_ALLOW": "10.0.0.0/8, 192.168.1.5,::1"}, func(c Config) bool { return true }},
		{map[string]string{"FASHIOND_CUDNN_CONV_ALGO": "exhaustive"}, func(c Config) bool { return c.CUDNNConvAlgo == "EXHAUSTIVE" }},
		{map[string]string{"FASHIOND_QUEUES": "tryon, image-to-video"}, func(c Config) bool { return c.Queues != "" }},
		{map[string]string{"FASHIOND_SHUTDOWN_GRACE": "30s"}, func(c Config) bool { return c.ShutdownGrace == 30*time.Second }},
		{map[string]string{"FASHIOND_GENERATIVE_INPAINTING": "sd15-inpaint", "FASHIOND_GENERATIVE_TEXT_TO_IMAGE": "none"},
			func(c Config) bool {
				return c.GenerativeInpainting == "sd15-inpaint" && c.GenerativeTextToImage == "none"
			}},
		{nil, func(c Config) bool { return c.ShutdownGrace == DefaultShutdownGrace && c.MetricsAddr == "" }},
		{nil, func(c Config) bool { return c.RateLimit == 20 && c.RateBurst == 100 && c.MaxInFlight == 1000 }},
		{map[string]string{"FASHIOND_RATE_LIMIT": "0.5", "FASHIOND_RATE_BURST": "3", "FASHIOND_MAX_IN_FLIGHT": "-1"},
			func(c Config) bool { return c.RateLimit == 0.5 && c.RateBurst == 3 && c.MaxInFlight == -1 }},
		{map[string]string{"FASHIOND_RATE_LIMIT": "-1", "FASHIOND_RATE_BURST": "0"}, func(c Config) bool { return c.RateLimit == -1 }},
	}
	for i, tc := range tests {
		c, err := parse(t, tc.env)
		if err != nil || !tc.check(c) {
			t.Fatalf("case %d %v: %+v, %v", i, tc.env, c, err)
		}
	}
}

// TestAllErrorsAtOnce: two invalid settings are both reported.
func TestAllErrorsAtOnce(t *testing.T) {
	_, err := parse(t, map[string]string{"FASHIOND_LOG_FORMAT": "xml", "FASHIOND_PUBLIC_URL": "ftp://x"})
	if err == nil || !strings.Contains(err.Error(), "FASHIOND_LOG_FORMAT") || !strings.Contains(err.Error(), "FASHIOND_PUBLIC_URL") {
		t.Fatalf("err = %v, want both variables named", err)
	}
}

// TestRedisURLNotEchoed: the error for a bad Redis URL never repeats its
// password.
func TestRedisURLNotEchoed(t *testing.T) {
	_, err := parse(t, map[string]string{"FASHIOND_REDIS_URL": "http://:hunter2secret@h:1"})
	if err == nil || strings.Contains(err.Error(), "hunter2secret") {
		t.Fatalf("err = %v", err)
	}
}

// TestCommandFlags: each subcommand's flag set holds only its own settings;
// the others still take their environment values.
func TestCommandFlags(t *testing.T) {
	tests := []struct {
		cmd        string
		has, lacks []string
	}{
		{"serve", []string{"addr", "redis-url", "device", "queues", "metrics-addr", "shutdown-grace", "models-mirror", "storage", "s3-presign"}, []string{"s3-secret-key"}},
		{"api", []string{"addr", "redis-url", "public-url", "max-body-bytes", "log-format", "storage", "s3-endpoint"}, []string{"device", "queues", "ort-lib", "batching", "redis-maxmemory"}},
		{"worker", []string{"queues", "concurrency", "device", "redis-url", "shutdown-grace", "storage", "s3-region"}, []string{"addr", "max-conns", "redis-maxmemory"}},
		{"keys", []string{"redis-url", "data-dir", "redis-maxmemory", "webhook-secret", "storage"}, []string{"addr", "device", "queues", "max-body-bytes"}},
		{"models list", []string{"models-dir", "models-mirror", "ort-lib", "device"}, []string{"addr", "redis-url", "api-keys", "storage"}},
		{"generate", []string{"models-dir", "device", "cuda-mem-limit"}, []string{"addr", "redis-url", "models-mirror", "batching"}},
		{"bench diffusion", []string{"models-dir", "device"}, []string{"addr", "redis-url", "batching", "concurrency"}},
		{"version", nil, []string{"addr", "log-level"}},
	}
	for _, tc := range tests {
		t.Run(tc.cmd, func(t *testing.T) {
			t.Setenv("FASHIOND_DEVICE", "cpu")
			var c Config
			fs := flag.NewFlagSet(tc.cmd, flag.ContinueOnError)
			c.Register(fs)
			for _, n := range tc.has {
				if fs.Lookup(n) == nil {
					t.Errorf("%s: no -%s", tc.cmd, n)
				}
			}
			for _, n := range tc.lacks {
				if fs.Lookup(n) != nil {
					t.Errorf("%s: lists -%s, not its own", tc.cmd, n)
				}
			}
			if c.Device != "cpu" || c.Addr != "127.0.0.1:8080" {
				t.Errorf("hidden settings lost their values: device %q addr %q", c.Device, c.Addr)
			}
		})
	}
}

func TestParseAPIKeys(t *testing.T) {
	got, err := ParseAPIKeys(" a:1, ,b:0,c : 20 ")
	want := []KeyGrant{{"a", 1}, {"b", 0}, {"c", 20}}
	if err != nil || len(got) != len(want) {
		t.Fatalf("%v, %v", got, err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("entry %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	_, err = ParseAPIKeys("a:1,secret-key")
	if err == nil || !strings.Contains(err.Error(), "entry 2") || strings.Contains(err.Error(), "secret-key") {
		t.Fatalf("err = %v, want entry 2 named without the key", err)
	}
}

func FuzzParseAPIKeys(f *testing.F) {
	for _, s := range []string{"", "a:1", "a:1,b:2", "a", ":3", "a:-1", "a:1:2", ",,,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		gs, err := ParseAPIKeys(spec)
		if err != nil {
			if strings.Contains(spec, ":") && strings.Contains(err.Error(), spec) && len(spec) > 8 {
				t.Fatalf("error repeats the spec: %v", err)
			}
			return
		}
		for _, g := range gs {
			if g.Key == "" || g.Credits < 0 || strings.Contains(g.Key, ",") {
				t.Fatalf("bad grant %+v from %q", g, spec)
			}
		}
	})
}

func FuzzBaseURL(f *testing.F) {
	for _, s := range []string{"", "http://x", "https://a.example/p", "ftp://x", "http://", "http://u:p@h/", "//h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if checkBaseURL(s) != nil || s == "" {
			return
		}
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			t.Fatalf("accepted %q", s)
		}
	})
}

// s3Env is a valid S3 storage environment with extra settings on top.
func s3Env(extra map[string]string) map[string]string {
	env := map[string]string{"FASHIOND_STORAGE": "s3://results/prod", "FASHIOND_S3_ACCESS_KEY": "AKID", "FASHIOND_S3_SECRET_KEY": "sekrit"}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

// TestS3SecretNotPrinted: a Config printed with %v, %+v or %#v, or logged,
// never shows the secret key or the session token, and no S3 error names
// them.
func TestS3SecretNotPrinted(t *testing.T) {
	c, err := parse(t, s3Env(map[string]string{"FASHIOND_S3_SECRET_KEY": "hunter2-s3-secret", "FASHIOND_S3_SESSION_TOKEN": "tok-9f8e7d"}))
	if err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("config", "secret", c.S3SecretKey, "config", c)
	for _, out := range []string{fmt.Sprintf("%v", c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c), logged.String()} {
		if strings.Contains(out, "hunter2-s3-secret") || strings.Contains(out, "tok-9f8e7d") {
			t.Fatalf("the secret is printed: %s", out)
		}
	}
	if !strings.Contains(fmt.Sprintf("%+v", c), "S3SecretKey:[redacted]") {
		t.Fatalf("%+v: want S3SecretKey:[redacted]", c)
	}
	_, err = parse(t, map[string]string{"FASHIOND_STORAGE": "s3://x", "FASHIOND_S3_SECRET_KEY": "hunter2-s3-secret",
		"FASHIOND_S3_ENDPOINT": "http://a:hunter2-s3-secret@h"})
	if err == nil || strings.Contains(err.Error(), "hunter2-s3-secret") {
		t.Fatalf("err = %v", err)
	}
}
