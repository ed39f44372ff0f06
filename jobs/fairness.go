package jobs

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Fair sharing between API keys. Each key may have at most its dispatch
// cap of jobs of one model in that model's queue (waiting or running);
// its further jobs wait in the key's own backlog for that model and enter
// the model queue, oldest first, as the key's earlier jobs end. The cap
// defaults to the model's live worker slots, so one key alone can use every
// slot, while a second key's job waits behind at most the jobs already
// running: keys are served round-robin as slots free up.

// DefaultMaxInFlight is the most unfinished jobs one API key may have
// (Options.MaxInFlight); a submission over it is a 429.
const DefaultMaxInFlight = 1000

// durationSamples is how many recent run times per model the ETA averages.
const durationSamples = 50

// keyBacklogs is the set of "model|owner" with a non-empty backlog.
const keyBacklogs = keyPrefix + "backlogs"

func keyOwnerJobs(owner string) string { return keyPrefix + "owner_jobs:" + owner }
func keyInflight(owner string) string  { return keyPrefix + "in_flight:" + owner }
func keyLimits(owner string) string    { return keyPrefix + "limits:" + owner }
func keySlots(model string) string     { return keyPrefix + "slots:" + model }
func keyDurations(model string) string { return keyPrefix + "durations:" + model }
func keyDispatched(model, owner string) string {
	return keyPrefix + "dispatched:" + model + ":" + owner
}
func keyBacklog(model, owner string) string { return keyPrefix + "backlog:" + model + ":" + owner }
func backlogMember(model, owner string) string {
	return model + "|" + owner
}

// pendingKey is asynq v0.26's list of a queue's waiting tasks (LPUSH on
// enqueue, taken from the right).
func pendingKey(queue string) string { return "asynq:{" + queue + "}:pending" }

// liveSlots counts the live workers of model and their job slots (each
// worker advertises its concurrency with its heartbeat; DefaultConcurrency
// when unknown).
func (s *Service) liveSlots(ctx context.Context, model string) (workers, slots int, err error) {
	min := strconv.FormatInt(nowMS()-HeartbeatTTL.Milliseconds(), 10)
	pipe := s.rdb.Pipeline()
	live := pipe.ZRangeByScore(ctx, keyServed(model), &redis.ZRangeBy{Min: min, Max: "+inf"})
	conc := pipe.HGetAll(ctx, keySlots(model))
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, 0, fmt.Errorf("jobs: worker heartbeats: %w", err)
	}
	for _, w := range live.Val() {
		n, err := strconv.Atoi(conc.Val()[w])
		if err != nil || n < 1 {
			n = DefaultConcurrency
		}
		slots += n
	}
	return len(live.Val()), slots, nil
}

// promoteScript moves jobs of one key from its backlog to the dispatched
// set while the set is under the cap, dropping members that have ended.
// KEYS: dispatched, backlog, backlogs, limits. ARGV: default cap, job key
// prefix, backlog member. Returns the ids to enqueue.
var promoteScript = redis.NewScript(`
for _, id in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  if redis.call('HGET', ARGV[2] .. id, 'status') ~= 'starting' then redis.call('SREM', KEYS[1], id) end
end
local cap = tonumber(redis.call('HGET', KEYS[4], 'dispatch') or ARGV[1])
local out = {}
while redis.call('SCARD', KEYS[1]) < cap do
  local id = redis.call('LPOP', KEYS[2])
  if not id then break end
  if redis.call('HGET', ARGV[2] .. id, 'status') == 'starting' then
    redis.call('SADD', KEYS[1], id)
    redis.call('HDEL', ARGV[2] .. id, 'held')
    redis.call('PUBLISH', 'fashiond:events:' .. id, 'dispatched')
    table.insert(out, id)
  end
end
if redis.call('LLEN', KEYS[2]) == 0 then redis.call('SREM', KEYS[3], ARGV[3]) end
return out`)

