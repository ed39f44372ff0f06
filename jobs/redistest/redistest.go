// Package redistest starts a private redis-server for tests, through
// package redisserver (the one start-and-ping of the module).
package redistest

import (
	"context"
	"io"
	"log/slog"
	"os/exec"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"fashiond/redisserver"
)

// startTimeout bounds the server's start.
const startTimeout = 20 * time.Second

// Start runs a redisserver in a temporary directory on a free loopback
// port and returns its address, open without a password (tests connect
// with a bare host:port); it is stopped when the test ends. It fails the
// test with a clear message when redis-server is not installed.
func Start(t testing.TB) (addr string) {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redistest: redis-server is not installed (apt-get install redis-server): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	srv, err := redisserver.Start(ctx, redisserver.Options{Dir: t.TempDir(), Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	if err := requirePass(ctx, srv.Addr(), srv.Password(), ""); err != nil {
		srv.Close()
		t.Fatalf("redistest: open the server without a password: %v", err)
	}
	t.Cleanup(func() {
		// Close authenticates with the server's password: set it again.
		if err := requirePass(context.Background(), srv.Addr(), "", srv.Password()); err != nil {
			t.Logf("redistest: restore the password before stopping: %v", err)
		}
		if err := srv.Close(); err != nil {
			t.Logf("redistest: %v", err)
		}
	})
	return srv.Addr()
}

// requirePass sets the server's password to pw, connecting with auth.
func requirePass(ctx context.Context, addr, auth, pw string) error {
	c := redis.NewClient(&redis.Options{Addr: addr, Password: auth})
	defer c.Close()
	return c.ConfigSet(ctx, "requirepass", pw).Err()
}
