package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"image"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "image/jpeg"
	_ "image/png"

	"github.com/redis/go-redis/v9"

	"fashiond/internal/pipelinetest"
	"fashiond/internal/testenv"
	"fashiond/jobs"
	"fashiond/jobs/redistest"
	"fashiond/redisserver"
)

// The end-to-end test runs the real binary as a user would: `fashiond serve`
// with its private redis-server, real models and the test photos, through
// the HTTP API; then a restart to show that keys, credits and jobs persist.

const testKey = "e2e-key-0001"

type server struct {
	t    *testing.T
	bin  string
	args []string // subcommand and flags; default serve
	env  []string
	base string
	cmd  *exec.Cmd
	log  *bytes.Buffer
	done chan struct{}
}

func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "fashiond")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func (s *server) start() {
	s.t.Helper()
	s.log = &bytes.Buffer{}
	args := s.args
	if len(args) == 0 {
		args = []string{"serve"}
	}
	s.cmd = exec.Command(s.bin, args...)
	s.cmd.Env = s.env
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.done = make(chan struct{})
	go func(c *exec.Cmd, done chan struct{}) { c.Wait(); close(done) }(s.cmd, s.done)
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			s.cmd = nil
			s.t.Fatalf("serve exited at start:\n%s", s.log)
		default:
		}
		if s.base == "" { // a worker: ready once it is running
			time.Sleep(time.Second)
			return
		}
		resp, err := http.Get(s.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 && (s.args != nil || s.served()) {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	s.stop()
	s.t.Fatalf("serve did not become ready:\n%s", s.log)
}

// served reports whether the worker advertises tryon yet.
func (s *server) served() bool {
	var m struct {
		Models []struct {
			Name   string `json:"name"`
			Served bool   `json:"served"`
		} `json:"models"`
	}
	code, _ := s.do("GET", "/v1/models", testKey, nil, &m)
	for _, x := range m.Models {
		if x.Name == "tryon" && x.Served {
			return code == 200
		}
	}
	return false
}

func (s *server) stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(60 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
		s.t.Errorf("serve did not stop within 60s after SIGTERM:\n%s", s.log)
	}
	s.cmd = nil
}

func (s *server) do(method, path, key string, body any, v any) (int, http.Header) {
	s.t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.base+path, r)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			s.t.Fatalf("%s %s: %d %s: %v", method, path, resp.StatusCode, b, err)
		}
	}
	return resp.StatusCode, resp.Header
}

type jobBody struct {
	ID        string   `json:"id"`
	Status    string   `json:"status"`
	CreatedAt string   `json:"created_at"`
	Error     *string  `json:"error"`
	Output    []string `json:"output"`
}

func (s *server) wait(id string) jobBody {
	s.t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		var j jobBody
		if code, _ := s.do("GET", "/v1/status/"+id, testKey, nil, &j); code != 200 {
			s.t.Fatalf("status %s: HTTP %d", id, code)
		}
		if j.Status != "starting" {
			return j
		}
		time.Sleep(300 * time.Millisecond)
	}
	s.t.Fatalf("job %s did not finish:\n%s", id, s.log)
	return jobBody{}
}

func TestServeEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test of the binary")
	}
	root := pipelinetest.Root()
	ort := testenv.ORTLib()
	data := t.TempDir()
	if err := os.Symlink(filepath.Join(root, "data", "presets"), filepath.Join(data, "presets")); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	s := &server{t: t, bin: buildBinary(t), base: "http://" + addr}
	s.env = append(os.Environ(),
		"FASHIOND_DATA_DIR="+data, "FASHIOND_ADDR="+addr, "FASHIOND_API_KEYS=e2e-key-0001:10",
		"FASHIOND_MODELS_DIR="+filepath.Join(root, "data", "models"), "FASHIOND_ORT_LIB="+ort,
		"FASHIOND_LOG_LEVEL=warn", "FASHIOND_REDIS_URL=")
	s.start()
	defer s.stop()

	// Bad input: a clear 400 naming the field, no charge.
	var e struct{ Error, Code, Field string }
	code, _ := s.do("POST", "/v1/run", testKey, map[string]any{"model_name": "tryon", "inputs": map[string]any{"personImage": "x", "garmentImage": "y", "sampleCount": 9}}, &e)
	if code != 400 || e.Field == "" || e.Code == "" {
		t.Fatalf("bad input: HTTP %d %+v", code, e)
	}
	if code, _ := s.do("GET", "/v1/credits", "", nil, nil); code != 401 {
		t.Fatalf("no key: HTTP %d, want 401", code)
	}

	person := pipelinetest.DataURI(t, "images/fashn_model.webp")
	garment := pipelinetest.DataURI(t, "garments/flatlay_tee_red.png")
	var j jobBody
	code, hdr := s.do("POST", "/v1/run", testKey, map[string]any{"model_name": "tryon", "inputs": map[string]any{"personImage": person, "garmentImage": garment}}, &j)
	if code != 200 || j.Status != "starting" || j.Error != nil || j.Output != nil || hdr.Get("X-Credits-Used") != "1" {
		t.Fatalf("submit: HTTP %d %+v credits %q", code, j, hdr.Get("X-Credits-Used"))
	}
	if _, err := time.Parse(time.RFC3339, j.CreatedAt); err != nil || !strings.HasSuffix(j.CreatedAt, "Z") {
		t.Fatalf("created_at %q is not ISO 8601 UTC", j.CreatedAt)
	}
	done := s.wait(j.ID)
	if done.Status != "succeeded" || len(done.Output) != 1 {
		t.Fatalf("tryon finished as %+v:\n%s", done, s.log)
	}
	resp, err := http.Get(done.Output[0])
	if err != nil {
		t.Fatal(err)
	}
	img, format, err := image.Decode(resp.Body)
	resp.Body.Close()
	if err != nil || resp.Header.Get("Content-Type") != "image/"+format {
		t.Fatalf("output %s: %v (content type %q, format %q)", done.Output[0], err, resp.Header.Get("Content-Type"), format)
	}
	if b := img.Bounds(); b.Dx() != 832 || b.Dy() != 1248 {
		t.Fatalf("tryon output is %v, want the person's 832x1248", b)
	}

	// A prompt-tryon the parser cannot use ends in error and is refunded.
	code, _ = s.do("POST", "/v1/run", testKey, map[string]any{"model_name": "prompt-tryon", "inputs": map[string]any{"personImage": person, "prompt": "make it nice"}}, &j)
	if code != 200 {
		t.Fatalf("prompt-tryon submit: HTTP %d", code)
	}
	failed := s.wait(j.ID)
	if failed.Status != "error" || failed.Error == nil || !strings.Contains(*failed.Error, "understood") {
		t.Fatalf("unusable prompt finished as %+v", failed)
	}
	var c struct{ Credits int64 }
	s.do("GET", "/v1/credits", testKey, nil, &c)
	if c.Credits != 9 {
		t.Fatalf("credits after one success and one refunded error = %d, want 9", c.Credits)
	}

	// The official fashn SDK, unchanged but for its base URL, runs a job.
	sdkCheck(t, s.base)
	s.do("GET", "/v1/credits", testKey, nil, &c)
	if c.Credits != 8 {
		t.Fatalf("credits after the SDK's try-on = %d, want 8", c.Credits)
	}

	// Operator command against the running server's private Redis.
	kc := exec.Command(s.bin, "keys", "create", "-credits", "5", "-label", "e2e")
	kc.Env = s.env
	out, err := kc.CombinedOutput()
	if err != nil {
		t.Fatalf("keys create: %v\n%s", err, out)
	}
	cmd := exec.Command(s.bin, "keys", "list")
	cmd.Env = s.env
	out, err = cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "e2e") {
		t.Fatalf("keys list: %v\n%s", err, out)
	}
	hardeningChecks(t, s, data, string(out))

	// Restart: keys, credits and finished jobs survive (AOF).
	s.stop()
	s.start()
	s.do("GET", "/v1/credits", testKey, nil, &c)
	if c.Credits != 8 {
		t.Fatalf("credits after restart = %d, want 8 (persisted, not re-granted)", c.Credits)
	}
	var again jobBody
	if code, _ := s.do("GET", "/v1/status/"+done.ID, testKey, nil, &again); code != 200 || again.Status != "succeeded" {
		t.Fatalf("job after restart: HTTP %d %+v", code, again)
	}

	// model-create upload through the API: the data URI is spooled to the
	// blob store before the job runs, and the pipeline reads it from there
	// (every upload failed when the pipeline re-checked the data: prefix).
	code, _ = s.do("POST", "/v1/run", testKey, map[string]any{"model_name": "model-create", "inputs": map[string]any{"type": "upload", "name": "e2e", "imageBase64": pipelinetest.DataURI(t, "images/codait_man_standing.jpg")}}, &j)
	if code != 200 && code != 201 {
		t.Fatalf("model-create upload submit: HTTP %d", code)
	}
	if up := s.wait(j.ID); up.Status != "succeeded" || len(up.Output) != 1 {
		t.Fatalf("model-create upload finished as %+v", up)
	}
}

