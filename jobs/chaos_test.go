package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"fashiond/internal/pipelinetest"
	"fashiond/jobs/internal/rdb"
	"fashiond/pipelines"
	"fashiond/storage"
)

// The chaos suite: worker processes killed with SIGKILL mid-job and a
// redis-server (AOF, fsync always) killed and restarted, under a steady
// stream of submissions with webhooks. It asserts what the reliability run
// of issue 11 measured: every accepted job reaches exactly one terminal
// state, the credit ledger matches to the credit, every webhook of a job
// carries the job's one webhook id, and memory stays bounded.
//
// FASHIOND_CHAOS=short runs a short round (about a minute; `make test`),
// FASHIOND_CHAOS=long a long one (`make chaos`); unset, the test is skipped
// (the package's own tests already kill a worker, see TestCrashRecovery).
const chaosEnvWorker = "FASHIOND_JOBS_CHAOS_WORKER"

// chaosPlan sizes one round.
type chaosPlan struct {
	jobs, workers, workerKills, redisKills int
	every                                  time.Duration // between submissions
}

var chaosPlans = map[string]chaosPlan{
	"short": {jobs: 24, workers: 2, workerKills: 3, redisKills: 1, every: 150 * time.Millisecond},
	"long":  {jobs: 200, workers: 3, workerKills: 32, redisKills: 3, every: 200 * time.Millisecond},
}

// chaosPipeline works for 300 to 900 ms, then returns one small image.
type chaosPipeline struct{}

func (chaosPipeline) Name() string { return "chaos" }
func (chaosPipeline) Run(ctx context.Context, req *pipelines.Request) (*pipelines.Result, error) {
	select {
	case <-time.After(time.Duration(300+rand.IntN(600)) * time.Millisecond):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return (&gradient{n: 1, w: 8, h: 8}).Run(ctx, req)
}

// chaosWorker is the body of a worker process: "redis addr|store dir".
func chaosWorker(spec string) {
	addr, dir, _ := strings.Cut(spec, "|")
	st, err := storage.NewLocal(dir, "http://127.0.0.1:1/cdn")
	if err == nil {
		var svc *Service
		svc, err = Open(context.Background(), Options{RedisURL: addr, Store: st, JanitorInterval: time.Second,
			WebhookClient: loopbackClient(), WebhookBackoff: []time.Duration{200 * time.Millisecond, time.Second, 2 * time.Second, 5 * time.Second},
			Log: testLog()})
		if err == nil {
			var w *Worker
			w, err = NewWorker(svc, pipelines.NewRegistry(chaosPipeline{}), pipelinetest.Loader{},
				WorkerOptions{Concurrency: 2, WebhookWorkers: 2, Log: testLog()})
			if err == nil {
				err = w.Start()
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	select {}
}

// chaosRedis is a redis-server with AOF (fsync always) on a fixed port
// that can be killed and restarted on the same data.
type chaosRedis struct {
	t    *testing.T
	dir  string
	port int
	mu   sync.Mutex
	cmd  *exec.Cmd
	peak int64 // highest VmHWM seen, kB
}

func (r *chaosRedis) addr() string { return "127.0.0.1:" + strconv.Itoa(r.port) }

func (r *chaosRedis) start() {
	r.t.Helper()
	r.cmd = exec.Command("redis-server", r.args()...)
	if err := r.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", r.addr()); err == nil {
			c.Close()
			return
		}
	}
	r.t.Fatal("redis-server did not come up")
}

// restart starts the server again on the same data (from a timer: errors
// are reported, not fatal).
func (r *chaosRedis) restart() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cmd = exec.Command("redis-server", r.args()...)
	if err := r.cmd.Start(); err != nil {
		r.t.Error(err)
	}
}

func (r *chaosRedis) args() []string {
	return []string{"--port", strconv.Itoa(r.port), "--bind", "127.0.0.1", "--dir", r.dir,
		"--appendonly", "yes", "--appendfsync", "always", "--save", "", "--maxmemory-policy", "noeviction", "--loglevel", "warning"}
}

func (r *chaosRedis) kill() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.peak = max(r.peak, peakRSS(r.cmd.Process.Pid))
	r.cmd.Process.Signal(syscall.SIGKILL)
	r.cmd.Wait()
}

// peakRSS is a process's VmHWM in kB (0 when unknown).
func peakRSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// chaosWorkers runs worker processes and kills and restarts them.
type chaosWorkers struct {
	t     *testing.T
	spec  string
	mu    sync.Mutex
	procs []*exec.Cmd
	peak  int64
	kills int
}

func (w *chaosWorkers) spawn() *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), chaosEnvWorker+"="+w.spec)
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	return cmd
}

func (w *chaosWorkers) killOne() {
	w.mu.Lock()
	defer w.mu.Unlock()
	i := rand.IntN(len(w.procs))
	p := w.procs[i]
	w.peak = max(w.peak, peakRSS(p.Process.Pid))
	p.Process.Signal(syscall.SIGKILL)
	p.Wait()
	w.kills++
	w.procs[i] = w.spawn()
}

func (w *chaosWorkers) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.procs {
		w.peak = max(w.peak, peakRSS(p.Process.Pid))
		p.Process.Signal(syscall.SIGKILL)
		p.Wait()
	}
}

