package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"fashiond/bench"
	"fashiond/internal/pipelinetest"
	"fashiond/jobs"
	"fashiond/redisserver"
)

// TestKeysStopsItsRedis: `fashiond keys list` with serve stopped starts a
// private redis-server for the data directory and stops it when it returns
// (issue 12: it was left running).
func TestKeysStopsItsRedis(t *testing.T) {
	if !redisserver.Available("") {
		t.Fatal("redis-server is not installed (make setup installs it)")
	}
	data := t.TempDir()
	t.Setenv("FASHIOND_DATA_DIR", data)
	t.Setenv("FASHIOND_REDIS_URL", "")
	t.Setenv("FASHIOND_LOG_LEVEL", "warn")
	if err := cmdKeys([]string{"list"}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(data, "redis")
	if _, err := os.Stat(filepath.Join(dir, "redis.addr")); err != nil {
		t.Fatalf("keys list did not use a private redis-server: %v", err)
	}
	if _, ok := redisserver.Running(dir); ok {
		t.Fatal("keys list left its redis-server running")
	}
}

// TestCLI runs the binary's command-line surface: --version, per-command
// help, and start-up errors for invalid settings.
func TestCLI(t *testing.T) {
	bin := buildBinary(t)
	env := append(os.Environ(), "FASHIOND_DATA_DIR="+t.TempDir(), "FASHIOND_REDIS_URL=")
	tests := []struct {
		name       string
		args, env  []string
		wantCode   int
		has, lacks []string
	}{
		{"--version", []string{"--version"}, nil, 0, []string{"fashiond " + version}, nil},
		{"version", []string{"version"}, nil, 0, []string{"fashiond " + version}, nil},
		{"keys help", []string{"keys", "--help"}, nil, 0, []string{"-redis-url", "-credits", "-data-dir"}, []string{"-device", "-queues", "-max-conns", "-ort-lib"}},
		{"api help", []string{"api", "--help"}, nil, 0, []string{"-addr", "-redis-url", "-metrics-addr"}, []string{"-device", "-queues", "-batching"}},
		{"worker help", []string{"worker", "--help"}, nil, 0, []string{"-queues", "-device", "-shutdown-grace"}, []string{"-addr", "-max-conns", "-max-body-bytes"}},
		{"serve help", []string{"serve", "--help"}, nil, 0, []string{"-addr", "-device", "-queues", "-shutdown-grace"}, nil},
		{"log format", []string{"serve"}, []string{"FASHIOND_LOG_FORMAT=xml"}, 1, []string{"FASHIOND_LOG_FORMAT"}, nil},
		{"log level", []string{"worker"}, []string{"FASHIOND_LOG_LEVEL=verbose"}, 1, []string{"FASHIOND_LOG_LEVEL"}, nil},
		{"body bytes", []string{"api"}, []string{"FASHIOND_MAX_BODY_BYTES=-1"}, 1, []string{"FASHIOND_MAX_BODY_BYTES"}, nil},
		{"public url", []string{"serve"}, []string{"FASHIOND_PUBLIC_URL=ftp://x"}, 1, []string{"FASHIOND_PUBLIC_URL"}, nil},
		{"flag", []string{"keys", "list", "-log-format", "yaml"}, nil, 1, []string{"FASHIOND_LOG_FORMAT"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin, tc.args...)
			cmd.Env = append(append([]string(nil), env...), tc.env...)
			out, _ := cmd.CombinedOutput()
			if code := cmd.ProcessState.ExitCode(); code != tc.wantCode {
				t.Fatalf("exit %d, want %d:\n%s", code, tc.wantCode, out)
			}
			for _, s := range tc.has {
				if !strings.Contains(string(out), s) {
					t.Errorf("output lacks %q:\n%s", s, out)
				}
			}
			for _, s := range tc.lacks {
				if strings.Contains(string(out), s+" ") {
					t.Errorf("output lists %q, not this command's:\n%s", s, out)
				}
			}
		})
	}
}

