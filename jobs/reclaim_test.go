package jobs

import (
	"context"
	"testing"
	"time"

	"fashiond/jobs/internal/rdb"
	"fashiond/spec"
)

// TestReclaimSparesLiveRunner: a task whose asynq lease went stale is
// reclaimed only when the worker that runs it (the job hash's runner) has no
// live heartbeat, or is the reclaiming worker itself and it is not running
// the job (a failover discarded the end of its attempt); the script reads
// the job hash under the service's own key prefix, so a prefix mismatch
// would reclaim every stale lease.
func TestReclaimSparesLiveRunner(t *testing.T) {
	forBackends(t, func(t *testing.T, addr string) {
		e := newEnv(t, addr, Options{})
		ctx := context.Background()
		rc := e.svc.Redis()
		lease := rdb.LeaseKey(rdb.QueueName(spec.ModelTryOn))
		stale := time.Now().Add(-time.Hour).Unix()
		cases := []struct {
			id, runner string
			beat       int64 // unix ms; 0: no heartbeat
			reclaimed  bool
		}{
			{"job-live", "w-live", nowMS(), false},
			{"job-dead", "w-dead", nowMS() - 10*HeartbeatTTL.Milliseconds(), true},
			{"job-none", "w-gone", 0, true},
			{"job-self-ended", "w-self", nowMS(), true},
			{"job-self-running", "w-self", nowMS(), false},
		}
		for _, c := range cases {
			must(t, rc.ZAdd(ctx, lease, redisZ(float64(stale), c.id)).Err())
			must(t, rc.HSet(ctx, rdb.KeyJobPrefix+c.id, rdb.FieldRunner, c.runner).Err())
			if c.beat != 0 {
				must(t, rc.ZAdd(ctx, rdb.KeyWorkers, redisZ(float64(c.beat), c.runner)).Err())
			}
		}
		// A worker that is not started: reclaim is called by hand once.
		w := &Worker{svc: e.svc, id: "w-self", models: []string{spec.ModelTryOn}, log: testLog()}
		w.attempts.Store("job-self-running", struct{}{})
		if got := w.reclaim(ctx); len(got) != 1 || got[0] != rdb.QueueName(spec.ModelTryOn) {
			t.Errorf("reclaim reported queues %v, want [%s]", got, rdb.QueueName(spec.ModelTryOn))
		}
		for _, c := range cases {
			score, err := rc.ZScore(ctx, lease, c.id).Result()
			if err != nil {
				t.Fatal(err)
			}
			if got := score == 0; got != c.reclaimed {
				t.Errorf("%s: reclaimed %v, want %v", c.id, got, c.reclaimed)
			}
		}
	})
}