// TestSplitDeployment runs `fashiond api` and `fashiond worker` as separate
// processes over one real redis-server and a shared data directory: a model
// no worker serves is a 503 with no charge; once a worker for it is up the
// same request succeeds, and its webhook arrives signed.
func TestSplitDeployment(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test of the binary")
	}
	root := pipelinetest.Root()
	ort := testenv.ORTLib()
	redisAddr := redistest.Start(t)
	data := t.TempDir()
	hooks := make(chan *http.Request, 4)
	bodies := make(chan []byte, 4)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		hooks <- r
		bodies <- b
	}))
	defer recv.Close()
	addr := freeAddr(t)
	env := append(os.Environ(),
		"FASHIOND_DATA_DIR="+data, "FASHIOND_ADDR="+addr, "FASHIOND_API_KEYS="+testKey+":10",
		"FASHIOND_MODELS_DIR="+filepath.Join(root, "data", "models"), "FASHIOND_ORT_LIB="+ort,
		"FASHIOND_LOG_LEVEL=warn", "FASHIOND_REDIS_URL=redis://"+redisAddr+"/0",
		"FASHIOND_FETCH_ALLOW=127.0.0.1/32", "FASHIOND_WEBHOOK_SECRET=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	bin := buildBinary(t)
	apiSrv := &server{t: t, bin: bin, args: []string{"api"}, env: env, base: "http://" + addr}
	apiSrv.start()
	defer apiSrv.stop()

	person := pipelinetest.DataURI(t, "images/fashn_model.webp")
	garment := pipelinetest.DataURI(t, "garments/flatlay_tee_red.png")
	req := map[string]any{"model_name": "tryon", "webhook_url": recv.URL + "/hook", "inputs": map[string]any{"personImage": person, "garmentImage": garment}}
	var e struct{ Code string }
	if code, _ := apiSrv.do("POST", "/v1/run", testKey, req, &e); code != 503 || e.Code != "model_unavailable" {
		t.Fatalf("no worker: HTTP %d %+v, want 503 model_unavailable", code, e)
	}
	var c struct{ Credits int64 }
	apiSrv.do("GET", "/v1/credits", testKey, nil, &c)
	if c.Credits != 10 {
		t.Fatalf("a 503 charged credits: balance %d", c.Credits)
	}

	worker := &server{t: t, bin: bin, args: []string{"worker"}, env: append(env, "FASHIOND_QUEUES=tryon")}
	worker.start()
	defer worker.stop()
	deadline := time.Now().Add(60 * time.Second)
	var j jobBody
	for {
		code, _ := apiSrv.do("POST", "/v1/run", testKey, req, &j)
		if code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tryon still refused (HTTP %d) with a worker up:\n%s", code, worker.log)
		}
		time.Sleep(500 * time.Millisecond)
	}
	// The worker serves only tryon.
	if code, _ := apiSrv.do("POST", "/v1/run", testKey, map[string]any{"model_name": "prompt-tryon", "inputs": map[string]any{"personImage": person, "prompt": "red tee"}}, &e); code != 503 {
		t.Fatalf("prompt-tryon with a tryon-only worker: HTTP %d, want 503", code)
	}
	done := apiSrv.wait(j.ID)
	if done.Status != "succeeded" || len(done.Output) != 1 {
		t.Fatalf("tryon finished as %+v:\n%s", done, worker.log)
	}
	resp, err := http.Get(done.Output[0])
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("output from the api process's CDN: %v %v", err, resp)
	}
	resp.Body.Close()
	select {
	case r := <-hooks:
		body := <-bodies
		if err := jobs.Verify("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", r.Header, body, 5*time.Minute); err != nil {
			t.Fatalf("webhook signature: %v", err)
		}
		var hj jobBody
		if err := json.Unmarshal(body, &hj); err != nil || hj.ID != j.ID || hj.Status != "succeeded" {
			t.Fatalf("webhook body %s (%v)", body, err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no webhook within 30s:\n%s", worker.log)
	}
}

// sdkCheck installs the pinned fashn SDK and runs testdata/sdk_real.mjs
// against base. Without node/npm it is skipped, except under CI=true.
func sdkCheck(t *testing.T, base string) {
	t.Helper()
	node, errNode := exec.LookPath("node")
	npm, errNpm := exec.LookPath("npm")
	if errNode != nil || errNpm != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("node and npm are needed for the fashn SDK check")
		}
		t.Log("node/npm missing: fashn SDK check skipped")
		return
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"fashiond-e2e-sdk","private":true,"type":"module"}`), 0o644)
	install := exec.Command(npm, "install", "--no-audit", "--no-fund", "--no-package-lock", "--loglevel=error", "fashn@"+fashnSDKVersion)
	install.Dir = dir
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("npm install fashn@%s: %v\n%s", fashnSDKVersion, err, out)
	}
	script, err := os.ReadFile(filepath.Join("testdata", "sdk_real.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "sdk_real.mjs"), script, 0o644)
	run := exec.Command(node, "sdk_real.mjs")
	run.Dir = dir
	run.Env = append(os.Environ(), "FASHIOND_BASE_URL="+base, "FASHIOND_API_KEY="+testKey,
		"PERSON="+pipelinetest.File(t, "images/fashn_model.webp"), "GARMENT="+pipelinetest.File(t, "garments/flatlay_tee_red.png"))
	out, err := run.CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"status":"succeeded"`) || !strings.Contains(string(out), `"creditsUsed":1`) {
		t.Fatalf("fashn SDK against the real service: %v\n%s", err, out)
	}
}

