package jobs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"fashiond/jobs/internal/rdb"
)

// stuckAfter is how old a non-terminal job must be before the janitor looks
// at its queue task (a fresh job may not be enqueued yet).
const stuckAfter = 30 * time.Second

func (s *Service) janitor(every time.Duration) {
	defer s.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			if err := s.Sweep(ctx); err != nil {
				s.log.Warn("janitor", "err", err)
			}
			cancel()
		}
	}
}

// Sweep is one janitor pass (Open runs it every JanitorInterval): it deletes
// jobs past their retention with their outputs and queue tasks, and fails
// (with refund) jobs that can no longer finish: whose task was lost or
// archived after its retries (e.g. a worker that kept crashing), or, once
// older than UnservedTimeout, that wait in the queue or sit with a dead
// worker while no live worker serves their model. Safe to run from several
// processes at once.
func (s *Service) Sweep(ctx context.Context) error {
	return errors.Join(s.expire(ctx), s.unstick(ctx), s.promoteAll(ctx))
}

func (s *Service) expire(ctx context.Context) error {
	for {
		ids, err := s.rdb.ZRangeByScore(ctx, rdb.KeyExpiry, &redis.ZRangeBy{
			Min: "-inf", Max: strconv.FormatInt(nowMS(), 10), Count: 200}).Result()
		if err != nil {
			return fmt.Errorf("expire: %w", err)
		}
		if len(ids) == 0 {
			return nil
		}
		for _, id := range ids {
			if err := s.store.DeletePrefix(ctx, id+"/"); err != nil {
				return fmt.Errorf("expire %s: outputs: %w", id, err) // retried next pass
			}
			owner, _ := s.rdb.HGet(ctx, rdb.KeyJob(id), rdb.FieldOwner).Result()
			s.dropInputs(ctx, id, owner)
			n, err := s.rdb.ZRem(ctx, rdb.KeyExpiry, id).Result()
			if err != nil {
				return fmt.Errorf("expire: %w", err)
			}
			if n == 0 {
				continue // another janitor took it
			}
			model, _ := s.rdb.HGet(ctx, rdb.KeyJob(id), rdb.FieldModel).Result()
			pipe := s.rdb.TxPipeline()
			pipe.Del(ctx, rdb.KeyJob(id))
			pipe.ZRem(ctx, rdb.KeyActive, id)
			if owner != "" {
				pipe.ZRem(ctx, rdb.KeyOwnerJobs(owner), id)
				pipe.SRem(ctx, rdb.KeyInflight(owner), id)
			}
			if _, err := pipe.Exec(ctx); err != nil {
				return fmt.Errorf("expire %s: %w", id, err)
			}
			if model != "" {
				s.deleteTask(rdb.QueueName(model), id)
			}
			s.deleteTask(rdb.WebhookQueue, "wh-"+id)
		}
		if len(ids) < 200 {
			return nil
		}
	}
}

// deleteTask removes a task that is not running, ignoring absent ones.
func (s *Service) deleteTask(queue, id string) {
	err := s.insp.DeleteTask(queue, id)
	if err != nil && !errors.Is(err, asynq.ErrTaskNotFound) && !errors.Is(err, asynq.ErrQueueNotFound) {
		s.log.Debug("delete task", "queue", queue, "task", id, "err", err)
	}
}

