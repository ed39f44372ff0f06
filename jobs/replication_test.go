package jobs

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestOnlineReplicas: only replicas in state online count (attached and
// done with their initial sync), and none on a server that is not a
// master.
func TestOnlineReplicas(t *testing.T) {
	tests := []struct {
		name, info string
		want       int
	}{
		{"no replica", "# Replication\r\nrole:master\r\nconnected_slaves:0\r\n", 0},
		{"one online", "# Replication\r\nrole:master\r\nconnected_slaves:1\r\nslave0:ip=127.0.0.1,port=6380,state=online,offset=42,lag=0\r\n", 1},
		{"one syncing", "role:master\r\nconnected_slaves:1\r\nslave0:ip=127.0.0.1,port=6380,state=wait_bgsave,offset=0,lag=0\r\n", 0},
		{"two of three", "role:master\r\nslave0:ip=a,port=1,state=online,offset=1,lag=0\r\nslave1:ip=b,port=2,state=send_bulk,offset=0,lag=0\r\nslave12:ip=c,port=3,state=online,offset=1,lag=1\r\n", 2},
		{"a replica itself", "role:slave\r\nmaster_host:127.0.0.1\r\nslave_read_repl_offset:5\r\nslave0:ip=a,port=1,state=online\r\n", 0},
		{"not info", "slaves:state=online\r\nslave:state=online\r\nslavex:state=online\r\nrole:master\r\n", 0},
		{"empty", "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := onlineReplicas(tc.info); got != tc.want {
				t.Errorf("onlineReplicas = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestSubmitAwaitsReplica: with wait_replicas=1 on a master that has no
// online replica, a submission waits replicaAttachWait for one, then is
// refused with a *ReplicasError having written nothing (no job, no
// charge), and Ready reports the same state; a submission made while a
// replica attaches waits for it and is accepted; once the replica is
// online Ready is nil.
func TestSubmitAwaitsReplica(t *testing.T) {
	ctx := context.Background()
	// No diskless-sync delay (5 s by default): the replica is online within
	// the bounded wait.
	port := startRedisProc(t, "redis-server", "--repl-diskless-sync-delay", "0")
	e := newEnv(t, "redis://127.0.0.1:"+strconv.Itoa(port), Options{})
	e.svc.waitReplicas, e.svc.waitTimeout = 1, 500*time.Millisecond
	e.advertise("work")
	req := SubmitRequest{Owner: e.owner, Model: "work", Cost: 3}

	t0 := time.Now()
	_, err := e.svc.Submit(ctx, req)
	took := time.Since(t0)
	var re *ReplicasError
	if !errors.As(err, &re) || !errors.Is(err, ErrReplicasOffline) || re.Online != 0 || re.Required != 1 {
		t.Fatalf("submit without a replica: %v, want a *ReplicasError 0 of 1", err)
	}
	if took < replicaAttachWait || took > replicaAttachWait+2*time.Second {
		t.Errorf("refused after %v, want after the bounded wait of %v (+2 s at most)", took, replicaAttachWait)
	}
	if !strings.Contains(err.Error(), "0 of the 1 online replicas") {
		t.Errorf("error %q does not state the replication", err)
	}
	if page, err := e.svc.List(ctx, e.owner, ListQuery{Limit: 10}); err != nil || len(page.Jobs) != 0 {
		t.Errorf("after the refusal: %d jobs (%v), want none written", len(page.Jobs), err)
	}
	if bal, err := e.svc.Balance(ctx, e.owner); err != nil || bal != e.credits {
		t.Errorf("balance %d (%v) after the refusal, want %d (nothing charged)", bal, err, e.credits)
	}
	if err := e.svc.Ready(ctx); !errors.As(err, &re) || re.Online != 0 {
		t.Errorf("Ready without a replica: %v, want a *ReplicasError", err)
	}

	type result struct {
		j    *Job
		err  error
		took time.Duration
	}
	done := make(chan result, 1)
	go func() {
		t0 := time.Now()
		j, err := e.svc.Submit(ctx, req)
		done <- result{j, err, time.Since(t0)}
	}()
	startRedisProc(t, "redis-server", "--replicaof", "127.0.0.1", strconv.Itoa(port))
	r := <-done
	if r.err != nil {
		t.Fatalf("submit while a replica attached (answered after %v): %v", r.took, r.err)
	}
	t.Logf("submission accepted %v after it began, once the replica came online", r.took.Round(time.Millisecond))
	if err := e.svc.Ready(ctx); err != nil {
		t.Errorf("Ready with an online replica: %v", err)
	}
	if _, err := e.svc.Cancel(ctx, e.owner, r.j.ID); err != nil {
		t.Errorf("cancel with an online replica: %v", err)
	}
}
