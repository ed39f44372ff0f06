package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"image"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"fashiond/jobs/internal/rdb"
	"fashiond/jobs/redistest"
	"fashiond/pipelines"
)

// advertise makes model look served by a worker that never takes jobs
// (its queue only fills), for an hour.
func (e *env) advertise(model string) {
	e.svc.rdb.ZAdd(context.Background(), rdb.KeyServed(model), redisZ(float64(nowMS()+3_600_000), "fake-"+model))
}

// TestIdempotentSubmitRace: 16 concurrent submits with one key and body
// (as from two API nodes: two services on one Redis) create exactly one
// job and one charge; the same key with another body is refused.
func TestIdempotentSubmitRace(t *testing.T) {
	forBackends(t, func(t *testing.T, addr string) {
		e := newEnv(t, addr, Options{})
		other := newEnv(t, addr, Options{}) // a second API node
		e.advertise("work")
		req := SubmitRequest{Owner: e.owner, Model: "work", Cost: 3,
			IdempotencyKey: "retry-me", Fingerprint: Fingerprint([]byte("work"), []byte(`{"n":1}`))}
		ids := make([]string, 16)
		replays := make([]bool, 16)
		var wg sync.WaitGroup
		for i := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				svc := e.svc
				if i%2 == 1 {
					svc = other.svc
				}
				j, err := svc.Submit(context.Background(), req)
				if err != nil {
					t.Errorf("submit %d: %v", i, err)
					return
				}
				ids[i], replays[i] = j.ID, j.Replayed
			}()
		}
		wg.Wait()
		fresh := 0
		for i, id := range ids {
			if id != ids[0] {
				t.Fatalf("submit %d got job %s, submit 0 got %s", i, id, ids[0])
			}
			if !replays[i] {
				fresh++
			}
		}
		if fresh != 1 {
			t.Errorf("%d submits created a job, want 1", fresh)
		}
		if b := e.balance(); b != e.credits-3 {
			t.Errorf("balance %d, want %d (one charge)", b, e.credits-3)
		}
		if n := e.svc.rdb.ZCard(context.Background(), rdb.KeyOwnerJobs(e.owner)).Val(); n != 1 {
			t.Errorf("%d jobs in the history, want 1", n)
		}
		req.Fingerprint = Fingerprint([]byte("work"), []byte(`{"n":2}`))
		if _, err := e.svc.Submit(context.Background(), req); !errors.Is(err, ErrIdempotencyMismatch) {
			t.Errorf("another body: %v, want ErrIdempotencyMismatch", err)
		}
		// A failed submit (credits short) releases the key for a retry.
		req.IdempotencyKey, req.Cost = "too-dear", 1000
		if _, err := e.svc.Submit(context.Background(), req); !errors.Is(err, ErrInsufficientCredits) {
			t.Fatalf("dear submit: %v", err)
		}
		req.Cost = 1
		if j, err := e.svc.Submit(context.Background(), req); err != nil || j.Replayed {
			t.Errorf("retry after a refused submit: %+v %v, want a new job", j, err)
		}
	})
}