func (s *Service) unstick(ctx context.Context) error {
	ids, err := s.rdb.ZRangeByScore(ctx, rdb.KeyActive, &redis.ZRangeBy{
		Min: "-inf", Max: strconv.FormatInt(nowMS()-stuckAfter.Milliseconds(), 10), Count: 500}).Result()
	if err != nil {
		return fmt.Errorf("unstick: %w", err)
	}
	var errs []error
	for _, id := range ids {
		if err := s.unstickOne(ctx, id); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (s *Service) unstickOne(ctx context.Context, id string) error {
	r, err := s.load(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return s.rdb.ZRem(ctx, rdb.KeyActive, id).Err()
	}
	if err != nil {
		return err
	}
	if terminal(r.Status) {
		return s.rdb.ZRem(ctx, rdb.KeyActive, id).Err()
	}
	queue := rdb.QueueName(r.Model)
	info, err := s.insp.GetTaskInfo(queue, id)
	var msg string
	switch {
	case time.Since(r.CreatedAt) > s.maxAge(r.Model)+s.timeout(r.Model):
		msg = fmt.Sprintf("the job did not finish within %s of its submission; credits refunded", s.maxAge(r.Model)+s.timeout(r.Model))
	case r.Held:
		return nil // in its key's backlog: no task yet (promoteAll moves it)
	case errors.Is(err, asynq.ErrTaskNotFound) || errors.Is(err, asynq.ErrQueueNotFound):
		if again, err := s.requeue(ctx, r); again || err != nil {
			return err
		}
		msg = fmt.Sprintf("the job's queue entry was lost %d times; credits refunded", maxRequeues+1)
	case err != nil:
		return fmt.Errorf("unstick %s: %w", id, err)
	case info.State == asynq.TaskStateArchived:
		msg = fmt.Sprintf("the job did not finish after %d attempts (%s); credits refunded", info.Retried+1, describeTaskError(info.LastErr))
	case info.State == asynq.TaskStatePending || info.State == asynq.TaskStateRetry || info.State == asynq.TaskStateScheduled:
		if time.Since(r.CreatedAt) < s.opts.UnservedTimeout {
			return nil
		}
		n, err := s.liveWorkers(ctx, r.Model)
		if err != nil || n > 0 {
			return err
		}
		msg = fmt.Sprintf("no worker serving %s was available for %s; credits refunded", r.Model, s.opts.UnservedTimeout)
	case info.State == asynq.TaskStateActive:
		// A live worker of the model recovers a dead worker's task (see
		// orphanAfter); with none left, the job would wait forever.
		if time.Since(r.CreatedAt) < s.opts.UnservedTimeout {
			return nil
		}
		score, err := s.db.LeaseScore(ctx, queue, id)
		if err != nil || int64(score) >= time.Now().Add(30*time.Second-orphanAfter).Unix() {
			return nil // no lease, or one still being extended
		}
		n, err := s.liveWorkers(ctx, r.Model)
		if err != nil || n > 0 {
			return err
		}
		msg = fmt.Sprintf("the worker running the job stopped and no worker serving %s was available for %s; credits refunded", r.Model, s.opts.UnservedTimeout)
	default:
		return nil
	}
	done, err := s.fail(ctx, r, msg)
	if err != nil {
		return err
	}
	if done {
		s.log.Warn("failed a stuck job", "job", id, "model", r.Model, "error", msg)
		r.Status = StatusError
		s.enqueueWebhook(ctx, r)
		s.deleteTask(queue, id)
	}
	return nil
}

// maxRequeues bounds how often the janitor enqueues again the task of a
// job whose task was lost; the time after that fails it (refunded).
const maxRequeues = 3

// requeue enqueues again the task of job r, which has not ended, is not
// held in its key's backlog and has no task: a failover lost its task (a
// write of the old master that never reached the new one: an enqueue of
// a submission answered with an error, of a promotion from a backlog, or
// a worker's dequeue and acknowledgement split across the switch) or an
// enqueue failed after the record was written. The job was charged once,
// at submission, and the task id is the job id, so this is safe to repeat
// and to race with another janitor. false when r used its maxRequeues.
func (s *Service) requeue(ctx context.Context, r *record) (bool, error) {
	n, err := s.rdb.HIncrBy(ctx, rdb.KeyJob(r.ID), rdb.FieldRequeues, 1).Result()
	if err != nil {
		return false, fmt.Errorf("requeue %s: %w", r.ID, err)
	}
	if n > maxRequeues {
		return false, nil
	}
	if err := s.enqueue(ctx, r.ID, r.Model); err != nil {
		return false, fmt.Errorf("requeue %s: %w", r.ID, err)
	}
	s.log.Warn("enqueued again a job whose queue task was lost (a Redis failover?)", "job", r.ID, "model", r.Model, "requeue", n)
	return true, nil
}

func describeTaskError(e string) string {
	switch {
	case strings.Contains(e, asynq.ErrLeaseExpired.Error()):
		return "the worker running it stopped"
	case strings.Contains(e, context.DeadlineExceeded.Error()):
		return "it ran past its time limit"
	case e == "":
		return "no error recorded"
	}
	return e
}