// fashnSDKVersion is the SDK release checked here and in api/sdk_test.go.
const fashnSDKVersion = "0.11.1"

// hardeningChecks runs against the live `fashiond serve` what issue 11
// changed at the edges: strict JSON, per-key webhook secrets from the
// operator command, and the private Redis' memory policy.
func hardeningChecks(t *testing.T, s *server, data, keyList string) {
	t.Helper()
	req, _ := http.NewRequest("POST", s.base+"/v1/run", strings.NewReader(`{"model_name":"nope","model_name":"model-create","inputs":{}}`))
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var e struct{ Code, Field string }
	json.NewDecoder(resp.Body).Decode(&e)
	resp.Body.Close()
	if resp.StatusCode != 400 || e.Code != "duplicate_key" || e.Field != "model_name" {
		t.Fatalf("duplicate model_name: HTTP %d %+v", resp.StatusCode, e)
	}
	var ids []string
	for _, line := range strings.Split(keyList, "\n")[1:] {
		if f := strings.Fields(line); len(f) > 0 {
			ids = append(ids, f[0])
		}
	}
	secrets := map[string]bool{}
	for _, id := range ids {
		c := exec.Command(s.bin, "keys", "webhook-secret", "-key", id)
		c.Env = s.env
		out, err := c.Output()
		sec := strings.TrimSpace(string(out))
		if err != nil || !strings.HasPrefix(sec, "whsec_") {
			t.Fatalf("keys webhook-secret -key %s: %v %q", id, err, out)
		}
		secrets[sec] = true
	}
	if len(ids) < 2 || len(secrets) != len(ids) {
		t.Fatalf("%d keys got %d distinct webhook secrets", len(ids), len(secrets))
	}
	c := exec.Command(s.bin, "keys", "webhook-secret")
	c.Env = s.env
	if err := c.Run(); err == nil {
		t.Fatal("keys webhook-secret without -key or -operator succeeded")
	}
	u, ok := redisserver.Running(filepath.Join(data, "redis"))
	if !ok {
		t.Fatal("the private redis-server is not running")
	}
	opt, _ := redis.ParseURL(u)
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	cfg, err := rdb.ConfigGet(context.Background(), "maxmemory*").Result()
	if err != nil || cfg["maxmemory-policy"] != "noeviction" || cfg["maxmemory"] != "1073741824" {
		t.Fatalf("private redis memory config %v %v, want noeviction at 1 GiB", cfg, err)
	}
}

// ---- client API across a split deployment ----

const testKeyB = "e2e-key-0002"

