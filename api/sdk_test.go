package api

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fashiond/spec"
)

// FashnSDKVersion is the fashn npm package version the compatibility test
// pins.
const FashnSDKVersion = "0.11.1"

// TestFashnSDK installs the official fashn TypeScript SDK with npm and runs
// testdata/sdk_check.mjs against the handler (fake backend): run with a
// webhook_url, status, subscribe (polling to a terminal state, credits
// header), and the error classes for 400/401/402/404. Skipped when node or
// npm is missing; when CI=true an npm failure fails the test.
func TestFashnSDK(t *testing.T) {
	node, errNode := exec.LookPath("node")
	npm, errNpm := exec.LookPath("npm")
	if errNode != nil || errNpm != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("node and npm are needed for the fashn SDK check (make setup installs npm)")
		}
		t.Skip("node and npm are needed for the fashn SDK check")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"fashiond-sdk-check","private":true,"type":"module"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	install := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--no-package-lock", "--loglevel=error", "fashn@"+FashnSDKVersion)
	install.Dir = dir
	if out, err := install.CombinedOutput(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("npm install fashn@%s: %v\n%s", FashnSDKVersion, err, out)
		}
		t.Skipf("npm install fashn@%s failed (offline?): %v\n%s", FashnSDKVersion, err, out)
	}
	var pkg struct{ Version string }
	b, err := os.ReadFile(filepath.Join(dir, "node_modules", "fashn", "package.json"))
	if err != nil || json.Unmarshal(b, &pkg) != nil || pkg.Version != FashnSDKVersion {
		t.Fatalf("installed fashn version %q (%v), want %s", pkg.Version, err, FashnSDKVersion)
	}
	script, err := os.ReadFile(filepath.Join("testdata", "sdk_check.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sdk_check.mjs"), script, 0o644); err != nil {
		t.Fatal(err)
	}

	fake := newFake()
	srv := httptest.NewServer(New(Options{Backend: fake}))
	defer srv.Close()
	fake.mu.Lock() // the server's goroutines read it
	fake.cdnBase = srv.URL
	fake.mu.Unlock()

	run := exec.CommandContext(ctx, node, "sdk_check.mjs")
	run.Dir = dir
	run.Env = append(os.Environ(),
		"FASHIOND_BASE_URL="+srv.URL,
		"FASHIOND_API_KEY="+keyAlice,
		"FASHIOND_POOR_KEY="+keyPoor,
		"FASHN_BASE_URL=", "FASHN_API_KEY=", "FASHN_LOG=off",
	)
	var stdout, stderr bytes.Buffer
	run.Stdout, run.Stderr = &stdout, &stderr
	if err := run.Run(); err != nil {
		t.Fatalf("sdk_check.mjs: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	var res struct {
		OK    bool   `json:"ok"`
		RunID string `json:"runId"`
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil || !res.OK {
		t.Fatalf("script result %q: %v", stdout.String(), err)
	}

	// What the SDK sent reached the backend as the API normalised it.
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if len(fake.submitted) != 5 {
		t.Fatalf("%d jobs submitted, want 5 (tryon, pose-control, prompt-tryon, 2x image-to-video)", len(fake.submitted))
	}
	first := fake.submitted[0]
	if first.Model != "tryon" || first.WebhookURL != "https://hooks.example.com/fashn?x=1" {
		t.Errorf("first job %+v", first)
	}
	if want := `{"personImage":"https://example.com/person.jpg","garmentImage":"https://example.com/garment.png","accuracy":"high","sampleCount":1}`; mustEncode(t, first.Inputs) != want {
		t.Errorf("inputs %s, want %s", mustEncode(t, first.Inputs), want)
	}
	if j := fake.jobs[res.RunID]; j == nil || j.Status != "succeeded" {
		t.Errorf("run id %s not the polled job", res.RunID)
	}
	if fake.balance["owner-poor"] != 2 {
		t.Error("the 402 charged credits")
	}
}

// mustEncode is the canonical JSON of normalised inputs.
func mustEncode(t *testing.T, in spec.Inputs) string {
	t.Helper()
	b, err := spec.Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
