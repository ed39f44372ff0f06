package jobs

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"fashiond/internal/pipelinetest"
	"fashiond/jobs/internal/rdb"
	"fashiond/pipelines"
	"fashiond/storage"
)

// crashEnv makes the test binary act as worker 1 of TestCrashRecovery:
// "redis addr|store dir".
const crashEnv = "FASHIOND_JOBS_CRASH_WORKER"

func TestMain(m *testing.M) {
	if spec := os.Getenv(crashEnv); spec != "" {
		crashWorker(spec)
		return
	}
	if spec := os.Getenv(chaosEnvWorker); spec != "" {
		chaosWorker(spec)
		return
	}
	os.Exit(m.Run())
}

// hangingStore stores the first blob, then blocks every later Put: the
// worker is killed while it is storing a job's outputs.
type hangingStore struct {
	storage.Store
	puts int
}

func (h *hangingStore) Put(ctx context.Context, key, ct string, r io.Reader) error {
	h.puts++
	if h.puts > 1 {
		select {}
	}
	return h.Store.Put(ctx, key, ct, r)
}

// crashWorker runs a worker whose job gets stuck after storing output 0,
// until the parent test kills the process.
func crashWorker(spec string) {
	addr, dir, _ := strings.Cut(spec, "|")
	local, err := storage.NewLocal(dir, "http://127.0.0.1:1/cdn")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	svc, err := Open(context.Background(), Options{RedisURL: addr, Store: &hangingStore{Store: local}, JanitorInterval: -1, Log: testLog()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	w, err := NewWorker(svc, pipelines.NewRegistry(&gradient{name: "crashy", n: 3, w: 16, h: 16}), pipelinetest.Loader{},
		WorkerOptions{Log: testLog(), WebhookWorkers: -1})
	if err == nil {
		err = w.Start()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Println("worker", w.ID())
	select {}
}

// TestCrashRecovery kills worker 1 (a separate process) while it stores a
// job's outputs, starts worker 2 and checks that the job ran again to one
// terminal state, charged once, with exactly its outputs and one webhook.
//
// Timing: asynq's lease of the dead worker's task was last extended at most
// 5 s before the kill; the task counts as orphaned once that lease has not
// been extended for orphanAfter (15 s). On redis-server worker 2 starts right
// after the kill and finds the orphan with a heartbeat (then kicks asynq's
// recoverer); on miniredis worker 2 starts only once the task is orphaned
// and recovers it in its start-up pass. Either way about 15-20 s.
func TestCrashRecovery(t *testing.T) {
	forBackends(t, func(t *testing.T, addr string) {
		e := newEnv(t, addr, Options{})
		rc := &receiver{}
		hook := httptest.NewServer(rc)
		defer hook.Close()
		ctx := context.Background()

		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), crashEnv+"="+addr+"|"+e.store.Dir())
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		killed := false
		defer func() {
			if !killed {
				cmd.Process.Kill()
				cmd.Wait()
			}
		}()
		// Worker 1 advertises "crashy" once it is up.
		deadline := time.Now().Add(20 * time.Second)
		for {
			if n, _ := e.svc.liveWorkers(ctx, "crashy"); n == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("worker 1 did not start: %s", out.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		j := e.submit("crashy", 3, hook.URL)
		first := filepath.Join(e.store.Dir(), j.ID, "0.jpg")
		for {
			if _, err := os.Stat(first); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("worker 1 did not store output 0: %s", out.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		killed = true
		r1, _ := e.svc.load(ctx, j.ID)
		if r1.Status != StatusStarting || r1.Attempt != 1 {
			t.Fatalf("after the kill: %+v", r1)
		}

		// On miniredis, wait until the dead worker's lease is orphaned
		// (see above) before starting worker 2.
		lease := rdb.LeaseKey(rdb.QueueName("crashy"))
		for strings.HasSuffix(t.Name(), "miniredis") {
			score, err := e.svc.rdb.ZScore(ctx, lease, j.ID).Result()
			if err != nil {
				t.Fatalf("lease of the running task: %v", err)
			}
			// The same test as the reclaim script's, in whole seconds.
			if int64(score) < time.Now().Add(30*time.Second-orphanAfter).Unix() {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		w2 := e.worker(&gradient{name: "crashy", n: 3, w: 16, h: 16})
		got := e.waitFor(j.ID, "terminal", 40*time.Second, func(j *Job) bool { return terminal(j.Status) })
		time.Sleep(500 * time.Millisecond) // room for a duplicate to show up

		if got.Status != StatusSucceeded || len(got.Output) != 3 {
			t.Fatalf("after recovery: status %q, %d outputs (error %v)", got.Status, len(got.Output), got.Error)
		}
		files, _ := os.ReadDir(filepath.Join(e.store.Dir(), j.ID))
		var names []string
		for _, f := range files {
			names = append(names, f.Name())
		}
		if strings.Join(names, ",") != "0.jpg,1.jpg,2.jpg" {
			t.Errorf("output files %v, want 0.jpg,1.jpg,2.jpg", names)
		}
		r2, _ := e.svc.load(ctx, j.ID)
		if r2.Attempt != 2 || r2.Runner != w2.ID() || r2.Refunded {
			t.Errorf("record attempt=%d runner=%s refunded=%v; want attempt 2 by worker 2, no refund", r2.Attempt, r2.Runner, r2.Refunded)
		}
		if b := e.balance(); b != e.credits-3 {
			t.Errorf("balance %d, want %d (charged once)", b, e.credits-3)
		}
		if k := e.ledgerKinds(); k["charge"] != 1 || k["refund"] != 0 {
			t.Errorf("ledger %v, want one charge", k)
		}
		for end := time.Now().Add(5 * time.Second); len(rc.deliveries()) == 0 && time.Now().Before(end); {
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(time.Second) // room for a second delivery to show up
		ds := rc.deliveries()
		if len(ds) != 1 || !bytes.Contains(ds[0].body, []byte(`"status":"succeeded"`)) {
			t.Errorf("%d webhook deliveries, want one with the success", len(ds))
		}
	})
}
