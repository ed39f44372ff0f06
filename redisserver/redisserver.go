// Package redisserver runs and supervises a private redis-server for
// `fashiond serve` when no external Redis is configured: loopback only, a
// random password, AOF persistence in the data directory (so keys, credits
// and queued jobs survive a restart), restarted with backoff if it dies.
package redisserver

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"fashiond/internal/loopback"
)

// DefaultMaxMemory is the private server's memory limit.
const DefaultMaxMemory = "1gb"

// Options configures the private server.
type Options struct {
	Dir    string // data directory for the AOF and the password file
	Binary string // default "redis-server"
	// MaxMemory is redis-server's maxmemory ("512mb", "2gb";
	// DefaultMaxMemory). The policy is always noeviction: at the limit a
	// write fails (a submission gets 503) but nothing stored (jobs, keys,
	// credits) is ever evicted.
	MaxMemory string
	Log       *slog.Logger
}

// Server is a supervised redis-server process.
type Server struct {
	opts     Options
	addr     string
	password string

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	closing bool
	done    chan struct{}
	once    sync.Once
}

// Available reports whether the redis-server binary can be found.
func Available(binary string) bool {
	if binary == "" {
		binary = "redis-server"
	}
	_, err := exec.LookPath(binary)
	return err == nil
}

// Start launches redis-server and waits until it answers PING.
func Start(ctx context.Context, o Options) (*Server, error) {
	if o.Binary == "" {
		o.Binary = "redis-server"
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.MaxMemory == "" {
		o.MaxMemory = DefaultMaxMemory
	}
	if _, err := exec.LookPath(o.Binary); err != nil {
		return nil, fmt.Errorf("redisserver: %s not found: %w", o.Binary, err)
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("redisserver: %w", err)
	}
	pw, err := password(o.Dir)
	if err != nil {
		return nil, err
	}
	port, err := loopback.FreePort()
	if err != nil {
		return nil, err
	}
	s := &Server{opts: o, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), password: pw, done: make(chan struct{})}
	if err := s.launch(ctx); err != nil {
		return nil, err
	}
	go s.supervise()
	return s, nil
}

// Addr is host:port of the server.
func (s *Server) Addr() string { return s.addr }

// Password is the server's password (never log it).
func (s *Server) Password() string { return s.password }

// URL is a redis:// URL with the password.
func (s *Server) URL() string { return "redis://:" + s.password + "@" + s.addr + "/0" }

func (s *Server) launch(ctx context.Context) error {
	dir, err := filepath.Abs(s.opts.Dir)
	if err != nil {
		return err
	}
	_, port, _ := net.SplitHostPort(s.addr)
	cmd := exec.Command(s.opts.Binary,
		"--bind", "127.0.0.1", "--port", port, "--dir", dir,
		"--appendonly", "yes", "--appendfsync", "everysec", "--save", "",
		"--requirepass", s.password, "--protected-mode", "yes",
		"--maxmemory", s.opts.MaxMemory, "--maxmemory-policy", "noeviction",
		"--daemonize", "no", "--logfile", "", "--loglevel", "warning")
	// A process group of its own: the terminal's Ctrl-C reaches fashiond
	// only, which stops the server last, after the running jobs.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, _ := cmd.StderrPipe()
	cmd.Stdout = nil
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("redisserver: start: %w", err)
	}
	exited := make(chan struct{})
	var tail []string
	var tmu sync.Mutex
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			tmu.Lock()
			tail = append(tail, sc.Text())
			if len(tail) > 20 {
				tail = tail[1:]
			}
			tmu.Unlock()
		}
	}()
	go func() { cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(15 * time.Second)
	for {
		if err := ping(s.addr, s.password); err == nil {
			break
		}
		select {
		case <-exited:
			tmu.Lock()
			defer tmu.Unlock()
			return fmt.Errorf("redisserver: redis-server exited at start: %s", strings.Join(tail, "; "))
		case <-ctx.Done():
			cmd.Process.Kill()
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			return errors.New("redisserver: redis-server did not answer PING within 15s")
		}
	}
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()
	if err := os.WriteFile(filepath.Join(dir, "redis.addr"), []byte(s.addr+"\n"), 0o600); err != nil {
		s.opts.Log.Warn("cannot record the redis address", "err", err)
	}
	s.opts.Log.Info("private redis-server started", "addr", s.addr, "dir", dir, "aof", true)
	return nil
}