// TestIdempotencyStaleClaim: a claim whose release was lost (a failover)
// is taken over by a repeat once older than idemTakeOver, not after
// idemPendingTTL; a fresh claim still makes the repeat wait; the request
// whose claim was taken over writes nothing.
func TestIdempotencyStaleClaim(t *testing.T) {
	forBackends(t, func(t *testing.T, addr string) {
		e := newEnv(t, addr, Options{})
		e.advertise("work")
		ctx := context.Background()
		fp := Fingerprint([]byte("work"), []byte(`{"n":1}`))
		req := SubmitRequest{Owner: e.owner, Model: "work", Cost: 1, IdempotencyKey: "lost-release", Fingerprint: fp}
		key := rdb.KeyIdem(e.owner, req.IdempotencyKey)
		// Fresh (1 s old): the repeat waits, then is refused.
		e.svc.rdb.Set(ctx, key, rdb.IdemPending(fp, "gone"), idemPendingTTL-time.Second)
		short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		_, err := e.svc.Submit(short, req)
		cancel()
		if err == nil {
			t.Fatal("a repeat took over a fresh claim")
		}
		// Stale (6 s old): taken over at once.
		e.svc.rdb.Set(ctx, key, rdb.IdemPending(fp, "gone"), idemPendingTTL-idemTakeOver-time.Second)
		t0 := time.Now()
		j, err := e.svc.Submit(ctx, req)
		if err != nil || j.Replayed {
			t.Fatalf("repeat over a stale claim: %+v %v, want a new job", j, err)
		}
		if took := time.Since(t0); took > 2*time.Second {
			t.Errorf("the takeover took %v", took)
		}
		// The request whose claim was taken writes nothing.
		req.IdempotencyKey = "taken"
		e.svc.rdb.Set(ctx, rdb.KeyIdem(e.owner, "taken"), rdb.IdemPending(fp, "newer"), idemPendingTTL)
		if _, err := e.svc.create(ctx, req, 1, "older"); !errors.Is(err, ErrIdempotencyInProgress) {
			t.Fatalf("create with a claim taken over: %v, want ErrIdempotencyInProgress", err)
		}
		if b := e.balance(); b != e.credits-1 {
			t.Errorf("balance %d, want %d (one charge)", b, e.credits-1)
		}
	})
}

// slow runs each job for d, reporting progress every 5 ms, and records
// which jobs started in order.
type slow struct {
	name string
	d    time.Duration
	mu   sync.Mutex
	ran  []string
}

func (p *slow) Name() string { return p.name }
func (p *slow) Run(ctx context.Context, req *pipelines.Request) (*pipelines.Result, error) {
	p.mu.Lock()
	p.ran = append(p.ran, req.JobID)
	p.mu.Unlock()
	for end := time.Now().Add(p.d); time.Now().Before(end); {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		req.Progress("work", 0.5, "")
		time.Sleep(5 * time.Millisecond)
	}
	return &pipelines.Result{Outputs: []pipelines.Output{{Image: image.NewGray(image.Rect(0, 0, 2, 2))}}}, nil
}

// gated is a pipeline that waits until open is closed, then reports
// progress for a while and succeeds.
type gated struct {
	name string
	open <-chan struct{}
}

func (p *gated) Name() string { return p.name }
func (p *gated) Run(ctx context.Context, req *pipelines.Request) (*pipelines.Result, error) {
	select {
	case <-p.open:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return (&slow{name: p.name, d: 100 * time.Millisecond}).Run(ctx, req)
}

func (p *slow) order() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.ran...)
}

// TestCancel: a queued job never starts and is refunded; a running job
// stops (its context ends) and is refunded; an ended job is 409; another
// owner gets 404; the webhook reports canceled.
func TestCancel(t *testing.T) {
	forBackends(t, func(t *testing.T, addr string) {
		e := newEnv(t, addr, Options{})
		ctx := context.Background()
		p := newBlocking("block", 1)
		e.worker(p)
		running := e.submit("block", 2, "")
		<-p.started
		e.advertise("idle")
		rc := &receiver{}
		hook := httptest.NewServer(rc)
		defer hook.Close()
		queued := e.submit("idle", 3, hook.URL)
		if e.balance() != e.credits-5 {
			t.Fatalf("balance %d after two submits", e.balance())
		}
		if _, err := e.svc.Cancel(ctx, OwnerOf("someone-else"), queued.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("another owner's cancel: %v, want ErrNotFound", err)
		}
		for _, id := range []string{queued.ID, running.ID} {
			j, err := e.svc.Cancel(ctx, e.owner, id)
			if err != nil || j.Status != StatusCanceled || j.Credits != 0 || j.CreditsRefunded == 0 {
				t.Fatalf("cancel %s: %+v %v", id, j, err)
			}
		}
		if _, err := e.svc.insp.GetTaskInfo(rdb.QueueName("idle"), queued.ID); err == nil {
			t.Error("the queued job's task is still in its queue")
		}
		// The running job's pipeline saw its context end (it would block
		// forever otherwise) and the worker acknowledged it.
		eventually(t, "running job stopped", func() bool {
			info, err := e.svc.insp.GetTaskInfo(rdb.QueueName("block"), running.ID)
			return err != nil || info.State == 0 || info.State.String() == "completed"
		})
		if b := e.balance(); b != e.credits {
			t.Errorf("balance %d, want %d (both refunded)", b, e.credits)
		}
		if j, err := e.svc.Cancel(ctx, e.owner, running.ID); !errors.Is(err, ErrNotCancelable) || j.Status != StatusCanceled {
			t.Errorf("second cancel: %+v %v, want ErrNotCancelable", j, err)
		}
		if j := e.mustGet(running.ID); j.Status != StatusCanceled || len(j.Output) != 0 {
			t.Errorf("after the worker stopped: %+v", j)
		}
		// The worker delivers the cancelled job's webhook.
		eventually(t, "the canceled webhook", func() bool { return len(rc.deliveries()) == 1 })
		var body Job
		if err := json.Unmarshal(rc.deliveries()[0].body, &body); err != nil || body.ID != queued.ID || body.Status != StatusCanceled || body.Credits != 0 || body.CreditsRefunded != 3 {
			t.Errorf("webhook body %s (%v)", rc.deliveries()[0].body, err)
		}
	})
}