func freeChaosPort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func TestChaos(t *testing.T) {
	mode := os.Getenv("FASHIOND_CHAOS")
	plan, ok := chaosPlans[mode]
	if !ok {
		t.Skip("set FASHIOND_CHAOS=short or long (make test runs short, make chaos long)")
	}
	rdb := &chaosRedis{t: t, dir: t.TempDir(), port: freeChaosPort(t)}
	rdb.start()
	defer func() { rdb.kill() }()
	e := newEnv(t, rdb.addr(), Options{JanitorInterval: time.Second})
	e.svc.AddCredits(context.Background(), e.owner[:12], 10_000)
	start, _ := e.svc.Balance(context.Background(), e.owner)
	rc := &receiver{}
	hook := httptest.NewServer(rc)
	defer hook.Close()
	ws := &chaosWorkers{t: t, spec: rdb.addr() + "|" + e.store.Dir()}
	for range plan.workers {
		ws.procs = append(ws.procs, ws.spawn())
	}
	defer ws.stop()

	accepted, refused := chaosLoad(t, e, plan, hook.URL, ws, rdb)
	for _, id := range accepted {
		e.waitFor(id, "terminal", 3*time.Minute, func(j *Job) bool { return terminal(j.Status) })
	}
	time.Sleep(3 * time.Second) // room for late duplicates and webhooks
	chaosCheck(t, e, start, accepted, rc)
	t.Logf("chaos %s: %d jobs accepted, %d submissions refused while Redis was down, %d worker kills, %d Redis kills; peak RSS: worker %d MB, redis %d MB",
		mode, len(accepted), refused, ws.kills, plan.redisKills, ws.peak>>10, rdb.peak>>10)
}

// chaosLoad submits plan.jobs jobs at a steady rate while killing workers
// and Redis at even intervals; it returns the accepted job ids and the
// number of refused submissions.
func chaosLoad(t *testing.T, e *env, plan chaosPlan, hook string, ws *chaosWorkers, rdb *chaosRedis) ([]string, int) {
	// Wait for the workers to advertise the model.
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if n, _ := e.svc.liveWorkers(context.Background(), "chaos"); n == plan.workers {
			break
		}
		if time.Now().After(end) {
			t.Fatal("chaos workers did not start")
		}
	}
	killEvery := max(plan.jobs/(plan.workerKills+1), 1)
	redisEvery := max(plan.jobs/(plan.redisKills+1), 1)
	var accepted []string
	refused := 0
	for i := 1; i <= plan.jobs; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		j, err := e.svc.Submit(ctx, SubmitRequest{Owner: e.owner, Model: "chaos", Cost: 1 + i%3, WebhookURL: hook})
		cancel()
		if err != nil {
			refused++
		} else {
			accepted = append(accepted, j.ID)
		}
		if i%killEvery == 0 && ws.kills < plan.workerKills {
			ws.killOne()
		}
		if i%redisEvery == 0 && i/redisEvery <= plan.redisKills {
			rdb.kill() // submissions go on while it is down
			restart := time.AfterFunc(time.Second, rdb.restart)
			defer restart.Stop()
		}
		time.Sleep(plan.every)
	}
	return accepted, refused
}

// chaosCheck asserts the invariants: one terminal state per job (and a
// status that never changes again), the ledger, and one webhook id per job.
func chaosCheck(t *testing.T, e *env, start int64, accepted []string, rc *receiver) {
	ctx := context.Background()
	var charged int64
	states := map[string]int{}
	for _, id := range accepted {
		r, err := e.svc.load(ctx, id)
		if err != nil {
			t.Fatalf("job %s: %v", id, err)
		}
		states[r.Status]++
		if r.Status == StatusError && !r.Refunded {
			t.Errorf("job %s failed without a refund", id)
		}
		if r.Status == StatusSucceeded {
			charged += int64(r.Cost)
		}
	}
	// Jobs whose submission died with Redis may exist without the caller
	// knowing them: they must have been refunded.
	// The janitor fails those whose task never got queued after stuckAfter.
	for end := time.Now().Add(stuckAfter + 30*time.Second); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		if n, _ := e.svc.rdb.ZCard(ctx, rdb.KeyActive).Result(); n == 0 {
			break
		}
	}
	keys, _ := e.svc.rdb.Keys(ctx, rdb.KeyJobPrefix+"*").Result()
	for _, k := range keys {
		id := strings.TrimPrefix(k, rdb.KeyJobPrefix)
		if r, err := e.svc.load(ctx, id); err == nil && !slices.Contains(accepted, id) {
			if r.Status == StatusSucceeded {
				charged += int64(r.Cost)
			} else if r.Status == StatusStarting {
				t.Errorf("unknown job %s still running", id)
			}
		}
	}
	if b, _ := e.svc.Balance(ctx, e.owner); b != start-charged {
		t.Errorf("balance %d, want %d: ledger difference %d", b, start-charged, b-(start-charged))
	}
	ids := map[string]map[string]bool{}
	for _, d := range rc.deliveries() {
		var j struct{ ID string }
		_ = json.Unmarshal(d.body, &j)
		if ids[j.ID] == nil {
			ids[j.ID] = map[string]bool{}
		}
		ids[j.ID][d.h.Get(HeaderWebhookID)] = true
	}
	missing := 0
	for _, id := range accepted {
		switch {
		case len(ids[id]) == 0:
			missing++
		case len(ids[id]) > 1 || !ids[id][WebhookID(id)]:
			t.Errorf("job %s: webhook ids %v, want only %s", id, ids[id], WebhookID(id))
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d jobs got no webhook", missing, len(accepted))
	}
	t.Logf("terminal states %v, %d deliveries for %d jobs", states, len(rc.deliveries()), len(accepted))
	if states[StatusStarting] > 0 {
		t.Errorf("%d jobs not terminal", states[StatusStarting])
	}
}
