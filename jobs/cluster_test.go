package jobs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/hibiken/asynqmon"
	"github.com/redis/go-redis/v9"

	"fashiond/jobs/internal/rdb"
)

// Shape and timing of the real Redis Cluster test.
const (
	clusterMasters     = 3
	clusterReplicas    = 1 // per master
	clusterNodeTimeout = "2000"
	clusterReadyLimit  = 20 * time.Second
)

// testCluster is a running Redis Cluster of redis-server processes.
type testCluster struct {
	ports []int // every node
	url   string
}

// startCluster starts clusterMasters*(1+clusterReplicas) redis-server
// processes with cluster mode on, joins them with redis-cli --cluster
// create, and waits until every node reports cluster_state:ok and every
// replica's link to its master is up. It skips the test when redis-server
// or redis-cli is not installed.
func startCluster(t *testing.T) *testCluster {
	t.Helper()
	for _, bin := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s is not installed (apt-get install redis-server, or make setup): no real Redis Cluster to test against", bin)
		}
	}
	start := time.Now()
	c := &testCluster{}
	var addrs []string
	for range clusterMasters * (1 + clusterReplicas) {
		p := startRedisProc(t, "redis-server", "--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf", "--cluster-node-timeout", clusterNodeTimeout)
		c.ports = append(c.ports, p)
		addrs = append(addrs, "127.0.0.1:"+strconv.Itoa(p))
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", strconv.Itoa(clusterReplicas), "--cluster-yes")
	ctx, cancel := context.WithTimeout(context.Background(), clusterReadyLimit)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "redis-cli", args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	waitFor(t, "cluster_state:ok on every node and every replica linked", clusterReadyLimit, func() bool {
		for _, p := range c.ports {
			if !strings.Contains(clusterInfo(p), "cluster_state:ok") {
				return false
			}
			repl := infoOf(context.Background(), p, "replication")
			if strings.Contains(repl, "role:slave") && !strings.Contains(repl, "master_link_status:up") {
				return false
			}
		}
		return true
	})
	c.url = "redis+cluster://" + strings.Join(addrs[:2], ",") // two seeds: the client finds the rest
	t.Logf("Redis Cluster of %d masters and %d replicas ready after %v", clusterMasters,
		clusterMasters*clusterReplicas, time.Since(start).Round(time.Millisecond))
	return c
}

// clusterInfo is CLUSTER INFO of the node on port ("" when it fails).
func clusterInfo(port int) string {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port), MaxRetries: -1})
	defer c.Close()
	s, _ := c.ClusterInfo(context.Background()).Result()
	return s
}

