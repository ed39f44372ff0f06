package rdb

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// The transitions of a job record after Submit, each one script that
// publishes the change on the job's event channel (EventsPrefix).

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

// Claim is one claimScript call.
type Claim struct {
	JobID, Worker string
	Attempt       int
	Progress      []byte        // the first progress JSON
	RunningTTL    time.Duration // how long a dead worker's running set stays readable
}

// Claim starts an attempt; claimed is false when the job has ended, own is
// the number of worker crashes that were the job's own.
func (d *DB) Claim(ctx context.Context, c Claim) (claimed bool, own int64, err error) {
	res, err := claimScript.Run(ctx, d.c, []string{KeyJob(c.JobID), KeyRunning(c.Worker)},
		c.Worker, c.Attempt, c.Progress, stamp(), c.JobID, KeyRunningPrefix, c.RunningTTL.Milliseconds()).Int64Slice()
	if err != nil {
		return false, 0, err
	}
	return res[0] == 1, res[2], nil
}

// endAttemptScript records that an attempt ended (whatever its outcome)
// on the worker that ran it: the job is no longer "running" there.
// KEYS: job, running set of the worker. ARGV: runner, job id.
var endAttemptScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'running') == ARGV[1] then redis.call('HDEL', KEYS[1], 'running') end
redis.call('SREM', KEYS[2], ARGV[2])
return 1`)

// EndAttempt records that worker's attempt on job id is over (so a later
// claim does not count it as a crash).
func (d *DB) EndAttempt(ctx context.Context, id, worker string) error {
	return endAttemptScript.Run(ctx, d.c, []string{KeyJob(id), KeyRunning(worker)}, worker, id).Err()
}

// progressScript updates the progress of a non-terminal job; 0 when the
// job has ended (e.g. it was cancelled).
// KEYS: job. ARGV: progress JSON, updated, job id.
var progressScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'status') ~= 'starting' then return 0 end
redis.call('HSET', KEYS[1], 'progress', ARGV[1], 'updated_at', ARGV[2])
redis.call('PUBLISH', 'fashiond:events:' .. ARGV[3], 'progress')
return 1`)

// SetProgress records job id's progress (JSON); ended is true when the
// job is no longer running.
func (d *DB) SetProgress(ctx context.Context, id string, progress []byte) (ended bool, err error) {
	n, err := progressScript.Run(ctx, d.c, []string{KeyJob(id)}, progress, stamp(), id).Int()
	return err == nil && n == 0, err
}

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

// Success is one succeedScript call.
type Success struct {
	JobID, Owner string
	Status       string // the model's success word
	Output       []byte // JSON array of output references
	OutputsInfo  []byte // JSON
}

// Succeed moves a job to its success status; false when it had ended.
func (d *DB) Succeed(ctx context.Context, s Success) (bool, error) {
	n, err := succeedScript.Run(ctx, d.c, []string{KeyJob(s.JobID), KeyActive, KeyInflight(s.Owner)},
		s.Status, s.Output, s.OutputsInfo, stamp(), s.JobID).Int()
	return n == 1, err
}

// refundScript is the one transition to a refunded end: error (a
// failure) or canceled (its owner's cancel); the cost is refunded once.
// -1 for another owner's job, 0 when the job had ended, 1 when this call
// ended it.
// KEYS: job, active, credits, ledger, in flight. ARGV: message ("" none),
// updated, job id, ledger entry, status, owner ("" any).
var refundScript = redis.NewScript(`
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
return 1`)

// Refund is one refundScript call.
type Refund struct {
	JobID, Owner string
	Status       string // error or canceled
	Message      string // the job's error ("" none)
	Ledger       string // the refund's ledger entry (JSON)
	// OwnerOnly refuses (RefundNotOwner) a job of another owner.
	OwnerOnly bool
}

// Outcomes of Refund.
const (
	RefundNotOwner = -1
	RefundEnded    = 0 // the job had already ended
	RefundDone     = 1
)

// Refund ends a job with Status and refunds it once (see refundScript).
func (d *DB) Refund(ctx context.Context, r Refund) (int, error) {
	owner := ""
	if r.OwnerOnly {
		owner = r.Owner
	}
	return refundScript.Run(ctx, d.c,
		[]string{KeyJob(r.JobID), KeyActive, KeyCredits(r.Owner), KeyLedger(r.Owner), KeyInflight(r.Owner)},
		r.Message, stamp(), r.JobID, r.Ledger, r.Status, owner).Int()
}

// deleteScript turns an ended job into a tombstone. KEYS: job, owner's
// jobs, idempotency. ARGV: owner, job id.
var deleteScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] or redis.call('HGET', KEYS[1], 'deleted') == '1' then return -1 end
if redis.call('HGET', KEYS[1], 'status') == 'starting' then return 0 end
redis.call('HSET', KEYS[1], 'deleted', '1')
redis.call('HDEL', KEYS[1], 'output', 'outputs_info', 'error', 'webhook', 'inputs')
redis.call('ZREM', KEYS[2], ARGV[2])
if KEYS[3] ~= '' and KEYS[3] ~= nil then redis.call('DEL', KEYS[3]) end
return 1`)

// Outcomes of Tombstone.
const (
	TombstoneNotFound   = -1 // absent, deleted or another owner's
	TombstoneUnfinished = 0  // the job may still run
	TombstoneDone       = 1
)

// Tombstone turns owner's ended job into a tombstone and drops it from
// the owner's history; idemKey is the job's Idempotency-Key key (its
// record's idem field, "" none), deleted with it.
func (d *DB) Tombstone(ctx context.Context, owner, id, idemKey string) (int, error) {
	if idemKey == "" {
		idemKey = KeyIdem(owner, "") // a key no request uses
	}
	return deleteScript.Run(ctx, d.c, []string{KeyJob(id), KeyOwnerJobs(owner), idemKey}, owner, id).Int()
}

// dropInputsScript returns a job's stored input bytes to its owner's quota
// once. KEYS: job, owner's input bytes. Returns the bytes released.
var dropInputsScript = redis.NewScript(`
local n = tonumber(redis.call('HGET', KEYS[1], 'input_bytes') or '0')
if n > 0 then
  redis.call('HSET', KEYS[1], 'input_bytes', '0')
  local left = redis.call('DECRBY', KEYS[2], n)
  if left <= 0 then redis.call('DEL', KEYS[2]) end
end
return n`)

// ReleaseInputQuota returns job id's stored input bytes to owner's quota,
// once.
func (d *DB) ReleaseInputQuota(ctx context.Context, id, owner string) error {
	return dropInputsScript.Run(ctx, d.c, []string{KeyJob(id), KeyInputBytes(owner)}).Err()
}
