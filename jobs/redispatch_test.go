package jobs

import (
	"context"
	"errors"
	"testing"

	"github.com/hibiken/asynq"

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