// doHdr is do with extra request headers.
func (s *server) doHdr(method, path, key string, body any, v any, hdr map[string]string) (int, http.Header) {
	s.t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.base+path, r)
	req.Header.Set("Authorization", "Bearer "+key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if v != nil {
		json.Unmarshal(b, v)
	}
	return resp.StatusCode, resp.Header
}

// clientJob is the job body with the client-API fields.
type clientJob struct {
	jobBody
	Model           string          `json:"model_name"`
	UpdatedAt       time.Time       `json:"updated_at"`
	Credits         int             `json:"credits_used"`
	CreditsRefunded int             `json:"credits_refunded"`
	Queue           json.RawMessage `json:"queue"`
	Progress        json.RawMessage `json:"progress"`
}

// sseEvent is one received stream event and when it arrived.
type sseEvent struct {
	job clientJob
	at  time.Time
}

// stream reads GET /v1/status/{id} as text/event-stream until it closes.
func (s *server) stream(t *testing.T, id, key string) []sseEvent {
	req, _ := http.NewRequest("GET", s.base+"/v1/status/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := (&http.Client{Timeout: 3 * time.Minute}).Do(req)
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var out []sseEvent
	rd := bufio.NewReader(resp.Body)
	for {
		line, err := rd.ReadString('\n')
		if data, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "data: "); ok {
			var j clientJob
			if json.Unmarshal([]byte(data), &j) == nil {
				out = append(out, sseEvent{j, time.Now()})
			}
		}
		if err != nil {
			return out
		}
	}
}

// TestSplitClientAPI runs two `fashiond api` processes and one worker (one
// tryon slot) on one redis-server: concurrent idempotent submits across
// both API nodes make one job and one charge; a stream on the other node
// follows it to the end (the latency from a change to the client is
// reported); cancel refunds a queued and a running job; key B's job starts
// right after the running job of key A, whose backlog waits; history and
// delete.
func TestSplitClientAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test of the binary")
	}
	root := pipelinetest.Root()
	redisAddr := redistest.Start(t)
	data := t.TempDir()
	addr1, addr2 := freeAddr(t), freeAddr(t)
	env := append(os.Environ(),
		"FASHIOND_DATA_DIR="+data, "FASHIOND_API_KEYS="+testKey+":100,"+testKeyB+":100",
		"FASHIOND_MODELS_DIR="+filepath.Join(root, "data", "models"), "FASHIOND_ORT_LIB="+testenv.ORTLib(),
		"FASHIOND_LOG_LEVEL=warn", "FASHIOND_REDIS_URL=redis://"+redisAddr+"/0", "FASHIOND_CONCURRENCY=1")
	bin := buildBinary(t)
	with := func(kv string) []string { return append(slices.Clip(env), kv) } // no shared backing array
	api1 := &server{t: t, bin: bin, args: []string{"api"}, env: with("FASHIOND_ADDR=" + addr1), base: "http://" + addr1}
	api2 := &server{t: t, bin: bin, args: []string{"api"}, env: with("FASHIOND_ADDR=" + addr2), base: "http://" + addr2}
	api1.start()
	defer api1.stop()
	api2.start()
	defer api2.stop()
	worker := &server{t: t, bin: bin, args: []string{"worker"}, env: with("FASHIOND_QUEUES=tryon")}
	worker.start()
	defer worker.stop()
	for deadline := time.Now().Add(60 * time.Second); !api1.served(); time.Sleep(300 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("tryon not served:\n%s", worker.log)
		}
	}
	person := pipelinetest.DataURI(t, "images/fashn_model.webp")
	garment := pipelinetest.DataURI(t, "garments/flatlay_tee_red.png")
	req := map[string]any{"model_name": "tryon", "inputs": map[string]any{"personImage": person, "garmentImage": garment}}

	first := idempotentRace(t, api1, api2, req)
	events := api2.stream(t, first, testKey)
	reportStream(t, events)

	cancelChecks(t, api1, api2, req)
	fairnessCheck(t, api1, api2, req)
	historyChecks(t, api1, api2, first)
}