// TestCtrlCGraceful sends SIGINT to serve's whole process group, as a
// terminal's Ctrl-C does, while a job runs: the private redis-server is not
// touched (no restart), the running job finishes, serve exits 0 leaving no
// redis-server behind, and its JSON log is entirely structured with
// "worker started" once (issue 12, item 8).
func TestCtrlCGraceful(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary with real models")
	}
	root := pipelinetest.Root()
	ort := os.Getenv("FASHIOND_ORT_LIB")
	if ort == "" {
		ort = filepath.Join(root, ".deps/onnxruntime/1.30.0/libonnxruntime.so.1")
	}
	data := t.TempDir()
	addr := freeAddr(t)
	s := &server{t: t, bin: buildBinary(t), base: "http://" + addr, args: []string{"serve"}}
	s.env = append(os.Environ(),
		"FASHIOND_DATA_DIR="+data, "FASHIOND_ADDR="+addr, "FASHIOND_API_KEYS="+testKey+":20",
		"FASHIOND_MODELS_DIR="+filepath.Join(root, "data", "models"), "FASHIOND_ORT_LIB="+ort,
		"FASHIOND_LOG_FORMAT=json", "FASHIOND_REDIS_URL=", "FASHIOND_QUEUES=image-to-video")
	var log bytes.Buffer
	cmd := exec.Command(s.bin, "serve")
	cmd.Env = s.env
	cmd.Stdout, cmd.Stderr = &log, &log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a terminal's foreground group
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	}()
	waitServed(t, s, "image-to-video")

	// A video job: its ffmpeg child must survive the Ctrl-C as well.
	person := pipelinetest.DataURI(t, "images/fashn_model.webp")
	var j jobBody
	in := map[string]any{"imageUrl": person, "duration": 4, "generateAudio": false}
	if code, _ := s.do("POST", "/v1/run", testKey, map[string]any{"model_name": "image-to-video", "inputs": in}, &j); code != 200 {
		t.Fatalf("submit: HTTP %d", code)
	}
	waitRunning(t, s, j.ID)
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("serve exited with %v after Ctrl-C:\n%s", err, &log)
		}
	case <-time.After(3 * time.Minute):
		t.Fatalf("serve did not stop within 3 minutes of Ctrl-C:\n%s", &log)
	}
	if _, ok := redisserver.Running(filepath.Join(data, "redis")); ok {
		t.Fatal("serve left its redis-server running")
	}
	checkJSONLog(t, log.String())

	// The job ran to its end before the process stopped.
	s.args = []string{"serve"}
	s.start()
	defer s.stop()
	var done jobBody
	if code, _ := s.do("GET", "/v1/status/"+j.ID, testKey, nil, &done); code != 200 || done.Status != "succeeded" {
		t.Fatalf("job interrupted by Ctrl-C: HTTP %d %+v\n%s", code, done, &log)
	}
}

// checkJSONLog: every line is a JSON object, the private redis-server was
// never restarted, the worker started once and the job succeeded.
func checkJSONLog(t *testing.T, log string) {
	t.Helper()
	counts := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(log))
	for sc.Scan() {
		var rec struct{ Msg string }
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Errorf("a plain-text line in the JSON log: %q", sc.Text())
			continue
		}
		counts[rec.Msg]++
	}
	if counts["worker started"] != 1 {
		t.Errorf("\"worker started\" logged %d times, want once:\n%s", counts["worker started"], log)
	}
	if counts["private redis-server started"] != 1 || counts["private redis-server exited; restarting"] != 0 {
		t.Errorf("the private redis-server was restarted by the Ctrl-C:\n%s", log)
	}
}

