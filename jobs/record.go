package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
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
	Attempt   int
	HookSent  bool // the webhook task was enqueued
}

// Hash fields of a job record.
const (
	fID         = "id"
	fModel      = "model"
	fOwner      = "owner"
	fStatus     = "status"
	fCreated    = "created_at"
	fUpdated    = "updated_at"
	fError      = "error"
	fOutput     = "output"
	fInfo       = "outputs_info"
	fProgress   = "progress"
	fCost       = "cost"
	fInputs     = "inputs"
	fWebhook    = "webhook"
	fExpires    = "expires_at"
	fRefunded   = "refunded"
	fRunner     = "runner"
	fAttempt    = "attempt"
	fHookSent   = "hook_sent"
	fFailures   = "failures"    // transient failures so far
	fInputBytes = "input_bytes" // bytes of the job's stored input images
	fHeld       = "held"        // "1" while the job waits in its key's backlog
	fDeleted    = "deleted"     // "1": a tombstone left by DELETE /v1/jobs/{id}
	fIdem       = "idem"        // the Redis key of the job's Idempotency-Key
	timeLayout  = time.RFC3339Nano
)

func parseRecord(m map[string]string) (*record, error) {
	if len(m) == 0 || m[fID] == "" {
		return nil, ErrNotFound
	}
	r := &record{}
	r.ID, r.Model, r.Owner, r.Status = m[fID], m[fModel], m[fOwner], m[fStatus]
	r.Inputs = json.RawMessage(m[fInputs])
	r.WebhookURL = m[fWebhook]
	var err error
	if r.CreatedAt, err = time.Parse(timeLayout, m[fCreated]); err != nil {
		return nil, fmt.Errorf("jobs: record %s: created_at: %w", r.ID, err)
	}
	if v := m[fUpdated]; v != "" {
		if t, err := time.Parse(timeLayout, v); err == nil {
			r.UpdatedAt = &t
		}
	}
	if v, ok := m[fError]; ok {
		r.Error = &v
	}
	if v := m[fOutput]; v != "" {
		if err := json.Unmarshal([]byte(v), &r.Output); err != nil {
			return nil, fmt.Errorf("jobs: record %s: output: %w", r.ID, err)
		}
	}
	if v := m[fInfo]; v != "" {
		_ = json.Unmarshal([]byte(v), &r.Outputs)
	}
	if v := m[fProgress]; v != "" {
		var p Progress
		if json.Unmarshal([]byte(v), &p) == nil {
			r.Progress = &p
		}
	}
	r.Cost, _ = strconv.Atoi(m[fCost])
	r.Refunded = m[fRefunded] == "1"
	r.Credits = r.Cost
	if r.Refunded {
		r.Credits, r.CreditsRefunded = 0, r.Cost
	}
	r.Held, r.Deleted, r.IdemKey = m[fHeld] == "1", m[fDeleted] == "1", m[fIdem]
	if ms, err := strconv.ParseInt(m[fExpires], 10, 64); err == nil {
		r.ExpiresAt = time.UnixMilli(ms)
	}
	r.Runner = m[fRunner]
	r.Attempt, _ = strconv.Atoi(m[fAttempt])
	r.HookSent = m[fHookSent] == "1"
	return r, nil
}

