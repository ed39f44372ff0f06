package redisserver

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func do(t *testing.T, s *Server, args ...string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", s.Addr(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	fmt.Fprintf(c, "AUTH %s\r\n", s.Password())
	r.ReadString('\n')
	fmt.Fprintf(c, "%s\r\n", strings.Join(args, " "))
	line, _ := r.ReadString('\n')
	if strings.HasPrefix(line, "$") && !strings.HasPrefix(line, "$-1") {
		v, _ := r.ReadString('\n')
		return strings.TrimSpace(v)
	}
	return strings.TrimSpace(line)
}

func TestDataSurvivesRestart(t *testing.T) {
	if !Available("") {
		t.Fatal("redis-server is not installed (make setup installs it)")
	}
	dir := t.TempDir()
	s, err := Start(context.Background(), Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if u, ok := Running(dir); !ok || u != s.URL() {
		t.Fatalf("Running(dir) = %q, %v; want %q", u, ok, s.URL())
	}
	if got := do(t, s, "SET", "k", "v1"); got != "+OK" {
		t.Fatalf("SET: %q", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	if _, ok := Running(dir); ok {
		t.Fatal("Running reports a stopped server")
	}
	s2, err := Start(context.Background(), Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if s2.Password() != s.Password() {
		t.Fatal("password not reused across restarts")
	}
	if got := do(t, s2, "GET", "k"); got != "v1" {
		t.Fatalf("after restart GET k = %q, want v1 (AOF persistence)", got)
	}
}

func TestRestartsAfterCrash(t *testing.T) {
	if !Available("") {
		t.Fatal("redis-server is not installed")
	}
	s, err := Start(context.Background(), Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	do(t, s, "SET", "x", "1")
	time.Sleep(1100 * time.Millisecond) // appendfsync everysec
	s.mu.Lock()
	s.cmd.Process.Kill()
	s.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if ping(s.Addr(), s.Password()) == nil {
			if got := do(t, s, "GET", "x"); got != "1" {
				t.Fatalf("after crash GET x = %q", got)
			}
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("redis-server was not restarted after a crash")
}

func TestNilClose(t *testing.T) {
	var s *Server
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestMemoryPolicy: the private server has a memory limit and the
// noeviction policy: at the limit a write fails with OOM and every key
// written before (keys with a TTL included, like job records) is still
// there.
func TestMemoryPolicy(t *testing.T) {
	if !Available("") {
		t.Fatal("redis-server is not installed (make setup installs it)")
	}
	s, err := Start(context.Background(), Options{Dir: t.TempDir(), MaxMemory: "4mb"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	opt, _ := redis.ParseURL(s.URL())
	c := redis.NewClient(opt)
	defer c.Close()
	cfg, err := c.ConfigGet(ctx, "maxmemory*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if cfg["maxmemory-policy"] != "noeviction" || cfg["maxmemory"] != "4194304" {
		t.Fatalf("config %v, want noeviction at 4194304 bytes", cfg)
	}
	value := strings.Repeat("x", 256<<10)
	n := 0
	for ; n < 100; n++ {
		err = c.Set(ctx, fmt.Sprintf("job:%d", n), value, time.Hour).Err()
		if err != nil {
			break
		}
	}
	if err == nil || !strings.Contains(err.Error(), "OOM") {
		t.Fatalf("after %d writes of 256 KiB: err %v, want OOM", n, err)
	}
	if k, _ := c.Exists(ctx, "job:0").Result(); k != 1 {
		t.Fatal("a key was evicted")
	}
	if got, _ := c.DBSize(ctx).Result(); got != int64(n) {
		t.Fatalf("%d keys, want the %d written", got, n)
	}
}

// TestOwnProcessGroup: redis-server runs in a process group of its own, so a
// terminal's Ctrl-C reaches fashiond only (issue 12: the private server was
// reported dead and restarted on every Ctrl-C); after Close it is gone.
func TestOwnProcessGroup(t *testing.T) {
	if !Available("") {
		t.Fatal("redis-server is not installed (make setup installs it)")
	}
	s, err := Start(context.Background(), Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.mu.Lock()
	pid := s.cmd.Process.Pid
	s.mu.Unlock()
	pgid, err := syscall.Getpgid(pid)
	if err != nil {
		t.Fatal(err)
	}
	if pgid != pid || pgid == syscall.Getpgrp() {
		t.Fatalf("redis-server pid %d is in process group %d (ours %d), want a group of its own", pid, pgid, syscall.Getpgrp())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Fatalf("redis-server %d still exists after Close", pid)
	}
}