// promote dispatches owner's backlogged jobs of model that now fit under
// its cap. Errors are logged: the janitor promotes again on its next pass.
func (s *Service) promote(ctx context.Context, model, owner string) {
	_, slots, err := s.liveSlots(ctx, model)
	if err != nil {
		s.log.Warn("promote backlogged jobs", "model", model, "err", err)
		return
	}
	ids, err := promoteScript.Run(ctx, s.rdb,
		[]string{keyDispatched(model, owner), keyBacklog(model, owner), keyBacklogs, keyLimits(owner)},
		max(slots, 1), keyJobPrefix, backlogMember(model, owner)).StringSlice()
	if err != nil {
		s.log.Warn("promote backlogged jobs", "model", model, "err", err)
		return
	}
	for _, id := range ids {
		if err := s.enqueue(ctx, id, model); err != nil {
			// The janitor fails (and refunds) a job whose task is missing.
			s.log.Error("enqueue a backlogged job", "job", id, "err", err)
		}
	}
}

// promoteAll promotes every backlog (a janitor pass).
func (s *Service) promoteAll(ctx context.Context) error {
	members, err := s.rdb.SMembers(ctx, keyBacklogs).Result()
	if err != nil {
		return fmt.Errorf("promote: %w", err)
	}
	for _, m := range members {
		if model, owner, ok := strings.Cut(m, "|"); ok {
			s.promote(ctx, model, owner)
		}
	}
	return nil
}

// recordDuration keeps a successful run time of model for the ETA.
func (s *Service) recordDuration(ctx context.Context, model string, d time.Duration) {
	pipe := s.rdb.Pipeline()
	pipe.LPush(ctx, keyDurations(model), d.Milliseconds())
	pipe.LTrim(ctx, keyDurations(model), 0, durationSamples-1)
	if _, err := pipe.Exec(ctx); err != nil {
		s.log.Debug("record run time", "model", model, "err", err)
	}
}

// queueInfo is the place of a waiting job r: the jobs of its model queue
// that start before it, and for a backlogged job also one job of every key
// with a backlog of that model per job ahead of it in its own backlog
// (round-robin), with an ETA from recent run times and live slots.
func (s *Service) queueInfo(ctx context.Context, r *record) (*QueueInfo, error) {
	queue := QueueName(r.Model)
	pipe := s.rdb.Pipeline()
	plen := pipe.LLen(ctx, pendingKey(queue))
	pos := pipe.LPos(ctx, pendingKey(queue), r.ID, redis.LPosArgs{})
	bpos := pipe.LPos(ctx, keyBacklog(r.Model, r.Owner), r.ID, redis.LPosArgs{})
	backlogs := pipe.SMembers(ctx, keyBacklogs)
	durs := pipe.LRange(ctx, keyDurations(r.Model), 0, durationSamples-1)
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return nil, fmt.Errorf("jobs: queue position %s: %w", r.ID, err)
	}
	q := &QueueInfo{}
	switch {
	case bpos.Err() == nil:
		keys := 0
		for _, m := range backlogs.Val() {
			if strings.HasPrefix(m, r.Model+"|") {
				keys++
			}
		}
		q.Ahead, q.Held = int(plen.Val())+int(bpos.Val())*max(keys, 1), true
	case pos.Err() == nil:
		// Tasks are taken from the right: the ones to its right go first.
		q.Ahead = int(plen.Val() - 1 - pos.Val())
	}
	q.Position = q.Ahead + 1
	_, slots, err := s.liveSlots(ctx, r.Model)
	if err != nil {
		return nil, err
	}
	q.ETASeconds = eta(durs.Val(), q.Ahead, slots)
	return q, nil
}

// eta estimates the seconds until a job with ahead jobs before it ends:
// the mean recent run time times the rounds of slots before it plus its
// own run; nil without samples or slots.
func eta(samples []string, ahead, slots int) *float64 {
	var sum float64
	n := 0
	for _, v := range samples {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			sum += ms
			n++
		}
	}
	if n == 0 || slots < 1 {
		return nil
	}
	mean := sum / float64(n) / 1000
	v := math.Round(mean*float64(ahead/slots+1)*10) / 10
	return &v
}