// Running returns the URL of a private redis-server already serving dir (for
// example one started by `fashiond serve`), so that operator commands share
// it instead of starting a second server on the same AOF.
func Running(dir string) (url string, ok bool) {
	a, err := os.ReadFile(filepath.Join(dir, "redis.addr"))
	if err != nil {
		return "", false
	}
	pw, err := os.ReadFile(filepath.Join(dir, "redis.password"))
	if err != nil {
		return "", false
	}
	addr, p := strings.TrimSpace(string(a)), strings.TrimSpace(string(pw))
	if ping(addr, p) != nil {
		return "", false
	}
	return "redis://:" + p + "@" + addr + "/0", true
}

// supervise restarts the server with backoff when it dies unexpectedly.
func (s *Server) supervise() {
	backoff := 200 * time.Millisecond
	for {
		s.mu.Lock()
		exited := s.exited
		s.mu.Unlock()
		select {
		case <-s.done:
			return
		case <-exited:
		}
		s.mu.Lock()
		closing := s.closing
		s.mu.Unlock()
		if closing {
			return
		}
		s.opts.Log.Error("private redis-server exited; restarting", "backoff", backoff)
		select {
		case <-s.done:
			return
		case <-time.After(backoff):
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := s.launch(ctx)
		cancel()
		if err != nil {
			s.opts.Log.Error("private redis-server restart failed", "err", err)
			backoff = min(backoff*2, 10*time.Second)
			// keep the old exited channel closed so we retry
			continue
		}
		backoff = 200 * time.Millisecond
	}
}

// Close stops the server (SHUTDOWN, which flushes the AOF). Idempotent, nil-safe.
func (s *Server) Close() error {
	if s == nil {
		return nil
	}
	var err error
	s.once.Do(func() {
		s.mu.Lock()
		s.closing = true
		cmd, exited := s.cmd, s.exited
		s.mu.Unlock()
		close(s.done)
		if cmd == nil || cmd.Process == nil {
			return
		}
		_ = command(s.addr, s.password, "SHUTDOWN")
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
			err = errors.New("redisserver: redis-server did not stop within 10s; killed")
		}
	})
	return err
}

func password(dir string) (string, error) {
	p := filepath.Join(dir, "redis.password")
	if b, err := os.ReadFile(p); err == nil && len(strings.TrimSpace(string(b))) >= 32 {
		return strings.TrimSpace(string(b)), nil
	}
	var buf [24]byte
	if _, err := rand.Read(buf[:]); err != nil {
		return "", err
	}
	pw := hex.EncodeToString(buf[:])
	if err := os.WriteFile(p, []byte(pw+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("redisserver: %w", err)
	}
	return pw, nil
}

func ping(addr, pw string) error { return command(addr, pw, "PING") }

// command sends AUTH and one inline command over RESP and checks for +OK/+PONG.
func command(addr, pw, cmd string) error {
	c, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	r := bufio.NewReader(c)
	if _, err := fmt.Fprintf(c, "AUTH %s\r\n", pw); err != nil {
		return err
	}
	line, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+OK") {
		return fmt.Errorf("auth: %s", strings.TrimSpace(line))
	}
	if _, err := fmt.Fprintf(c, "%s\r\n", cmd); err != nil {
		return err
	}
	line, err = r.ReadString('\n')
	if cmd == "SHUTDOWN" {
		return nil // the connection closes
	}
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+") {
		return fmt.Errorf("%s: %s", cmd, strings.TrimSpace(line))
	}
	return nil
}