// client is a plain ClusterClient on the test cluster, closed at the end.
func (c *testCluster) client(t *testing.T) *redis.ClusterClient {
	addrs := make([]string, len(c.ports))
	for i, p := range c.ports {
		addrs[i] = "127.0.0.1:" + strconv.Itoa(p)
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	t.Cleanup(func() { cc.Close() })
	return cc
}

// TestCluster runs the job service and a real worker on a real Redis
// Cluster (three masters, three replicas) through a redis+cluster:// URL
// and checks that it behaves as on one Redis: the start-up migration finds
// old-layout keys on every master, a job runs to success with its output
// and its signed webhook, pub/sub events reach a watcher, an
// Idempotency-Key replay returns the job once and charges once, a
// cancellation refunds, the credits add up, asynq's inspector (the metrics
// queue depth) and the asynqmon dashboard read the queues, and
// wait_replicas runs WAIT on the shards the submission wrote to.
func TestCluster(t *testing.T) {
	c := startCluster(t)
	cc := c.client(t)
	legacy := seedLegacyKeys(t, cc)
	e := newEnv(t, c.url, Options{})
	if _, ok := e.svc.Redis().(*redis.ClusterClient); !ok {
		t.Fatalf("the service's client is a %T, want *redis.ClusterClient", e.svc.Redis())
	}
	checkLegacyMigrated(t, cc, legacy)

	draw := &gradient{name: "draw", n: 2, w: 16, h: 12}
	hold := newBlocking("hold", 1)
	e.worker(draw, hold)
	t.Run("success-webhook-events", func(t *testing.T) { clusterSuccess(t, e) })
	t.Run("idempotent-replay", func(t *testing.T) { clusterReplay(t, e) })
	t.Run("cancel", func(t *testing.T) { clusterCancel(t, e, hold) })
	t.Run("queues", func(t *testing.T) { clusterQueues(t, e) })
	t.Run("wait_replicas", func(t *testing.T) { clusterWait(t, c, cc) })
	t.Run("eviction-warning", func(t *testing.T) { clusterEviction(t, e, cc) })

	// The janitor's pass (expiry, stuck jobs, backlog promotion) and the
	// history read run on the cluster too.
	if err := e.svc.Sweep(context.Background()); err != nil {
		t.Errorf("Sweep: %v", err)
	}
	if page, err := e.svc.List(context.Background(), e.owner, ListQuery{Limit: MaxListLimit}); err != nil {
		t.Errorf("List: %v", err)
	} else if len(page.Jobs) != 3 {
		t.Errorf("List: %d jobs, want 3", len(page.Jobs))
	}

	// Credits: two draw jobs (cost 2 each: the success and the replayed
	// one) stay charged; the cancelled one was refunded.
	if got, want := e.balance(), e.credits-4; got != want {
		t.Errorf("balance %d, want %d", got, want)
	}
	if k := e.ledgerKinds(); k["charge"] != 3 || k["refund"] != 1 {
		t.Errorf("ledger %v, want 3 charges and 1 refund", k)
	}
}

// legacyKey is an old-layout key seeded before the service starts.
type legacyKey struct {
	name string
	ttl  bool // seeded with a TTL
}

// seedLegacyKeys writes keys of the first layout ("fashiond:…") with the
// cluster client, and checks that they lie on at least two masters, so
// that a migration scanning one node would miss some.
func seedLegacyKeys(t *testing.T, cc *redis.ClusterClient) []legacyKey {
	t.Helper()
	ctx := context.Background()
	old := rdb.LegacyPrefix
	keys := []legacyKey{{old + "credits:legacy-a", true}, {old + "credits:legacy-b", false},
		{old + "credits:legacy-c", true}, {old + "job:legacy-job", false}}
	masters := map[string]bool{}
	for _, k := range keys {
		var err error
		if strings.HasPrefix(k.name, old+"job:") {
			err = cc.HSet(ctx, k.name, rdb.FieldIdem, old+"idem:legacy-owner:k1", rdb.FieldOwner, "legacy-owner").Err()
		} else {
			var ttl time.Duration
			if k.ttl {
				ttl = time.Hour
			}
			err = cc.Set(ctx, k.name, "7", ttl).Err()
		}
		if err != nil {
			t.Fatal(err)
		}
		m, err := cc.MasterForKey(ctx, k.name)
		if err != nil {
			t.Fatal(err)
		}
		masters[m.Options().Addr] = true
	}
	if len(masters) < 2 {
		t.Fatalf("the seeded legacy keys lie on %d master(s); the test needs them spread", len(masters))
	}
	return keys
}

// checkLegacyMigrated: every seeded key moved to its {fashiond}: name with
// its value and TTL, the job's stored idempotency key name rewritten.
func checkLegacyMigrated(t *testing.T, cc *redis.ClusterClient, keys []legacyKey) {
	t.Helper()
	ctx := context.Background()
	for _, k := range keys {
		if n, err := cc.Exists(ctx, k.name).Result(); err != nil || n != 0 {
			t.Errorf("old key %s still exists (%d, %v)", k.name, n, err)
		}
		name := rdb.Prefix + strings.TrimPrefix(k.name, rdb.LegacyPrefix)
		ttl, err := cc.PTTL(ctx, name).Result()
		if err != nil || ttl == -2*time.Nanosecond || (ttl > 0) != k.ttl {
			t.Errorf("new key %s: TTL %v (%v), want a TTL: %v", name, ttl, err, k.ttl)
		}
		if strings.HasPrefix(name, rdb.KeyJobPrefix) {
			if idem, err := cc.HGet(ctx, name, rdb.FieldIdem).Result(); err != nil || idem != rdb.Prefix+"idem:legacy-owner:k1" {
				t.Errorf("migrated job's idem field %q (%v)", idem, err)
			}
		} else if v, err := cc.Get(ctx, name).Result(); err != nil || v != "7" {
			t.Errorf("migrated %s = %q (%v), want 7", name, v, err)
		}
	}
}

// clusterSuccess: a job with a webhook succeeds, its outputs are served,
// the webhook arrives signed, and a watcher on the service hears the end.
func clusterSuccess(t *testing.T, e *env) {
	rc := &receiver{}
	hook := httptest.NewServer(rc)
	defer hook.Close()
	j := e.submit("draw", 2, hook.URL+"/hook")
	var events atomic.Int32
	stop, err := e.svc.Watch(context.Background(), e.owner, j.ID, func() { events.Add(1) })
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	defer stop()
	got := e.waitTerminal(j.ID)
	if got.Status != StatusSucceeded || len(got.Output) != 2 {
		t.Fatalf("job ended %s with %d outputs (%v), want succeeded with 2", got.Status, len(got.Output), got.Error)
	}
	for i, u := range got.Output {
		if code, data, ct := fetchURL(t, u); code != http.StatusOK || ct != "image/jpeg" || len(data) == 0 {
			t.Errorf("output %d: %d %s, %d bytes", i, code, ct, len(data))
		}
	}
	eventually(t, "the webhook delivery", func() bool { return len(rc.deliveries()) == 1 })
	eventually(t, "job events through cluster pub/sub", func() bool { return events.Load() > 0 })
	if ds := rc.deliveries(); len(ds) == 1 {
		if err := Verify(e.svc.WebhookSecret(), ds[0].h, ds[0].body, time.Minute); err != nil {
			t.Errorf("webhook signature: %v", err)
		}
		var body Job
		if err := json.Unmarshal(ds[0].body, &body); err != nil || body.ID != j.ID || body.Status != StatusSucceeded {
			t.Errorf("webhook body %s (%v)", ds[0].body, err)
		}
	}
}

// clusterReplay: the same Idempotency-Key and request twice is one job
// and one charge; another request with that key is refused.
func clusterReplay(t *testing.T, e *env) {
	ctx := context.Background()
	req := SubmitRequest{Owner: e.owner, Model: "draw", Cost: 2,
		IdempotencyKey: "cluster-k1", Fingerprint: "fp-1"}
	before := e.balance()
	first, err := e.svc.Submit(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	again, err := e.svc.Submit(ctx, req)
	if err != nil || again.ID != first.ID || !again.Replayed {
		t.Fatalf("replay: %+v %v, want job %s replayed", again, err, first.ID)
	}
	req.Fingerprint = "fp-2"
	if _, err := e.svc.Submit(ctx, req); err == nil {
		t.Error("the key with another request was accepted")
	}
	if got := e.balance(); got != before-2 {
		t.Errorf("balance %d after a submission and its replay, want %d", got, before-2)
	}
	if j := e.waitTerminal(first.ID); j.Status != StatusSucceeded {
		t.Errorf("replayed job ended %s", j.Status)
	}
}

// clusterCancel: a running job is cancelled, its pipeline stops and its
// credits come back.
func clusterCancel(t *testing.T, e *env, hold *blocking) {
	before := e.balance()
	j := e.submit("hold", 3, "")
	select {
	case <-hold.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the blocking job did not start")
	}
	got, err := e.svc.Cancel(context.Background(), e.owner, j.ID)
	if err != nil || got.Status != StatusCanceled || got.CreditsRefunded != 3 {
		t.Fatalf("Cancel: %+v %v", got, err)
	}
	if b := e.balance(); b != before {
		t.Errorf("balance %d after the cancellation, want %d", b, before)
	}
	eventually(t, "the cancelled job's task to end", func() bool {
		info, err := e.svc.insp.GetTaskInfo(rdb.QueueName("hold"), j.ID)
		return err != nil || info.State.String() == "completed"
	})
}

// clusterQueues: asynq's inspector on the shared client (as the metrics
// queue-depth collector builds it) and the asynqmon dashboard (as
// cmd/fashiond mounts it) read the model queues from the cluster.
func clusterQueues(t *testing.T, e *env) {
	insp := asynq.NewInspectorFromRedisClient(e.svc.Redis())
	qs, err := insp.Queues()
	if err != nil {
		t.Fatalf("inspector Queues: %v", err)
	}
	for _, m := range []string{"draw", "hold"} {
		if !contains(qs, rdb.QueueName(m)) {
			t.Errorf("queues %v lack %s", qs, rdb.QueueName(m))
			continue
		}
		info, err := insp.GetQueueInfo(rdb.QueueName(m))
		if err != nil || info.Pending != 0 || info.Processed == 0 {
			t.Errorf("queue %s: %+v %v, want none pending and some processed", m, info, err)
		}
	}
	mon := asynqmon.New(asynqmon.Options{RootPath: "/admin/queues", RedisConnOpt: e.svc.RedisConn(), ReadOnly: true})
	srv := httptest.NewServer(mon)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/admin/queues/api/queues")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), rdb.QueueName("draw")) {
		t.Errorf("asynqmon /api/queues: %d %.300s", resp.StatusCode, body)
	}
}

// clusterWait: with wait_replicas=1 (each master has one replica) a
// submission is confirmed by WAIT on exactly the two masters it wrote to,
// the one of the service's keys and the one of its model queue (counted
// with INFO commandstats on every node), and runs; with wait_replicas=2 it
// is refused before anything is written, a *ReplicasError (1 of 2 online
// replicas, after the bounded wait for another).
func clusterWait(t *testing.T, c *testCluster, cc *redis.ClusterClient) {
	ctx := context.Background()
	model := modelOnOtherShard(t, cc)
	one := newEnv(t, c.url+"?wait_replicas=1&wait_timeout=2s", Options{})
	one.worker(&gradient{name: model, n: 1, w: 8, h: 8})
	svcMaster, _ := cc.MasterForKey(ctx, keyReplProbe)
	queueMaster, _ := cc.MasterForKey(ctx, keyQueueProbe(rdb.QueueName(model)))
	before := c.waitCalls(t)
	j, err := one.svc.Submit(ctx, SubmitRequest{Owner: one.owner, Model: model, Cost: 1})
	if err != nil {
		t.Fatalf("Submit with wait_replicas=1: %v", err)
	}
	after := c.waitCalls(t)
	for addr, n := range after {
		want := 0
		if addr == svcMaster.Options().Addr || addr == queueMaster.Options().Addr {
			want = 1
		}
		if n-before[addr] != want {
			t.Errorf("node %s ran WAIT %d times for the submission, want %d (the masters of the service's keys %s and of the queue %s once each)",
				addr, n-before[addr], want, svcMaster.Options().Addr, queueMaster.Options().Addr)
		}
	}
	if got := one.waitTerminal(j.ID); got.Status != StatusSucceeded {
		t.Errorf("job ended %s", got.Status)
	}
	two := newEnv(t, c.url+"?wait_replicas=2&wait_timeout=100ms", Options{})
	_, err = two.svc.Submit(ctx, SubmitRequest{Owner: two.owner, Model: model, Cost: 1})
	var re *ReplicasError
	if !errors.As(err, &re) || re.Online != 1 || re.Required != 2 || !strings.Contains(err.Error(), "1 of the 2") {
		t.Errorf("Submit with wait_replicas=2 and one replica per master: %v, want a *ReplicasError (1 of 2 online, nothing written)", err)
	}
	if page, err := two.svc.List(ctx, two.owner, ListQuery{Limit: 10}); err != nil || len(page.Jobs) != 0 {
		t.Errorf("after the refusal: %d jobs (%v), want none written", len(page.Jobs), err)
	}
}

// modelOnOtherShard is a model name whose queue's slot is served by
// another master than the service's keys.
func modelOnOtherShard(t *testing.T, cc *redis.ClusterClient) string {
	t.Helper()
	ctx := context.Background()
	svc, err := cc.MasterForKey(ctx, keyReplProbe)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 16 {
		m := "waited-" + strconv.Itoa(i)
		q, err := cc.MasterForKey(ctx, keyQueueProbe(rdb.QueueName(m)))
		if err != nil {
			t.Fatal(err)
		}
		if q.Options().Addr != svc.Options().Addr {
			return m
		}
	}
	t.Fatal("no model name of 16 has its queue on another master")
	return ""
}

// waitCalls is how many WAIT commands each node has run (INFO
// commandstats), by address.
func (c *testCluster) waitCalls(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, p := range c.ports {
		info := infoOf(context.Background(), p, "commandstats")
		n := 0
		if _, rest, ok := strings.Cut(info, "cmdstat_wait:calls="); ok {
			num, _, _ := strings.Cut(rest, ",")
			var err error
			if n, err = strconv.Atoi(num); err != nil {
				t.Fatalf("INFO commandstats of %d: %q", p, info)
			}
		}
		out["127.0.0.1:"+strconv.Itoa(p)] = n
	}
	return out
}

// clusterEviction: a master that may evict keys is named at start, even
// when it holds none of the service's own keys (it holds queues).
func clusterEviction(t *testing.T, e *env, cc *redis.ClusterClient) {
	ctx := context.Background()
	svcMaster, err := cc.MasterForKey(ctx, keyReplProbe)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex // ForEachMaster calls fn on every master at once
		other *redis.Client
	)
	err = cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		if n.Options().Addr != svcMaster.Options().Addr {
			other = n // any one of the other masters will do
		}
		return nil
	})
	if err != nil || other == nil {
		t.Fatalf("no second master (%v)", err)
	}
	if err := other.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err(); err != nil {
		t.Fatal(err)
	}
	defer other.ConfigSet(ctx, "maxmemory-policy", "noeviction")
	var logs bytes.Buffer // slog's handler serialises the writes
	svc, err := Open(ctx, Options{RedisURL: e.addr, Store: e.store, JanitorInterval: -1,
		Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	svc.Close()
	want := "maxmemory-policy=allkeys-lru node=" + other.Options().Addr
	if got := logs.String(); !strings.Contains(got, want) || strings.Count(got, "maxmemory-policy=") != 1 {
		t.Errorf("start-up log does not warn once about %s:\n%s", want, got)
	}
}