// idempotentRace sends 8 submits with one Idempotency-Key, alternating
// API nodes, at once; all answer the same job and one credit is charged.
func idempotentRace(t *testing.T, api1, api2 *server, req map[string]any) string {
	ids := make([]string, 8)
	replayed := make([]bool, 8)
	codes := make([]int, 8)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := api1
			if i%2 == 1 {
				s = api2
			}
			var j clientJob
			code, h := s.doHdr("POST", "/v1/run", testKey, req, &j, map[string]string{"Idempotency-Key": "e2e-race-1"})
			ids[i], codes[i], replayed[i] = j.ID, code, h.Get("Idempotent-Replayed") == "true"
		}()
	}
	wg.Wait()
	fresh := 0
	for i := range ids {
		if codes[i] != 200 || ids[i] != ids[0] || ids[i] == "" {
			t.Fatalf("idempotent submit %d: HTTP %d job %q, submit 0 job %q", i, codes[i], ids[i], ids[0])
		}
		if !replayed[i] {
			fresh++
		}
	}
	var c struct{ Credits int64 }
	api2.do("GET", "/v1/credits", testKey, nil, &c)
	if fresh != 1 || c.Credits != 99 {
		t.Fatalf("%d fresh answers, balance %d: want one job, one charge", fresh, c.Credits)
	}
	other := map[string]any{"model_name": "tryon", "inputs": map[string]any{"personImage": req["inputs"].(map[string]any)["personImage"], "garmentImage": req["inputs"].(map[string]any)["garmentImage"], "accuracy": "high"}}
	var e struct{ Code, Field string }
	if code, _ := api1.doHdr("POST", "/v1/run", testKey, other, &e, map[string]string{"Idempotency-Key": "e2e-race-1"}); code != 422 || e.Code != "idempotency_key_reused" {
		t.Errorf("reused key with another body: HTTP %d %+v", code, e)
	}
	t.Logf("idempotency: 8 concurrent submits over 2 API nodes -> 1 job %s, 1 credit charged", ids[0])
	return ids[0]
}

// reportStream checks a finished stream and reports the delay from each
// change (the job's updated_at, stamped by the worker) to its arrival.
func reportStream(t *testing.T, events []sseEvent) {
	if len(events) < 2 || events[len(events)-1].job.Status != "succeeded" {
		t.Fatalf("stream of %d events, last %+v: want it to end with succeeded", len(events), events[len(events)-1].job)
	}
	var lat []time.Duration
	progress := 0
	for _, e := range events[1:] { // the first event is the state at connect
		if e.job.Progress != nil {
			progress++
		}
		lat = append(lat, e.at.Sub(e.job.UpdatedAt))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	p := func(q float64) time.Duration { return lat[min(len(lat)-1, int(q*float64(len(lat))))] }
	t.Logf("SSE: %d events (%d with progress) over another API node; change-to-client latency p50 %v p99 %v max %v",
		len(events), progress, p(0.5).Round(100*time.Microsecond), p(0.99).Round(100*time.Microsecond), lat[len(lat)-1].Round(100*time.Microsecond))
	if progress == 0 {
		t.Error("no progress event in the stream")
	}
}

// cancelChecks cancels a queued and a running job (both refunded) and
// checks that an ended job is 409.
func cancelChecks(t *testing.T, api1, api2 *server, req map[string]any) {
	var running, queued clientJob
	api1.do("POST", "/v1/run", testKey, req, &running)
	api1.do("POST", "/v1/run", testKey, req, &queued)
	var j clientJob
	if code, _ := api2.do("POST", "/v1/cancel/"+queued.ID, testKeyB, nil, nil); code != 404 {
		t.Errorf("another key's cancel: HTTP %d, want 404", code)
	}
	if code, _ := api2.do("POST", "/v1/cancel/"+queued.ID, testKey, nil, &j); code != 200 || j.Status != "canceled" || j.Credits != 0 || j.CreditsRefunded != 1 {
		t.Fatalf("cancel queued: HTTP %d %+v", code, j)
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		api1.do("GET", "/v1/status/"+running.ID, testKey, nil, &j)
		if j.Progress != nil || j.Status != "starting" || time.Now().After(deadline) {
			break
		}
	}
	start := time.Now()
	if code, _ := api1.do("POST", "/v1/cancel/"+running.ID, testKey, nil, &j); code != 200 || j.Status != "canceled" {
		t.Fatalf("cancel running: HTTP %d %+v", code, j)
	}
	// The worker frees its only slot once the pipeline stopped: a new
	// job then runs.
	var next clientJob
	api1.do("POST", "/v1/run", testKey, req, &next)
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		api1.do("GET", "/v1/status/"+next.ID, testKey, nil, &j)
		if j.Progress != nil || j.Status != "starting" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cancelled job still holds the worker's slot:\n%s", api1.log)
		}
	}
	t.Logf("cancel: a running tryon job released its worker slot %v after the cancel", time.Since(start).Round(time.Millisecond))
	api1.wait(next.ID)
	var e struct{ Code, Status string }
	if code, _ := api2.do("POST", "/v1/cancel/"+next.ID, testKey, nil, &e); code != 409 || e.Code != "not_cancelable" || e.Status != "succeeded" {
		t.Errorf("cancel of a finished job: HTTP %d %+v", code, e)
	}
	var c struct{ Credits int64 }
	api2.do("GET", "/v1/credits", testKey, nil, &c)
	if c.Credits != 98 { // the raced job and next; both cancelled jobs refunded
		t.Errorf("balance %d after two refunded cancels, want 98", c.Credits)
	}
}