// TestWatchEvents: a watcher on another service (API node) hears every
// transition of a job within milliseconds: progress and the end.
func TestWatchEvents(t *testing.T) {
	forBackends(t, func(t *testing.T, addr string) {
		e := newEnv(t, addr, Options{})
		node2 := newEnv(t, addr, Options{})
		// The job reports progress only once the watcher listens: on a
		// loaded machine a job that started at once had sent its progress
		// (published on change only) before the watcher subscribed
		// (a fresh-clone CI flake: "events [succeeded]: no progress").
		listening := make(chan struct{})
		p := &gated{name: "slow", open: listening}
		e.worker(p)
		e.advertise("slow")
		j := e.submit("slow", 1, "")
		var mu sync.Mutex
		var seen []string
		stop, err := node2.svc.Watch(context.Background(), e.owner, j.ID, func() {})
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		unwatch, err := node2.svc.events.watch(context.Background(), j.ID, func(p string) {
			mu.Lock()
			seen = append(seen, p)
			mu.Unlock()
		})
		if err != nil {
			t.Fatal(err)
		}
		defer unwatch()
		close(listening)
		e.waitTerminal(j.ID)
		eventually(t, "the terminal event", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(seen) > 0 && seen[len(seen)-1] == StatusSucceeded
		})
		mu.Lock()
		defer mu.Unlock()
		if !contains(seen, "progress") {
			t.Errorf("events %v: no progress", seen)
		}
		if _, err := node2.svc.Watch(context.Background(), OwnerOf("x"), j.ID, func() {}); !errors.Is(err, ErrNotFound) {
			t.Errorf("another owner's watch: %v", err)
		}
	})
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// TestQueueInfo: waiting jobs report their position (1, 2, then a held
// third one at 3 behind the two dispatched) and an ETA from run times.
func TestQueueInfo(t *testing.T) {
	forBackends(t, func(t *testing.T, addr string) {
		e := newEnv(t, addr, Options{})
		e.advertise("idle") // one worker of unknown concurrency: 2 slots
		ctx := context.Background()
		e.svc.recordDuration(ctx, "idle", 4*time.Second)
		var got []QueueInfo
		for range 3 {
			j := e.submit("idle", 1, "")
			q := e.mustGet(j.ID).Queue
			if q == nil {
				t.Fatal("no queue block on a waiting job")
			}
			got = append(got, *q)
		}
		for i, q := range got {
			if q.Position != i+1 || q.Ahead != i {
				t.Errorf("job %d: %+v, want position %d", i, q, i+1)
			}
		}
		if !got[2].Held || got[0].Held {
			t.Errorf("held flags %v %v, want the third held", got[0].Held, got[2].Held)
		}
		// 2 slots of 4 s: positions 1 and 2 end in 4 s, position 3 in 8 s.
		want := []float64{4, 4, 8}
		for i, q := range got {
			if q.ETASeconds == nil || *q.ETASeconds != want[i] {
				t.Errorf("job %d ETA %v, want %v", i, q.ETASeconds, want[i])
			}
		}
	})
}

