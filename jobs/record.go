package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"fashiond/jobs/internal/rdb"
	"fashiond/spec"
)

// record is a job as kept in its Redis hash.
type record struct {
	Job
	Cost      int
	ExpiresAt time.Time
	Refunded  bool
	Runner    string // worker id of the latest attempt
	Held      bool   // waiting in its key's backlog (no queue task yet)
	Deleted   bool   // tombstone
	IdemKey   string // Redis key of its Idempotency-Key, if any
	Inputs    []byte // spec.Encode of the inputs, images as blob references (none once ended)
	Attempt   int
	HookSent  bool // the webhook task was enqueued
}

// fromRecord is a stored job hash as the job system's record.
func fromRecord(x *rdb.Record) *record {
	r := &record{Cost: x.Cost, ExpiresAt: x.ExpiresAt, Refunded: x.Refunded, Runner: x.Runner, Held: x.Held,
		Deleted: x.Deleted, IdemKey: x.IdemKey, Attempt: x.Attempt, HookSent: x.HookSent}
	r.ID, r.Model, r.Owner, r.Status = x.ID, x.Model, x.Owner, x.Status
	r.CreatedAt, r.UpdatedAt, r.Error, r.Output = x.CreatedAt, x.UpdatedAt, x.Error, x.Output
	r.Inputs, r.WebhookURL = x.Inputs, x.Webhook
	if len(x.OutputsInfo) > 0 {
		_ = json.Unmarshal(x.OutputsInfo, &r.Outputs)
	}
	if len(x.Progress) > 0 {
		var p Progress
		if json.Unmarshal(x.Progress, &p) == nil {
			r.Progress = &p
		}
	}
	r.Credits = r.Cost
	if r.Refunded {
		r.Credits, r.CreditsRefunded = 0, r.Cost
	}
	return r
}

// typedInputs reads the record's stored inputs back into the model's spec
// input type (nil for a model outside the spec, whose jobs carry none).
func (r *record) typedInputs() (spec.Inputs, error) {
	if !spec.Known(r.Model) {
		return nil, nil
	}
	return spec.Unmarshal(r.Model, r.Inputs)
}

// load reads a job record; ErrNotFound when absent or past its retention.
func (s *Service) load(ctx context.Context, id string) (*record, error) {
	if !validID(id) {
		return nil, ErrNotFound
	}
	x, err := s.db.Record(ctx, id)
	if errors.Is(err, rdb.ErrNoRecord) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	r := fromRecord(x)
	if r.Deleted || !r.ExpiresAt.IsZero() && time.Now().After(r.ExpiresAt) {
		return nil, ErrNotFound
	}
	for i, o := range r.Output {
		r.Output[i] = s.blobURL(o) // signed now when the store presigns
	}
	return r, nil
}

func validID(id string) bool {
	_, err := uuid.Parse(id)
	return err == nil && len(id) == 36
}

// terminal reports whether a status is final.
func terminal(status string) bool { return status != StatusStarting }

// Get returns owner's job; ErrNotFound for unknown, expired and other
// owners' jobs.
func (s *Service) Get(ctx context.Context, owner, id string) (*Job, error) {
	r, err := s.load(ctx, id)
	if err != nil {
		return nil, err
	}
	if r.Owner != owner {
		return nil, ErrNotFound
	}
	j := r.Job
	if r.Status == StatusStarting && r.Progress == nil {
		q, err := s.queueInfo(ctx, r)
		if err != nil {
			return nil, err
		}
		j.Queue = q
	}
	return &j, nil
}