// waitServed waits until s answers /readyz and advertises model.
func waitServed(t *testing.T, s *server, model string) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		var m struct {
			Models []struct {
				Name   string `json:"name"`
				Served bool   `json:"served"`
			} `json:"models"`
		}
		req, _ := http.NewRequest("GET", s.base+"/v1/models", nil)
		req.Header.Set("Authorization", "Bearer "+testKey)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&m)
			resp.Body.Close()
		}
		for _, x := range m.Models {
			if err == nil && x.Name == model && x.Served {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("serve did not start serving %s", model)
}

// runningFraction is the progress at which the Ctrl-C test interrupts a
// video job: well into its rendering, with ffmpeg encoding.
const runningFraction = 0.3

// waitRunning polls job id until a worker has run it to runningFraction,
// every statusPoll (within the key's rate limit). The only answers other
// than the job that it accepts are the documented transient ones: 429
// (rate_limited) and 503 (backend_unavailable, e.g. Redis slow to answer
// on a loaded machine), each with a Retry-After that it obeys.
func waitRunning(t *testing.T, s *server, id string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	transient := map[int]int{}
	for time.Now().Before(deadline) {
		var j struct {
			Status   string `json:"status"`
			Error    string `json:"error"`
			Progress *struct {
				Fraction float64 `json:"fraction"`
			} `json:"progress"`
		}
		code, hdr := s.do("GET", "/v1/status/"+id, testKey, nil, &j)
		switch {
		case code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable:
			after, err := strconv.Atoi(hdr.Get("Retry-After"))
			if err != nil || after < 1 {
				t.Fatalf("GET /v1/status: HTTP %d (%s) without a Retry-After", code, j.Error)
			}
			transient[code]++
			t.Logf("GET /v1/status: HTTP %d (%s), Retry-After %d", code, j.Error, after)
			time.Sleep(time.Duration(after) * time.Second)
			continue
		case code != http.StatusOK:
			t.Fatalf("GET /v1/status: HTTP %d (%s)", code, j.Error)
		case j.Status != "starting":
			t.Fatalf("job %s finished as %s before it was seen running", id, j.Status)
		case j.Progress != nil && j.Progress.Fraction >= runningFraction:
			return
		}
		time.Sleep(statusPoll)
	}
	t.Fatalf("job %s never ran (transient answers: %v)", id, transient)
}

// statusPoll is waitRunning's interval: 10 requests a second, under the
// key's sustained rate limit (jobs.DefaultRateLimit, 20/s), so a slow
// start under load never empties its bucket (at 20 ms it did, and the
// polls were answered 429).
const statusPoll = 100 * time.Millisecond

// interruptStage is a bench stage that sends this process a SIGINT (a
// Ctrl-C) on its fourth call and is interrupted by it.
const interruptStage = "test/ctrl-c"

var interruptCalls atomic.Int64

func init() {
	bench.RegisterStage(interruptStage, func(ctx context.Context) error {
		if interruptCalls.Add(1) == 4 {
			if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
				return err
			}
			<-ctx.Done() // the call the user interrupted
			return ctx.Err()
		}
		time.Sleep(5 * time.Millisecond)
		return nil
	})
}

