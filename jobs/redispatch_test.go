package jobs

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"fashiond/jobs/internal/rdb"
)

// TestReplayRedispatchesLostTask: a job whose record survived but whose
// asynq task did not (a Redis failover between the two writes, after the
// first answer was an error) is enqueued again when the client retries with
// the same Idempotency-Key, so a charged job never waits forever; a replay
// of a job whose task exists changes nothing.
func TestReplayRedispatchesLostTask(t *testing.T) {
	forBackends(t, func(t *testing.T, addr string) {
		e := newEnv(t, addr, Options{})
		e.advertise("work")
		ctx := context.Background()
		req := SubmitRequest{Owner: e.owner, Model: "work", Cost: 1,
			IdempotencyKey: "lost-task", Fingerprint: Fingerprint([]byte("work"), []byte(`{"n":1}`))}
		j, err := e.svc.Submit(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		insp := asynq.NewInspectorFromRedisClient(e.svc.Redis())
		queue := rdb.QueueName("work")
		if _, err := insp.GetTaskInfo(queue, j.ID); err != nil {
			t.Fatalf("the submitted job has no task: %v", err)
		}
		// A replay while the task exists: still one task, same job.
		again, err := e.svc.Submit(ctx, req)
		if err != nil || again.ID != j.ID || !again.Replayed {
			t.Fatalf("replay: %+v, %v", again, err)
		}
		// The failover lost the task, not the record.
		if err := insp.DeleteTask(queue, j.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := insp.GetTaskInfo(queue, j.ID); !errors.Is(err, asynq.ErrTaskNotFound) {
			t.Fatalf("task still there after delete: %v", err)
		}
		again, err = e.svc.Submit(ctx, req)
		if err != nil || again.ID != j.ID || !again.Replayed {
			t.Fatalf("replay after the loss: %+v, %v", again, err)
		}
		if _, err := insp.GetTaskInfo(queue, j.ID); err != nil {
			t.Fatalf("the replay did not enqueue the lost task again: %v", err)
		}
		if bal := e.balance(); bal != e.credits-1 {
			t.Errorf("balance %d, want %d (charged once)", bal, e.credits-1)
		}
	})
}

// TestSweepRequeuesLostTask: the janitor enqueues again the task of a job
// that has not ended and whose task is gone (a failover lost it), up to
// maxRequeues times, charging nothing more; the time after that it fails
// the job with a refund.
func TestSweepRequeuesLostTask(t *testing.T) {
	forBackends(t, func(t *testing.T, addr string) {
		e := newEnv(t, addr, Options{})
		e.advertise("work")
		ctx := context.Background()
		j, err := e.svc.Submit(ctx, SubmitRequest{Owner: e.owner, Model: "work", Cost: 2})
		if err != nil {
			t.Fatal(err)
		}
		insp := asynq.NewInspectorFromRedisClient(e.svc.Redis())
		queue := rdb.QueueName("work")
		old := float64(time.Now().Add(-2 * stuckAfter).UnixMilli())
		for n := 1; n <= maxRequeues+1; n++ {
			if err := insp.DeleteTask(queue, j.ID); err != nil {
				t.Fatalf("loss %d: %v", n, err)
			}
			if err := e.svc.Redis().ZAdd(ctx, rdb.KeyActive, redis.Z{Score: old, Member: j.ID}).Err(); err != nil {
				t.Fatal(err)
			}
			if err := e.svc.Sweep(ctx); err != nil {
				t.Fatalf("sweep %d: %v", n, err)
			}
			got, err := e.svc.Get(ctx, e.owner, j.ID)
			if err != nil {
				t.Fatal(err)
			}
			_, terr := insp.GetTaskInfo(queue, j.ID)
			switch {
			case n <= maxRequeues && (got.Status != StatusStarting || terr != nil):
				t.Fatalf("sweep %d: job %s, task %v; want it waiting with its task enqueued again", n, got.Status, terr)
			case n <= maxRequeues && e.balance() != e.credits-2:
				t.Fatalf("sweep %d: balance %d, want %d (charged once)", n, e.balance(), e.credits-2)
			case n > maxRequeues && (got.Status != StatusError || e.balance() != e.credits):
				t.Fatalf("sweep %d: job %s (%v), balance %d; want it failed and refunded after %d requeues", n, got.Status, got.Error, e.balance(), maxRequeues)
			}
		}
	})
}

// TestConfirmSubmissionChecksTask: with wait_replicas, a submission is
// confirmed on the server whose replicas acknowledged it only when its
// record and task are both there; a lost task is enqueued again, a lost
// record is ErrNotReplicated.
func TestConfirmSubmissionChecksTask(t *testing.T) {
	ctx := context.Background()
	master := startRedisProc(t, "redis-server", "--repl-diskless-sync-delay", "0")
	startRedisProc(t, "redis-server", "--replicaof", "127.0.0.1", strconv.Itoa(master))
	waitFor(t, "the replica to come online", 10*time.Second, func() bool {
		return onlineReplicas(infoOf(ctx, master, "replication")) == 1
	})
	e := newEnv(t, "redis://127.0.0.1:"+strconv.Itoa(master), Options{})
	e.svc.waitReplicas, e.svc.waitTimeout = 1, time.Second
	e.advertise("work")
	j, err := e.svc.Submit(ctx, SubmitRequest{Owner: e.owner, Model: "work", Cost: 1})
	if err != nil {
		t.Fatal(err)
	}
	insp := asynq.NewInspectorFromRedisClient(e.svc.Redis())
	queue := rdb.QueueName("work")
	if err := insp.DeleteTask(queue, j.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.checkSubmission(ctx, j.ID, "work", true); !errors.Is(err, errTaskLost) || !errors.Is(err, ErrNotReplicated) {
		t.Fatalf("check with the task gone: %v, want errTaskLost (ErrNotReplicated)", err)
	}
	if err := e.svc.confirmSubmission(ctx, j.ID, "work", true); err != nil {
		t.Fatalf("confirm with the task gone: %v, want it enqueued again", err)
	}
	if _, err := insp.GetTaskInfo(queue, j.ID); err != nil {
		t.Fatalf("the lost task was not enqueued again: %v", err)
	}
	if err := e.svc.Redis().Del(ctx, rdb.KeyJob(j.ID)).Err(); err != nil {
		t.Fatal(err)
	}
	err = e.svc.confirmSubmission(ctx, j.ID, "work", true)
	if !errors.Is(err, ErrNotReplicated) || errors.Is(err, errTaskLost) {
		t.Fatalf("confirm with the record gone: %v, want ErrNotReplicated", err)
	}
}
