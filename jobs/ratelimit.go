package jobs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"fashiond/jobs/internal/rdb"
)

// Per-key request rate limit: a token bucket per API key kept in Redis, so
// that every API node draws from the same bucket. It is written here as a
// short Lua script (rather than with a rate-limit library) because it
// reads the key's own limits from the same hash as the fair-sharing caps in
// the same round trip, and takes the time from Redis, so API nodes with
// skewed clocks agree.

// Defaults of Options.RateLimit and RateBurst.
const (
	DefaultRateLimit = 20.0 // requests per second, sustained
	DefaultRateBurst = 100  // requests at once
)

// Allow takes one request from owner's bucket. A limit of 0 or less (the
// key's or the default) allows everything with Limit 0.
func (s *Service) Allow(ctx context.Context, owner string) (RateDecision, error) {
	t, err := s.db.TakeToken(ctx, owner, s.opts.RateLimit, s.opts.RateBurst)
	if err != nil {
		return RateDecision{}, fmt.Errorf("jobs: rate limit: %w", err)
	}
	d := RateDecision{Allowed: t.Allowed, Limit: int(t.Burst), Remaining: int(t.Remaining),
		Reset: time.Duration(t.ResetMS) * time.Millisecond, RetryAfter: time.Duration(t.RetryMS) * time.Millisecond}
	if t.RatePerThousandSec > 0 {
		d.Window = time.Duration(float64(t.Burst) / (float64(t.RatePerThousandSec) / 1000) * float64(time.Second))
	}
	return d, nil
}

// KeyLimits are the per-key overrides of the service defaults; a zero
// field keeps the default, a negative one removes the override.
type KeyLimits struct {
	Rate        float64 `json:"rate,omitempty"`          // requests per second (token refill)
	Burst       int     `json:"burst,omitempty"`         // bucket size
	MaxInFlight int     `json:"max_in_flight,omitempty"` // unfinished jobs
	Dispatch    int     `json:"dispatch,omitempty"`      // jobs of one model in its queue at once
}

// SetKeyLimits sets the overrides of the key whose ID (a prefix of at least
// 8 hex digits of its owner id) is keyID, and returns the overrides now in
// force.
func (s *Service) SetKeyLimits(ctx context.Context, keyID string, l KeyLimits) (KeyLimits, error) {
	owner, err := s.resolveKeyID(ctx, keyID)
	if err != nil {
		return KeyLimits{}, err
	}
	pipe := s.rdb.TxPipeline()
	set := func(field string, v float64) {
		switch {
		case v > 0:
			pipe.HSet(ctx, rdb.KeyLimits(owner), field, strconv.FormatFloat(v, 'f', -1, 64))
		case v < 0:
			pipe.HDel(ctx, rdb.KeyLimits(owner), field)
		}
	}
	set(rdb.LimitRate, l.Rate)
	set(rdb.LimitBurst, float64(l.Burst))
	set(rdb.LimitMaxInFlight, float64(l.MaxInFlight))
	set(rdb.LimitDispatch, float64(l.Dispatch))
	if _, err := pipe.Exec(ctx); err != nil {
		return KeyLimits{}, fmt.Errorf("jobs: set key limits: %w", err)
	}
	return s.limits(ctx, owner)
}

// limits reads owner's overrides.
func (s *Service) limits(ctx context.Context, owner string) (KeyLimits, error) {
	m, err := s.rdb.HGetAll(ctx, rdb.KeyLimits(owner)).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return KeyLimits{}, fmt.Errorf("jobs: key limits: %w", err)
	}
	var l KeyLimits
	l.Rate, _ = strconv.ParseFloat(m[rdb.LimitRate], 64)
	l.Burst, _ = strconv.Atoi(m[rdb.LimitBurst])
	l.MaxInFlight, _ = strconv.Atoi(m[rdb.LimitMaxInFlight])
	l.Dispatch, _ = strconv.Atoi(m[rdb.LimitDispatch])
	return l, nil
}
