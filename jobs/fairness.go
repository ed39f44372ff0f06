package jobs

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"fashiond/jobs/internal/rdb"
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

// liveSlots counts the live workers of model and their job slots (each
// worker advertises its concurrency with its heartbeat; DefaultConcurrency
// when unknown).
func (s *Service) liveSlots(ctx context.Context, model string) (workers, slots int, err error) {
	min := strconv.FormatInt(nowMS()-HeartbeatTTL.Milliseconds(), 10)
	pipe := s.rdb.Pipeline()
	live := pipe.ZRangeByScore(ctx, rdb.KeyServed(model), &redis.ZRangeBy{Min: min, Max: "+inf"})
	conc := pipe.HGetAll(ctx, rdb.KeySlots(model))
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

// promote dispatches owner's backlogged jobs of model that now fit under
// its cap. Errors are logged: the janitor promotes again on its next pass.
func (s *Service) promote(ctx context.Context, model, owner string) {
	_, slots, err := s.liveSlots(ctx, model)
	if err != nil {
		s.log.Warn("promote backlogged jobs", "model", model, "err", err)
		return
	}
	ids, err := s.db.Promote(ctx, model, owner, max(slots, 1))
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
	members, err := s.rdb.SMembers(ctx, rdb.KeyBacklogs).Result()
	if err != nil {
		return fmt.Errorf("promote: %w", err)
	}
	for _, m := range members {
		if model, owner, ok := rdb.ParseBacklogMember(m); ok {
			s.promote(ctx, model, owner)
		}
	}
	return nil
}

// recordDuration keeps a successful run time of model for the ETA.
func (s *Service) recordDuration(ctx context.Context, model string, d time.Duration) {
	pipe := s.rdb.Pipeline()
	pipe.LPush(ctx, rdb.KeyDurations(model), d.Milliseconds())
	pipe.LTrim(ctx, rdb.KeyDurations(model), 0, durationSamples-1)
	if _, err := pipe.Exec(ctx); err != nil {
		s.log.Debug("record run time", "model", model, "err", err)
	}
}

// queueInfo is the place of a waiting job r: the jobs of its model queue
// that start before it, and for a backlogged job also one job of every key
// with a backlog of that model per job ahead of it in its own backlog
// (round-robin), with an ETA from recent run times and live slots.
func (s *Service) queueInfo(ctx context.Context, r *record) (*QueueInfo, error) {
	queue := rdb.QueueName(r.Model)
	pipe := s.rdb.Pipeline()
	plen := pipe.LLen(ctx, rdb.PendingKey(queue))
	pos := pipe.LPos(ctx, rdb.PendingKey(queue), r.ID, redis.LPosArgs{})
	bpos := pipe.LPos(ctx, rdb.KeyBacklog(r.Model, r.Owner), r.ID, redis.LPosArgs{})
	backlogs := pipe.SMembers(ctx, rdb.KeyBacklogs)
	durs := pipe.LRange(ctx, rdb.KeyDurations(r.Model), 0, durationSamples-1)
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
