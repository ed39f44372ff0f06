// Package s3test starts a real S3 server process for tests: versitygw with
// its POSIX backend in a temporary directory, on a free loopback port, with
// fresh random credentials. scripts/setup-s3-test.sh (run by `make setup`)
// builds the binary; FASHIOND_S3_SERVER names another one.
//
// Where the binary is missing a test is skipped with the advice to run
// `make setup`, except under CI (CI set), where that is a failure: `make
// test` installs it, so a missing server there is a broken setup.
package s3test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"fashiond/internal/loopback"
	"fashiond/internal/testenv"
)

// Version is the versitygw release scripts/setup-s3-test.sh builds.
const Version = "v1.8.0"

// Tuning of the server start.
const (
	startTimeout = 20 * time.Second
	pollEvery    = 50 * time.Millisecond
	startTries   = 3 // a free port taken by someone else before the server binds it
	keyBytes     = 16
)

// Server is a running S3 server.
type Server struct {
	Endpoint  string // http://127.0.0.1:PORT
	AccessKey string
	SecretKey string
	Region    string
	Dir       string // the POSIX backend's root: one folder per bucket
}

// Binary is the server binary: FASHIOND_S3_SERVER, else the one
// scripts/setup-s3-test.sh installs under .deps.
func Binary() string {
	if b := os.Getenv("FASHIOND_S3_SERVER"); b != "" {
		return b
	}
	return filepath.Join(testenv.Root(), ".deps", "versitygw", Version, "versitygw")
}

// Start starts a server for the test and stops it at the test's end.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := Binary()
	if _, err := os.Stat(bin); err != nil {
		msg := fmt.Sprintf("S3 test server %s is not installed: run `make setup` (scripts/setup-s3-test.sh)", bin)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	s := &Server{AccessKey: randomHex(t), SecretKey: randomHex(t), Region: "us-east-1", Dir: t.TempDir()}
	var err error
	for range startTries {
		if err = s.start(t, bin); err == nil {
			return s
		}
	}
	t.Fatalf("S3 test server: %v", err)
	return nil
}

// start runs the binary on a free port and waits until it answers.
func (s *Server) start(t testing.TB, bin string) error {
	port, err := loopback.FreePort()
	if err != nil {
		return err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	cmd := exec.Command(bin, "--port", addr, "--region", s.Region, "--quiet", "posix", s.Dir)
	// Credentials through the environment, not the command line (ps).
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+s.AccessKey, "ROOT_SECRET_KEY="+s.SecretKey)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	logf, err := os.Create(filepath.Join(t.TempDir(), "versitygw.log"))
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start %s: %w", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); logf.Close() }()
	stop := func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
	s.Endpoint = "http://" + addr
	if err := waitReady(s.Endpoint, exited); err != nil {
		stop()
		out, _ := os.ReadFile(logf.Name())
		return fmt.Errorf("%w; server output: %s", err, out)
	}
	t.Cleanup(stop)
	return nil
}

// waitReady polls the endpoint until it answers HTTP (any status: an
// unsigned request is refused with 403) or the process exits.
func waitReady(endpoint string, exited <-chan error) error {
	deadline := time.Now().Add(startTimeout)
	c := &http.Client{Timeout: time.Second}
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("the server exited: %v", err)
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, endpoint+"/", nil)
		resp, err := c.Do(req)
		cancel()
		if err == nil {
			resp.Body.Close()
			return nil
		}
		time.Sleep(pollEvery)
	}
	return fmt.Errorf("no answer at %s within %s", endpoint, startTimeout)
}

// MakeBucket creates a bucket: with the POSIX backend, a folder under Dir
// (versitygw treats every top-level folder as a bucket owned by the root
// user).
func (s *Server) MakeBucket(t testing.TB, name string) {
	t.Helper()
	if err := os.Mkdir(filepath.Join(s.Dir, name), 0o755); err != nil {
		t.Fatalf("make bucket %s: %v", name, err)
	}
}

func randomHex(t testing.TB) string {
	b := make([]byte, keyBytes)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
