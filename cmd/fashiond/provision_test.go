package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fashiond/config"
	"fashiond/models"
	"fashiond/models/testenv"
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
	repo, err := models.OpenRepository(dir)
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
	repo, err := models.OpenRepository(want)
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