// fairnessCheck: key A queues 6 jobs, then key B one; B's job starts
// before A's third (one worker slot: after A's running job at most).
func fairnessCheck(t *testing.T, api1, api2 *server, req map[string]any) {
	var a []string
	for range 6 {
		var j clientJob
		api1.do("POST", "/v1/run", testKey, req, &j)
		a = append(a, j.ID)
	}
	var b clientJob
	submitted := time.Now()
	api2.do("POST", "/v1/run", testKeyB, req, &b)
	var started time.Time
	for deadline := time.Now().Add(3 * time.Minute); started.IsZero(); time.Sleep(50 * time.Millisecond) {
		var j clientJob
		api2.do("GET", "/v1/status/"+b.ID, testKeyB, nil, &j)
		if j.Progress != nil || j.Status != "starting" {
			started = time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatal("B's job did not start")
		}
	}
	ended := 0
	for _, id := range a {
		var j clientJob
		api1.do("GET", "/v1/status/"+id, testKey, nil, &j)
		if j.Status != "starting" {
			ended++
		}
	}
	t.Logf("fairness: key A queued 6 tryon jobs, then key B 1: B's job started %v after its submit, when %d of A's jobs had ended (1 worker slot)",
		started.Sub(submitted).Round(time.Millisecond), ended)
	if ended > 1 {
		t.Errorf("B's job started after %d of A's jobs, want at most 1", ended)
	}
	for _, id := range a {
		api1.do("POST", "/v1/cancel/"+id, testKey, nil, nil)
	}
	api2.wait2(b.ID, testKeyB)
}

// wait2 is wait for another key.
func (s *server) wait2(id, key string) {
	for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		var j clientJob
		s.do("GET", "/v1/status/"+id, key, nil, &j)
		if j.Status != "starting" {
			return
		}
	}
	s.t.Fatalf("job %s did not finish", id)
}

// historyChecks lists key A's jobs on one node and deletes one on the other.
func historyChecks(t *testing.T, api1, api2 *server, done string) {
	var page struct {
		Jobs       []clientJob `json:"jobs"`
		NextCursor *string     `json:"next_cursor"`
	}
	if code, _ := api1.do("GET", "/v1/jobs?limit=3&status=canceled", testKey, nil, &page); code != 200 || len(page.Jobs) != 3 || page.NextCursor == nil {
		t.Fatalf("history: HTTP %d %d jobs cursor %v", code, len(page.Jobs), page.NextCursor)
	}
	for i := 1; i < len(page.Jobs); i++ {
		a, _ := time.Parse(time.RFC3339Nano, page.Jobs[i].CreatedAt)
		b, _ := time.Parse(time.RFC3339Nano, page.Jobs[i-1].CreatedAt)
		if a.After(b) || page.Jobs[i].Status != "canceled" {
			t.Errorf("history not newest first or filter broken: %+v", page.Jobs)
		}
	}
	var j clientJob
	api1.do("GET", "/v1/status/"+done, testKey, nil, &j)
	if code, _ := api2.do("DELETE", "/v1/jobs/"+done, testKey, nil, nil); code != 200 {
		t.Fatalf("delete: HTTP %d", code)
	}
	if code, _ := api1.do("GET", "/v1/status/"+done, testKey, nil, nil); code != 404 {
		t.Errorf("status after delete: HTTP %d", code)
	}
	if len(j.Output) == 1 {
		if resp, err := http.Get(j.Output[0]); err == nil {
			resp.Body.Close()
			if resp.StatusCode != 404 {
				t.Errorf("output after delete: HTTP %d", resp.StatusCode)
			}
		}
	}
}
