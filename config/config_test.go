package config

import (
	"flag"
	"os"
	"strings"
	"testing"
	"time"
)

func parse(t *testing.T, env map[string]string, args ...string) (Config, error) {
	t.Helper()
	envErrs = nil
	// The environment of `make test` sets FASHIOND_* (models dir, ORT
	// library): start every case from a clean one.
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "FASHIOND_") {
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
			return c.ReadHeaderTimeout == 10*time.Second && c.MinBodyRate == 256<<10 && c.IdleTimeout == time.Minute &&
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