// TestBenchCtrlC: Ctrl-C during `fashiond bench` prints and saves what was
// measured so far (issue 12: it lost every result).
func TestBenchCtrlC(t *testing.T) {
	root, _ := filepath.Abs("../..")
	if os.Getenv("FASHIOND_ORT_LIB") == "" {
		t.Setenv("FASHIOND_ORT_LIB", filepath.Join(root, ".deps/onnxruntime/1.30.0/libonnxruntime.so.1"))
	}
	if os.Getenv("FASHIOND_MODELS_DIR") == "" {
		t.Setenv("FASHIOND_MODELS_DIR", filepath.Join(root, "data/models"))
	}
	interruptCalls.Store(0)
	js, chart := filepath.Join(t.TempDir(), "b.json"), filepath.Join(t.TempDir(), "b.png")
	err := cmdBench([]string{"--stages", "selfie," + interruptStage, "--iters", "10", "--warmup", "1", "--concurrency", "1",
		"--batching", "off", "--testdata", pipelinetest.Testdata(t), "--device", "cpu", "--intra-op-threads", "2",
		"--json", js, "--chart", chart})
	if err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("err = %v, want the interruption reported", err)
	}
	b, rerr := os.ReadFile(js)
	if rerr != nil {
		t.Fatalf("no JSON saved after Ctrl-C: %v", rerr)
	}
	var rep struct {
		Interrupted bool `json:"interrupted"`
		Stages      []struct {
			Stage string `json:"stage"`
			Runs  []struct {
				Iters   int     `json:"iters"`
				Partial bool    `json:"partial"`
				P50     float64 `json:"p50_ms"`
			} `json:"runs"`
		} `json:"stages"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if !rep.Interrupted || len(rep.Stages) != 2 {
		t.Fatalf("report %+v, want interrupted with both stages", rep)
	}
	if s := rep.Stages[0]; s.Stage != "selfie" || s.Runs[0].Partial || s.Runs[0].Iters != 10 || s.Runs[0].P50 <= 0 {
		t.Errorf("selfie %+v, want its 10 iterations complete", s)
	}
	// Warm-up is call 1; calls 2 and 3 were measured before the Ctrl-C.
	if s := rep.Stages[1]; s.Stage != interruptStage || !s.Runs[0].Partial || s.Runs[0].Iters != 2 {
		t.Errorf("%s %+v, want 2 iterations, partial", interruptStage, s)
	}
	if _, err := os.Stat(chart); err != nil {
		t.Errorf("no chart saved: %v", err)
	}
}

// TestMetricsListener: with FASHIOND_METRICS_ADDR, `fashiond api` serves
// Prometheus metrics there (HTTP requests by route, queue depth per model,
// Go and process metrics) and not on the API address.
func TestMetricsListener(t *testing.T) {
	if !redisserver.Available("") {
		t.Fatal("redis-server is not installed (make setup installs it)")
	}
	rs, err := redisserver.Start(context.Background(), redisserver.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	addr, maddr := freeAddr(t), freeAddr(t)
	s := &server{t: t, bin: buildBinary(t), base: "http://" + addr, args: []string{"api"}}
	s.env = append(os.Environ(), "FASHIOND_DATA_DIR="+t.TempDir(), "FASHIOND_ADDR="+addr, "FASHIOND_METRICS_ADDR="+maddr,
		"FASHIOND_REDIS_URL="+rs.URL(), "FASHIOND_API_KEYS="+testKey+":5", "FASHIOND_LOG_LEVEL=warn")
	s.start()
	defer s.stop()
	s.do("GET", "/v1/credits", testKey, nil, nil)
	s.do("POST", "/v1/run", testKey, map[string]any{"model_name": "tryon", "inputs": map[string]any{"personImage": "x"}}, nil)
	resp, err := http.Get("http://" + maddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`fashiond_http_requests_total{code="200",method="GET",route="/v1/credits"} 1`,
		`route="/v1/run"`, `fashiond_queue_depth{model="tryon"} 0`, "go_goroutines", "process_cpu_seconds_total",
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("metrics lack %s:\n%s", want, b)
		}
	}
	if code, _ := s.do("GET", "/metrics", "", nil, nil); code == 200 {
		t.Error("/metrics is served on the API address too")
	}
}

// TestKeysLimits: keys create prints the new key's ID, and keys limits sets
// and clears a key's own limits by that ID.
func TestKeysLimits(t *testing.T) {
	bin := buildBinary(t)
	env := append(os.Environ(), "FASHIOND_DATA_DIR="+t.TempDir(), "FASHIOND_REDIS_URL=", "FASHIOND_LOG_LEVEL=warn")
	run := func(args ...string) (string, string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, errb.String())
		}
		return out.String(), errb.String()
	}
	key, msg := run("keys", "create", "-label", "lim")
	id := jobs.OwnerOf(strings.TrimSpace(key))[:12]
	if !strings.Contains(msg, "New API key "+id) {
		t.Fatalf("create did not print the ID %s: %q", id, msg)
	}
	if out, _ := run("keys", "limits", id, "-limit-rate", "2.5", "-limit-burst", "4"); !strings.Contains(out, "rate 2.5/s, burst 4, max in flight 0") {
		t.Fatalf("limits: %q", out)
	}
	if out, _ := run("keys", "limits", id, "-limit-rate", "-1"); !strings.Contains(out, "rate 0/s, burst 4") {
		t.Fatalf("limits reset: %q", out)
	}
}
