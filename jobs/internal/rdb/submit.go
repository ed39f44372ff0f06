package rdb

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// submitScript reserves credits and input quota, creates the job record,
// indexes it for its owner's history, completes the Idempotency-Key and
// either dispatches the job (it goes to the model queue) or holds it in the
// key's backlog (fair sharing), all in one step.
// KEYS: credits, job, ledger, expiry, active, input bytes, idempotency,
// owner's jobs, in flight, dispatched, backlog, backlogs, limits.
// ARGV: cost, ttl ms, expires ms, job id, ledger entry, created ms, input
// bytes, input quota, idempotency value ("" none), idempotency ttl ms,
// default in-flight limit, default dispatch cap, backlog member, the
// request's Idempotency-Key claim ("" none), field/value pairs...
// Returns {1, balance, dispatched}, {0, balance} (credits short), {2,
// stored} (input quota), {3, in flight} (too many unfinished jobs) or {4,
// 0} (the key no longer holds the request's claim: another request with
// the same Idempotency-Key took it over; nothing written).
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
if ARGV[14] ~= '' and redis.call('GET', KEYS[7]) ~= ARGV[14] then return {4, 0} end
if redis.call('EXISTS', KEYS[2]) == 1 then return redis.error_reply('job id exists') end
local nb = redis.call('DECRBY', KEYS[1], cost)
if inb > 0 then
  redis.call('INCRBY', KEYS[6], inb)
  redis.call('PEXPIRE', KEYS[6], ARGV[2])
end
redis.call('HSET', KEYS[2], unpack(ARGV, 15))
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

// Submission is one submitScript call: the new record and the limits it
// is checked against.
type Submission struct {
	Job        NewJob
	Ledger     string        // the charge's ledger entry (JSON)
	Retention  time.Duration // TTL of the record, its backlog entry and the input quota counter
	InputQuota int64         // the most input bytes the owner may have stored
	// IdempotencyKey is the client's Idempotency-Key ("" none) and
	// IdemValue what it maps to once the job exists (IdemDone), for IdemTTL.
	IdempotencyKey string
	IdemValue      string
	IdemTTL        time.Duration
	// IdemClaim is the request's claim on the key (IdemPending): the job
	// is created only while the key still holds it.
	IdemClaim string
	// MaxInFlight and DispatchCap are the defaults of the owner's limits
	// (KeyLimits overrides them); MaxInFlight 0: no limit.
	MaxInFlight int
	DispatchCap int
}

// SubmitOutcome is what Submit did.
type SubmitOutcome int

// Outcomes of Submit (the script's first reply).
const (
	SubmitCreditsShort SubmitOutcome = 0 // N: the balance
	SubmitCreated      SubmitOutcome = 1 // N: the new balance
	SubmitQuotaFull    SubmitOutcome = 2 // N: the input bytes stored
	SubmitTooMany      SubmitOutcome = 3 // N: the unfinished jobs
	SubmitClaimLost    SubmitOutcome = 4 // another request took the Idempotency-Key over
)

// SubmitResult is Submit's answer.
type SubmitResult struct {
	Outcome SubmitOutcome
	N       int64
	// Dispatched: the job goes to the model queue now (else it waits in
	// the owner's backlog).
	Dispatched bool
}

// Keys are the keys Submit touches (Rollback touches a subset), all in
// the one Cluster slot of Prefix.
func (s Submission) Keys() []string {
	j := s.Job
	return []string{KeyCredits(j.Owner), KeyJob(j.ID), KeyLedger(j.Owner), KeyExpiry, KeyActive,
		KeyInputBytes(j.Owner), KeyIdem(j.Owner, s.IdempotencyKey), KeyOwnerJobs(j.Owner),
		KeyInflight(j.Owner), KeyDispatched(j.Model, j.Owner), KeyBacklog(j.Model, j.Owner),
		KeyBacklogs, KeyLimits(j.Owner)}
}

// Submit charges the job's cost, reserves its input quota and creates its
// record in one step (see submitScript).
func (d *DB) Submit(ctx context.Context, s Submission) (SubmitResult, error) {
	j := s.Job
	args := append([]any{j.Cost, s.Retention.Milliseconds(), j.ExpiresAt.UnixMilli(), j.ID, s.Ledger,
		j.Created.UnixMilli(), j.InputBytes, s.InputQuota, s.IdemValue, s.IdemTTL.Milliseconds(),
		s.MaxInFlight, s.DispatchCap, BacklogMember(j.Model, j.Owner), s.IdemClaim}, j.fields()...)
	res, err := submitScript.Run(ctx, d.c, s.Keys(), args...).Int64Slice()
	if err != nil {
		return SubmitResult{}, fmt.Errorf("jobs: submit: %w", err)
	}
	out := SubmitResult{Outcome: SubmitOutcome(res[0]), N: res[1]}
	out.Dispatched = out.Outcome == SubmitCreated && res[2] == 1
	return out, nil
}

// Rollback undoes Submit of s (its enqueue failed): the credits come
// back, the record and its indexes go.
func (d *DB) Rollback(ctx context.Context, s Submission) error {
	k := s.Keys()
	rk := []string{k[0], k[1], k[2], k[3], k[4], k[7], k[8], k[9], k[6]}
	return rollbackScript.Run(ctx, d.c, rk, s.Job.Cost, s.Ledger, s.Job.ID).Err()
}