// load reads a job record; ErrNotFound when absent or past its retention.
func (s *Service) load(ctx context.Context, id string) (*record, error) {
	if !validID(id) {
		return nil, ErrNotFound
	}
	m, err := s.rdb.HGetAll(ctx, keyJob(id)).Result()
	if err != nil {
		return nil, fmt.Errorf("jobs: load %s: %w", id, err)
	}
	r, err := parseRecord(m)
	if err != nil {
		return nil, err
	}
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

// submitScript reserves credits and input quota, creates the job record,
// indexes it for its owner's history, completes the Idempotency-Key and
// either dispatches the job (it goes to the model queue) or holds it in the
// key's backlog (fair sharing), all in one step.
// KEYS: credits, job, ledger, expiry, active, input bytes, idempotency,
// owner's jobs, in flight, dispatched, backlog, backlogs, limits.
// ARGV: cost, ttl ms, expires ms, job id, ledger entry, created ms, input
// bytes, input quota, idempotency value ("" none), idempotency ttl ms,
// default in-flight limit, default dispatch cap, backlog member,
// field/value pairs...
// Returns {1, balance, dispatched}, {0, balance} (credits short), {2,
// stored} (input quota) or {3, in flight} (too many unfinished jobs).
var submitScript = redis.NewScript(`
local bal = tonumber(redis.call('GET', KEYS[1]) or '0')
local cost = tonumber(ARGV[1])
if bal < cost then return {0, bal} end
local inb = tonumber(ARGV[7])
local stored = tonumber(redis.call('GET', KEYS[6]) or '0')
if inb > 0 and stored + inb > tonumber(ARGV[8]) then return {2, stored} end
local maxf = tonumber(redis.call('HGET', KEYS[13], 'max_in_flight') or ARGV[11])
local inflight = redis.call('SCARD', KEYS[9])
if maxf > 0 and inflight >= maxf then return {3, inflight} end
if redis.call('EXISTS', KEYS[2]) == 1 then return redis.error_reply('job id exists') end
local nb = redis.call('DECRBY', KEYS[1], cost)
if inb > 0 then
  redis.call('INCRBY', KEYS[6], inb)
  redis.call('PEXPIRE', KEYS[6], ARGV[2])
end
redis.call('HSET', KEYS[2], unpack(ARGV, 14))
redis.call('PEXPIRE', KEYS[2], ARGV[2])
if cost > 0 then
  redis.call('LPUSH', KEYS[3], ARGV[5])
  redis.call('LTRIM', KEYS[3], 0, 9999)
end
redis.call('ZADD', KEYS[4], ARGV[3], ARGV[4])
redis.call('ZADD', KEYS[5], ARGV[6], ARGV[4])
redis.call('ZADD', KEYS[8], ARGV[6], ARGV[4])
redis.call('SADD', KEYS[9], ARGV[4])
if ARGV[9] ~= '' then
  redis.call('SET', KEYS[7], ARGV[9], 'PX', ARGV[10])
  redis.call('HSET', KEYS[2], 'idem', KEYS[7])
end
local cap = tonumber(redis.call('HGET', KEYS[13], 'dispatch') or ARGV[12])
if redis.call('LLEN', KEYS[11]) == 0 and redis.call('SCARD', KEYS[10]) < cap then
  redis.call('SADD', KEYS[10], ARGV[4])
  return {1, nb, 1}
end
redis.call('RPUSH', KEYS[11], ARGV[4])
redis.call('PEXPIRE', KEYS[11], ARGV[2])
redis.call('HSET', KEYS[2], 'held', '1')
redis.call('SADD', KEYS[12], ARGV[13])
return {1, nb, 0}`)

// rollbackScript undoes submitScript when the enqueue failed.
// KEYS: credits, job, ledger, expiry, active, owner's jobs, in flight,
// dispatched, idempotency. ARGV: cost, ledger entry, job id.
var rollbackScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[2]) == 0 then return 0 end
redis.call('INCRBY', KEYS[1], ARGV[1])
redis.call('DEL', KEYS[2])
redis.call('LREM', KEYS[3], 1, ARGV[2])
redis.call('ZREM', KEYS[4], ARGV[3])
redis.call('ZREM', KEYS[5], ARGV[3])
redis.call('ZREM', KEYS[6], ARGV[3])
redis.call('SREM', KEYS[7], ARGV[3])
redis.call('SREM', KEYS[8], ARGV[3])
redis.call('DEL', KEYS[9])
return 1`)

// submitKeys are the KEYS of submitScript for job id of req.
func submitKeys(req SubmitRequest, id string) []string {
	return []string{keyCredits(req.Owner), keyJob(id), keyLedger(req.Owner), keyExpiry, keyActive,
		keyInputBytes(req.Owner), keyIdem(req.Owner, req.IdempotencyKey), keyOwnerJobs(req.Owner),
		keyInflight(req.Owner), keyDispatched(req.Model, req.Owner), keyBacklog(req.Model, req.Owner),
		keyBacklogs, keyLimits(req.Owner)}
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
	if len(req.Inputs) == 0 {
		req.Inputs = json.RawMessage("{}")
	}
	if err := s.awaitReplicas(ctx, QueueName(req.Model)); err != nil {
		return nil, err // nothing written: any retry is safe
	}
	if req.IdempotencyKey != "" {
		prev, ierr := s.idemBegin(ctx, req)
		if ierr == nil && prev != nil {
			ierr = s.redispatch(ctx, prev)
		}
		if ierr == nil && prev != nil {
			ierr = s.confirmReplicated(ctx, QueueName(req.Model)) // a replay is answered as durably as a first answer
		}
		if ierr != nil || prev != nil {
			if ierr != nil {
				prev = nil
			}
			return prev, ierr
		}
		defer func() {
			if err != nil {
				s.idemAbort(context.WithoutCancel(ctx), req)
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
	return s.create(ctx, req, slots)
}

// redispatch enqueues a replayed job's task again when the job was
// dispatched but has not started: the record and the task are two writes,
// so a Redis failover between them (the first attempt answered with an
// error, see confirmReplicated) can keep the record and lose the task,
// which would leave a charged job that never runs. The task id is the job
// id, so a task that still exists makes this a no-op.
func (s *Service) redispatch(ctx context.Context, j *Job) error {
	if j.Status != StatusStarting {
		return nil
	}
	dispatched, err := s.rdb.SIsMember(ctx, keyDispatched(j.Model, j.Owner), j.ID).Result()
	if err != nil || !dispatched {
		return err
	}
	return s.enqueue(ctx, j.ID, j.Model)
}

// create stores the job (see submitScript) and enqueues it when dispatched.
func (s *Service) create(ctx context.Context, req SubmitRequest, slots int) (*Job, error) {
	id := uuid.NewString()
	inputs, inBytes, err := s.spoolInputs(ctx, id, req.Inputs)
	if err != nil {
		s.dropInputs(context.WithoutCancel(ctx), id, "")
		return nil, err
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	exp := now.Add(s.opts.Retention)
	created := now.Format(timeLayout)
	entry := ledgerJSON("charge", id, req.Model, -int64(req.Cost))
	keys := submitKeys(req, id)
	idem := ""
	if req.IdempotencyKey != "" {
		idem = idemDone(req.Fingerprint, id)
	}
	args := []any{req.Cost, s.opts.Retention.Milliseconds(), exp.UnixMilli(), id, entry, now.UnixMilli(), inBytes, s.opts.InputQuota,
		idem, IdempotencyTTL.Milliseconds(), s.opts.MaxInFlight, max(slots, 1), backlogMember(req.Model, req.Owner),
		fID, id, fModel, req.Model, fOwner, req.Owner, fStatus, StatusStarting,
		fCreated, created, fUpdated, created, fCost, req.Cost, fInputs, string(inputs),
		fWebhook, req.WebhookURL, fExpires, exp.UnixMilli(), fInputBytes, inBytes}
	res, err := submitScript.Run(ctx, s.rdb, keys, args...).Int64Slice()
	if err != nil || res[0] != 1 {
		s.dropInputs(context.WithoutCancel(ctx), id, "")
	}
	switch {
	case err != nil:
		return nil, fmt.Errorf("jobs: submit: %w", err)
	case res[0] == 0:
		return nil, &CreditsError{Balance: res[1], Cost: req.Cost}
	case res[0] == 2:
		return nil, &QuotaError{Stored: res[1], Adding: inBytes, Quota: s.opts.InputQuota}
	case res[0] == 3:
		return nil, fmt.Errorf("%w: the key has %d unfinished jobs", ErrTooManyJobs, res[1])
	}
	if res[2] == 1 {
		if err := s.enqueue(ctx, id, req.Model); err != nil {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			s.dropInputs(rctx, id, req.Owner)
			rk := []string{keys[0], keys[1], keys[2], keys[3], keys[4], keys[7], keys[8], keys[9], keys[6]}
			if rerr := rollbackScript.Run(rctx, s.rdb, rk, req.Cost, entry, id).Err(); rerr != nil {
				s.log.Error("rollback of a job whose enqueue failed", "job", id, "err", rerr)
			}
			return nil, err
		}
	}
	if err := s.confirmReplicated(ctx, QueueName(req.Model)); err != nil {
		s.log.Warn("a submission was not confirmed by the Redis replicas: answered with an error", "job", id, "err", err)
		return nil, err
	}
	return &Job{ID: id, Model: req.Model, Status: StatusStarting, CreatedAt: now, UpdatedAt: &now,
		Credits: req.Cost, Owner: req.Owner, Inputs: req.Inputs, WebhookURL: req.WebhookURL}, nil
}

// enqueue puts job id on its model's queue (task id = job id).
func (s *Service) enqueue(ctx context.Context, id, model string) error {
	task := asynq.NewTask(taskJob, []byte(id))
	_, err := s.client.EnqueueContext(ctx, task,
		asynq.TaskID(id), asynq.Queue(QueueName(model)), asynq.MaxRetry(taskMaxRetry),
		asynq.Timeout(s.timeout(model)+time.Minute))
	if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
		return fmt.Errorf("jobs: enqueue: %w", err)
	}
	return nil
}

// claimScript marks the start of an attempt on a non-terminal job. An
// attempt that never ended (its "running" field is still set: the worker
// was killed, or lost the job's lease) is counted in "crashes"; when that
// worker ran no other job at the time ("running:<worker>" held this job
// only) the crash is the job's own and counts in "own_crashes" too.
// KEYS: job, running set of this worker. ARGV: runner, attempt, progress
// JSON, updated, job id, running-set key prefix, set ttl ms.
// Returns {claimed, crashes, own_crashes}.
var claimScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'status') ~= 'starting' then return {0, 0, 0} end
local prev = redis.call('HGET', KEYS[1], 'running')
if prev and prev ~= '' then
  redis.call('HINCRBY', KEYS[1], 'crashes', 1)
  local set = ARGV[6] .. prev
  if redis.call('SCARD', set) <= 1 then
    redis.call('HINCRBY', KEYS[1], 'own_crashes', 1)
  end
end
redis.call('HSET', KEYS[1], 'runner', ARGV[1], 'attempt', ARGV[2], 'progress', ARGV[3], 'updated_at', ARGV[4], 'running', ARGV[1])
redis.call('SADD', KEYS[2], ARGV[5])
redis.call('PEXPIRE', KEYS[2], ARGV[7])
redis.call('PUBLISH', 'fashiond:events:' .. ARGV[5], 'running')
return {1, tonumber(redis.call('HGET', KEYS[1], 'crashes') or '0'), tonumber(redis.call('HGET', KEYS[1], 'own_crashes') or '0')}`)