// Submit creates a job: ErrModelUnavailable (no charge) when no live worker
// serves the model, *CreditsError (no job, no change) when the balance is
// short, ErrTooManyJobs when the key has its most unfinished jobs; else the
// credits are reserved and the job record created in one Lua script, then
// the task is enqueued on the model's queue with the job id as task id
// (rolled back in one script if that fails) or, when the key already has
// its share of the model queue, the job waits in the key's backlog (see
// promote). With an IdempotencyKey, a repeated request returns the first
// one's job with Replayed set (see idemBegin). With wait_replicas, a
// *ReplicasError (nothing written) when the master has too few online
// replicas (awaitReplicas), ErrNotReplicated when they did not confirm
// the write (confirmReplicated).
func (s *Service) Submit(ctx context.Context, req SubmitRequest) (job *Job, err error) {
	if req.Owner == "" || req.Model == "" {
		return nil, errors.New("jobs: submit needs an owner and a model")
	}
	if req.Cost < 0 {
		return nil, errors.New("jobs: negative cost")
	}
	if spec.Known(req.Model) && (req.Inputs == nil || req.Inputs.ModelName() != req.Model) ||
		!spec.Known(req.Model) && req.Inputs != nil {
		return nil, fmt.Errorf("jobs: submit needs the inputs of %s (nil for a model outside the spec)", req.Model)
	}
	if err := s.awaitReplicas(ctx, QueueName(req.Model)); err != nil {
		return nil, err // nothing written: any retry is safe
	}
	var claim string
	if req.IdempotencyKey != "" {
		claim = uuid.NewString()
		prev, ierr := s.idemBegin(ctx, req, claim)
		var enqueued bool
		if ierr == nil && prev != nil {
			enqueued, ierr = s.redispatch(ctx, prev)
		}
		if ierr == nil && prev != nil {
			ierr = s.confirmSubmission(ctx, prev.ID, prev.Model, enqueued) // a replay is answered as durably as a first answer
		}
		if ierr != nil || prev != nil {
			if ierr != nil {
				prev = nil
			}
			return prev, ierr
		}
		defer func() {
			if err != nil {
				s.idemAbort(context.WithoutCancel(ctx), req, claim)
			}
		}()
	}
	workers, slots, err := s.liveSlots(ctx, req.Model)
	if err != nil {
		return nil, err
	}
	if workers == 0 {
		return nil, fmt.Errorf("%w %s", ErrModelUnavailable, req.Model)
	}
	if bal, err := s.Balance(ctx, req.Owner); err != nil {
		return nil, err
	} else if bal < int64(req.Cost) {
		return nil, &CreditsError{Balance: bal, Cost: req.Cost} // before any image is stored
	}
	return s.create(ctx, req, slots, claim)
}

// redispatch enqueues a replayed job's task again when the job was
// dispatched but has not started: the record and the task are two writes,
// so a Redis failover between them (the first attempt answered with an
// error, see confirmReplicated) can keep the record and lose the task,
// which would leave a charged job that never runs. The task id is the job
// id, so a task that still exists makes this a no-op.
// It reports whether it enqueued the task (or found it there).
func (s *Service) redispatch(ctx context.Context, j *Job) (bool, error) {
	if j.Status != StatusStarting {
		return false, nil
	}
	dispatched, err := s.rdb.SIsMember(ctx, rdb.KeyDispatched(j.Model, j.Owner), j.ID).Result()
	if err != nil || !dispatched {
		return false, err
	}
	return true, s.enqueue(ctx, j.ID, j.Model)
}