// TestEta is the ETA formula.
func TestEta(t *testing.T) {
	cases := []struct {
		samples      []string
		ahead, slots int
		want         *float64
	}{
		{nil, 0, 1, nil},
		{[]string{"1000"}, 0, 0, nil},
		{[]string{"1000", "3000"}, 0, 1, ptr(2.0)},
		{[]string{"1000", "3000"}, 3, 2, ptr(4.0)},
		{[]string{"1500", "x"}, 4, 1, ptr(7.5)},
	}
	for _, c := range cases {
		got := eta(c.samples, c.ahead, c.slots)
		if (got == nil) != (c.want == nil) || got != nil && *got != *c.want {
			t.Errorf("eta(%v, %d, %d) = %v, want %v", c.samples, c.ahead, c.slots, got, c.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestFairDispatch: key A submits 200 jobs, then key B one; with one
// worker of 2 slots B's job starts after at most the 2 jobs of A that
// were running (plus the slot that frees first), not after A's backlog.
func TestFairDispatch(t *testing.T) {
	forBackends(t, func(t *testing.T, addr string) {
		e := newEnv(t, addr, Options{})
		p := &slow{name: "fair", d: 30 * time.Millisecond}
		e.worker(p)
		ctx := context.Background()
		keyB, _ := e.svc.CreateKey(ctx, "b", 10)
		e.svc.AddCredits(ctx, OwnerOf(e.key)[:12], 200)
		var a []string
		for range 200 {
			a = append(a, e.submit("fair", 1, "").ID)
		}
		b, err := e.svc.Submit(ctx, SubmitRequest{Owner: OwnerOf(keyB), Model: "fair", Cost: 1})
		if err != nil {
			t.Fatal(err)
		}
		submittedAt := len(p.order())
		eventually(t, "B's job ended", func() bool {
			j, err := e.svc.Get(ctx, OwnerOf(keyB), b.ID)
			return err == nil && terminal(j.Status)
		})
		order := p.order()
		pos := -1
		for i, id := range order {
			if id == b.ID {
				pos = i
			}
		}
		t.Logf("fairness: A had %d of 200 jobs started when B submitted; B's job was start #%d (%d of A's jobs started in between)", submittedAt, pos+1, pos-submittedAt)
		if ahead := pos - submittedAt; ahead > 3 {
			t.Errorf("B's job started after %d more of A's jobs (A had %d started at B's submit), want at most 3", ahead, submittedAt)
		}
		for _, id := range a { // end A's backlog: cancel what has not run
			if _, err := e.svc.Cancel(ctx, e.owner, id); err != nil && !errors.Is(err, ErrNotCancelable) {
				t.Fatal(err)
			}
		}
		for _, id := range a {
			e.waitTerminal(id)
		}
		eventually(t, "dispatched set emptied", func() bool {
			e.svc.promote(ctx, "fair", e.owner)
			return e.svc.rdb.SCard(ctx, rdb.KeyDispatched("fair", e.owner)).Val() == 0
		})
		if e.svc.rdb.SCard(ctx, rdb.KeyInflight(e.owner)).Val() != 0 || e.svc.rdb.Exists(ctx, rdb.KeyBacklog("fair", e.owner)).Val() != 0 {
			t.Error("in-flight set or backlog left after every job ended")
		}
	})
}

// TestMaxInFlight: a key with its most unfinished jobs is refused.
func TestMaxInFlight(t *testing.T) {
	forBackends(t, func(t *testing.T, addr string) {
		e := newEnv(t, addr, Options{MaxInFlight: 2})
		e.advertise("idle")
		e.submit("idle", 1, "")
		e.submit("idle", 1, "")
		_, err := e.svc.Submit(context.Background(), SubmitRequest{Owner: e.owner, Model: "idle", Cost: 1})
		if !errors.Is(err, ErrTooManyJobs) {
			t.Fatalf("third submit: %v, want ErrTooManyJobs", err)
		}
		if e.balance() != e.credits-2 {
			t.Errorf("the refused submit charged: balance %d", e.balance())
		}
	})
}

// TestRateLimit: a key limited to a burst of 3 at 2/s gets 3 requests,
// then a refusal with a retry time of about half a second; its own limit
// wins over the default; a negative default turns limits off.
func TestRateLimit(t *testing.T) {
	forBackends(t, func(t *testing.T, addr string) {
		e := newEnv(t, addr, Options{})
		ctx := context.Background()
		if _, err := e.svc.SetKeyLimits(ctx, OwnerOf(e.key)[:12], KeyLimits{Rate: 2, Burst: 3}); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			d, err := e.svc.Allow(ctx, e.owner)
			if err != nil || !d.Allowed || d.Remaining != 2-i || d.Limit != 3 {
				t.Fatalf("request %d: %+v %v", i, d, err)
			}
		}
		d, err := e.svc.Allow(ctx, e.owner)
		if err != nil || d.Allowed || d.RetryAfter < 300*time.Millisecond || d.RetryAfter > 600*time.Millisecond {
			t.Fatalf("4th request: %+v %v, want refused with a retry of about 500 ms", d, err)
		}
		if d.Window != 1500*time.Millisecond {
			t.Errorf("window %v, want 1.5s (3 tokens at 2/s)", d.Window)
		}
		free := newEnv(t, addr, Options{RateLimit: -1, RateBurst: -1})
		for range 200 {
			if d, _ := free.svc.Allow(ctx, free.owner); !d.Allowed {
				t.Fatal("a disabled limit refused a request")
			}
		}
	})
}

// TestHistoryAndDelete: the owner's jobs page newest first with a cursor
// and filters; a deleted job's outputs are gone and its status is 404; an
// unfinished job cannot be deleted.
func TestHistoryAndDelete(t *testing.T) {
	forBackends(t, func(t *testing.T, addr string) {
		e := newEnv(t, addr, Options{})
		ctx := context.Background()
		p := &slow{name: "quick", d: 0}
		e.worker(p)
		var ids []string
		for range 5 {
			j := e.submit("quick", 1, "")
			ids = append(ids, j.ID)
			e.waitTerminal(j.ID)
			time.Sleep(2 * time.Millisecond) // distinct created_at
		}
		var got []string
		cursor := ""
		for pages := 0; pages < 5; pages++ {
			page, err := e.svc.List(ctx, e.owner, ListQuery{Limit: 2, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			for _, j := range page.Jobs {
				got = append(got, j.ID)
			}
			if cursor = page.NextCursor; len(page.Jobs) < 2 {
				break
			}
		}
		for i := range ids {
			if i >= len(got) || got[i] != ids[len(ids)-1-i] {
				t.Fatalf("history %v, want newest first %v", got, ids)
			}
		}
		if page, _ := e.svc.List(ctx, e.owner, ListQuery{Status: StatusError}); len(page.Jobs) != 0 {
			t.Errorf("status filter: %d error jobs, want 0", len(page.Jobs))
		}
		if _, err := e.svc.List(ctx, e.owner, ListQuery{Cursor: "garbage"}); !errors.Is(err, ErrBadCursor) {
			t.Errorf("bad cursor: %v", err)
		}
		out := e.mustGet(ids[0]).Output
		if len(out) == 0 {
			t.Fatal("no output to delete")
		}
		if err := e.svc.Delete(ctx, e.owner, ids[0]); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.Get(ctx, e.owner, ids[0]); !errors.Is(err, ErrNotFound) {
			t.Errorf("status after delete: %v, want ErrNotFound", err)
		}
		if _, err := os.Stat(filepath.Join(e.store.Dir(), ids[0])); !os.IsNotExist(err) {
			t.Errorf("outputs left after delete: %v", err)
		}
		if err := e.svc.Delete(ctx, e.owner, ids[0]); !errors.Is(err, ErrNotFound) {
			t.Errorf("second delete: %v", err)
		}
		e.advertise("idle")
		q := e.submit("idle", 1, "")
		if err := e.svc.Delete(ctx, e.owner, q.ID); !errors.Is(err, ErrJobUnfinished) {
			t.Errorf("delete of a queued job: %v, want ErrJobUnfinished", err)
		}
	})
}

// countHook counts Redis round trips (a pipeline is one).
type countHook struct {
	mu sync.Mutex
	n  int
}

func (h *countHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.mu.Lock()
		h.n++
		h.mu.Unlock()
		return next(ctx, cmd)
	}
}
func (h *countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.mu.Lock()
		h.n++
		h.mu.Unlock()
		return next(ctx, cmds)
	}
}

func (h *countHook) take() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := h.n
	h.n = 0
	return n
}

// TestSubmitRoundTrips pins the Redis round trips of a dispatched submit:
// 4 (worker slots, balance, the submit script, the enqueue), as before the
// client API (worker count, balance, script, enqueue); 5 with an
// Idempotency-Key (its claim); 3 for a held job (no enqueue).
func TestSubmitRoundTrips(t *testing.T) {
	e := newEnv(t, redistest.Start(t), Options{})
	e.advertise("idle")
	e.advertise("other")
	ctx := context.Background()
	// Load the scripts first (a cold EVALSHA costs a second EVAL).
	e.submit("idle", 1, "")
	k2, _ := e.svc.CreateKey(ctx, "warm-up", 5)
	if _, err := e.svc.Submit(ctx, SubmitRequest{Owner: OwnerOf(k2), Model: "other", Cost: 1}); err != nil {
		t.Fatal(err) // asynq registers a new queue once
	}
	h := &countHook{}
	e.svc.rdb.AddHook(h)
	cases := []struct {
		name string
		req  SubmitRequest
		want int
	}{
		{"dispatched", SubmitRequest{Owner: e.owner, Model: "idle", Cost: 1}, 4},
		{"idempotent", SubmitRequest{Owner: e.owner, Model: "other", Cost: 1, IdempotencyKey: "k", Fingerprint: "f"}, 5},
		{"held", SubmitRequest{Owner: e.owner, Model: "idle", Cost: 1}, 3},
	}
	for _, c := range cases {
		h.take()
		if _, err := e.svc.Submit(ctx, c.req); err != nil {
			t.Fatal(err)
		}
		if n := h.take(); n != c.want {
			t.Errorf("%s submit: %d round trips, want %d", c.name, n, c.want)
		}
	}
}

// FuzzParseCursor: a cursor either parses to a score and a job id or is
// ErrBadCursor, and what List gives back parses again.
func FuzzParseCursor(f *testing.F) {
	for _, c := range []string{"", "1700000000000.0b6e2f6a-1111-4111-8111-111111111111", "x.y", ".", "12."} {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, c string) {
		score, after, err := parseCursor(c)
		if err != nil {
			if !errors.Is(err, ErrBadCursor) {
				t.Fatalf("error %v", err)
			}
			return
		}
		if c == "" {
			return
		}
		if again := score + "." + after; again != c {
			t.Fatalf("%q parsed to %q", c, again)
		}
	})
}

// TestEventLatency measures, on a real redis-server, the delay from a
// progress write on one service (a worker) to the watcher's callback on
// another (an API node): 300 samples, p50 and p99 logged, p99 under 50 ms.
func TestEventLatency(t *testing.T) {
	addr := redistest.Start(t)
	e := newEnv(t, addr, Options{})
	node2 := newEnv(t, addr, Options{})
	e.advertise("idle")
	j := e.submit("idle", 1, "")
	ctx := context.Background()
	got := make(chan time.Time, 1)
	stop, err := node2.svc.Watch(ctx, e.owner, j.ID, func() { got <- time.Now() })
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	var lat []time.Duration
	for i := range 300 {
		start := time.Now()
		if _, err := e.svc.setProgress(ctx, j.ID, Progress{Stage: "s", Fraction: float64(i) / 300}); err != nil {
			t.Fatal(err)
		}
		select {
		case at := <-got:
			lat = append(lat, at.Sub(start))
		case <-time.After(time.Second):
			t.Fatalf("event %d not heard within 1 s", i)
		}
	}
	slices.Sort(lat)
	p50, p99 := lat[len(lat)/2], lat[len(lat)*99/100]
	t.Logf("event latency from a progress write to another node's watcher: p50 %v p99 %v (%d samples)", p50, p99, len(lat))
	if p99 > 50*time.Millisecond {
		t.Errorf("p99 %v, want under 50 ms", p99)
	}
}