// endAttemptScript records that an attempt ended (whatever its outcome)
// on the worker that ran it: the job is no longer "running" there.
// KEYS: job, running set of the worker. ARGV: runner, job id.
var endAttemptScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'running') == ARGV[1] then redis.call('HDEL', KEYS[1], 'running') end
redis.call('SREM', KEYS[2], ARGV[2])
return 1`)

// progressScript updates the progress of a non-terminal job; 0 when the
// job has ended (e.g. it was cancelled).
// KEYS: job. ARGV: progress JSON, updated, job id.
var progressScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'status') ~= 'starting' then return 0 end
redis.call('HSET', KEYS[1], 'progress', ARGV[1], 'updated_at', ARGV[2])
redis.call('PUBLISH', 'fashiond:events:' .. ARGV[3], 'progress')
return 1`)

// succeedScript is the one transition to success.
// KEYS: job, active, in flight. ARGV: status, output JSON, outputs_info
// JSON, updated, job id.
var succeedScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'status') ~= 'starting' then return 0 end
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'output', ARGV[2], 'outputs_info', ARGV[3], 'updated_at', ARGV[4])
redis.call('HDEL', KEYS[1], 'progress', 'inputs')
redis.call('ZREM', KEYS[2], ARGV[5])
redis.call('SREM', KEYS[3], ARGV[5])
redis.call('PUBLISH', 'fashiond:events:' .. ARGV[5], ARGV[1])
return 1`)

// failScript is the one transition to error, refunding the cost once.
// failScript (status "error", ARGV[5]) and cancelScript (status
// "canceled") are the transitions to a refunded end.
// KEYS: job, active, credits, ledger, in flight. ARGV: message ("" none),
// updated, job id, ledger entry, status, owner ("" any).
var failScript = redis.NewScript(refundLua)

// refundLua is the body of failScript: -1 for another owner's job, 0 when
// the job had ended, 1 when this call ended it.
const refundLua = `
if ARGV[6] ~= '' and redis.call('HGET', KEYS[1], 'owner') ~= ARGV[6] then return -1 end
if redis.call('HGET', KEYS[1], 'status') ~= 'starting' then return 0 end
redis.call('HSET', KEYS[1], 'status', ARGV[5], 'updated_at', ARGV[2])
if ARGV[1] ~= '' then redis.call('HSET', KEYS[1], 'error', ARGV[1]) end
redis.call('HDEL', KEYS[1], 'progress', 'inputs', 'held')
redis.call('ZREM', KEYS[2], ARGV[3])
redis.call('SREM', KEYS[5], ARGV[3])
if redis.call('HGET', KEYS[1], 'refunded') ~= '1' then
  local c = tonumber(redis.call('HGET', KEYS[1], 'cost') or '0')
  if c and c > 0 then
    redis.call('INCRBY', KEYS[3], c)
    redis.call('LPUSH', KEYS[4], ARGV[4])
    redis.call('LTRIM', KEYS[4], 0, 9999)
  end
  redis.call('HSET', KEYS[1], 'refunded', '1')