// create stores the job (see rdb.DB.Submit) and enqueues it when
// dispatched; claim is the request's Idempotency-Key claim token ("" none).
func (s *Service) create(ctx context.Context, req SubmitRequest, slots int, claim string) (*Job, error) {
	id := uuid.NewString()
	inBytes, err := s.spoolInputs(ctx, id, req.Inputs)
	var inputs []byte
	if err == nil && req.Inputs != nil {
		inputs, err = spec.Encode(req.Inputs)
	}
	if err != nil {
		s.dropInputs(context.WithoutCancel(ctx), id, "")
		return nil, err
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	sub := rdb.Submission{
		Job: rdb.NewJob{ID: id, Model: req.Model, Owner: req.Owner, Status: StatusStarting, Created: now,
			Cost: req.Cost, Inputs: inputs, Webhook: req.WebhookURL, ExpiresAt: now.Add(s.opts.Retention), InputBytes: inBytes},
		Ledger:    ledgerJSON("charge", id, req.Model, -int64(req.Cost)),
		Retention: s.opts.Retention, InputQuota: s.opts.InputQuota,
		IdempotencyKey: req.IdempotencyKey, IdemTTL: IdempotencyTTL,
		MaxInFlight: s.opts.MaxInFlight, DispatchCap: max(slots, 1),
	}
	if req.IdempotencyKey != "" {
		sub.IdemValue = rdb.IdemDone(req.Fingerprint, id)
		sub.IdemClaim = rdb.IdemPending(req.Fingerprint, claim)
	}
	res, err := s.db.Submit(ctx, sub)
	if err != nil || res.Outcome != rdb.SubmitCreated {
		s.dropInputs(context.WithoutCancel(ctx), id, "")
	}
	switch {
	case err != nil:
		return nil, err
	case res.Outcome == rdb.SubmitCreditsShort:
		return nil, &CreditsError{Balance: res.N, Cost: req.Cost}
	case res.Outcome == rdb.SubmitQuotaFull:
		return nil, &QuotaError{Stored: res.N, Adding: inBytes, Quota: s.opts.InputQuota}
	case res.Outcome == rdb.SubmitTooMany:
		return nil, fmt.Errorf("%w: the key has %d unfinished jobs", ErrTooManyJobs, res.N)
	case res.Outcome == rdb.SubmitClaimLost:
		return nil, fmt.Errorf("%w: a later request with it took it over while this one was slow; nothing was charged", ErrIdempotencyInProgress)
	}
	if res.Dispatched {
		if err := s.enqueue(ctx, id, req.Model); err != nil {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			s.dropInputs(rctx, id, req.Owner)
			if rerr := s.db.Rollback(rctx, sub); rerr != nil {
				s.log.Error("rollback of a job whose enqueue failed", "job", id, "err", rerr)
			}
			return nil, err
		}
	}
	if err := s.confirmSubmission(ctx, id, req.Model, res.Dispatched); err != nil {
		s.log.Warn("a submission was not confirmed by the Redis replicas: answered with an error", "job", id, "err", err)
		return nil, err
	}
	return &Job{ID: id, Model: req.Model, Status: StatusStarting, CreatedAt: now, UpdatedAt: &now,
		Credits: req.Cost, Owner: req.Owner, WebhookURL: req.WebhookURL}, nil
}

// enqueue puts job id on its model's queue (task id = job id).
func (s *Service) enqueue(ctx context.Context, id, model string) error {
	task := asynq.NewTask(rdb.TaskJob, []byte(id))
	_, err := s.client.EnqueueContext(ctx, task,
		asynq.TaskID(id), asynq.Queue(rdb.QueueName(model)), asynq.MaxRetry(taskMaxRetry),
		asynq.Timeout(s.timeout(model)+time.Minute))
	if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
		return fmt.Errorf("jobs: enqueue: %w", err)
	}
	return nil
}

// succeed moves a job to its success status; false when it was already
// terminal.
func (s *Service) succeed(ctx context.Context, r *record, output []string, info []OutputInfo) (bool, error) {
	out, _ := json.Marshal(output)
	inf, _ := json.Marshal(info)
	done, err := s.db.Succeed(ctx, rdb.Success{JobID: r.ID, Owner: r.Owner, Status: SuccessStatus(r.Model), Output: out, OutputsInfo: inf})
	if err != nil {
		return false, fmt.Errorf("jobs: finish %s: %w", r.ID, err)
	}
	s.dropInputs(ctx, r.ID, r.Owner)
	s.promote(ctx, r.Model, r.Owner)
	return done, nil
}

// fail moves a job to error with msg and refunds it once; false when it was
// already terminal.
func (s *Service) fail(ctx context.Context, r *record, msg string) (bool, error) {
	n, err := s.db.Refund(ctx, rdb.Refund{JobID: r.ID, Owner: r.Owner, Status: StatusError, Message: msg,
		Ledger: ledgerJSON("refund", r.ID, r.Model, int64(r.Cost))})
	if err != nil {
		return false, fmt.Errorf("jobs: fail %s: %w", r.ID, err)
	}
	s.dropInputs(ctx, r.ID, r.Owner)
	s.promote(ctx, r.Model, r.Owner)
	return n == rdb.RefundDone, nil
}

// setProgress records p; ended is true when the job is no longer running
// (terminal: cancelled, failed by the janitor).
func (s *Service) setProgress(ctx context.Context, id string, p Progress) (ended bool, err error) {
	b, _ := json.Marshal(p)
	return s.db.SetProgress(ctx, id, b)
}