end
redis.call('PUBLISH', 'fashiond:events:' .. ARGV[3], ARGV[5])
return 1`

func stamp() string { return time.Now().UTC().Format(timeLayout) }

// succeed moves a job to its success status; false when it was already
// terminal.
func (s *Service) succeed(ctx context.Context, r *record, output []string, info []OutputInfo) (bool, error) {
	out, _ := json.Marshal(output)
	inf, _ := json.Marshal(info)
	n, err := succeedScript.Run(ctx, s.rdb, []string{keyJob(r.ID), keyActive, keyInflight(r.Owner)},
		SuccessStatus(r.Model), out, inf, stamp(), r.ID).Int()
	if err != nil {
		return false, fmt.Errorf("jobs: finish %s: %w", r.ID, err)
	}
	s.dropInputs(ctx, r.ID, r.Owner)
	s.promote(ctx, r.Model, r.Owner)
	return n == 1, nil
}

// fail moves a job to error with msg and refunds it once; false when it was
// already terminal.
func (s *Service) fail(ctx context.Context, r *record, msg string) (bool, error) {
	n, err := failScript.Run(ctx, s.rdb, refundKeys(r.Owner, r.ID),
		msg, stamp(), r.ID, ledgerJSON("refund", r.ID, r.Model, int64(r.Cost)), StatusError, "").Int()
	if err != nil {
		return false, fmt.Errorf("jobs: fail %s: %w", r.ID, err)
	}
	s.dropInputs(ctx, r.ID, r.Owner)
	s.promote(ctx, r.Model, r.Owner)
	return n == 1, nil
}

// refundKeys are the KEYS of failScript and cancelScript.
func refundKeys(owner, id string) []string {
	return []string{keyJob(id), keyActive, keyCredits(owner), keyLedger(owner), keyInflight(owner)}
}

// setProgress records p; ended is true when the job is no longer running
// (terminal: cancelled, failed by the janitor).
func (s *Service) setProgress(ctx context.Context, id string, p Progress) (ended bool, err error) {
	b, _ := json.Marshal(p)
	n, err := progressScript.Run(ctx, s.rdb, []string{keyJob(id)}, b, stamp(), id).Int()
	return err == nil && n == 0, err
}
