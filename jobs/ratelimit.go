package jobs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
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

func keyBucket(owner string) string { return keyPrefix + "bucket:" + owner }

// rateScript takes one token from a bucket.
// KEYS: bucket, limits. ARGV: default rate (per s), default burst.
// Returns {allowed, burst, remaining, reset ms, retry ms, rate per 1000 s}.
var rateScript = redis.NewScript(`
local rate = tonumber(redis.call('HGET', KEYS[2], 'rate') or ARGV[1])
local burst = tonumber(redis.call('HGET', KEYS[2], 'burst') or ARGV[2])
if rate <= 0 or burst <= 0 then return {1, 0, 0, 0, 0, 0} end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local b = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(b[1]) or burst
local ts = tonumber(b[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - ts) * rate / 1000)
local allowed, retry = 0, 0
if tokens >= 1 then
  tokens = tokens - 1
  allowed = 1
else
  retry = math.ceil((1 - tokens) * 1000 / rate)
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ts', now)
redis.call('PEXPIRE', KEYS[1], math.ceil(burst * 1000 / rate) + 1000)
return {allowed, burst, math.floor(tokens), math.ceil((burst - tokens) * 1000 / rate), retry, math.floor(rate * 1000)}`)

// Allow takes one request from owner's bucket. A limit of 0 or less (the
// key's or the default) allows everything with Limit 0.
func (s *Service) Allow(ctx context.Context, owner string) (RateDecision, error) {
	res, err := rateScript.Run(ctx, s.rdb, []string{keyBucket(owner), keyLimits(owner)},
		s.opts.RateLimit, s.opts.RateBurst).Int64Slice()
	if err != nil {
		return RateDecision{}, fmt.Errorf("jobs: rate limit: %w", err)
	}
	d := RateDecision{Allowed: res[0] == 1, Limit: int(res[1]), Remaining: int(res[2]),
		Reset: time.Duration(res[3]) * time.Millisecond, RetryAfter: time.Duration(res[4]) * time.Millisecond}
	if res[5] > 0 {
		d.Window = time.Duration(float64(res[1]) / (float64(res[5]) / 1000) * float64(time.Second))
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
			pipe.HSet(ctx, keyLimits(owner), field, strconv.FormatFloat(v, 'f', -1, 64))
		case v < 0:
			pipe.HDel(ctx, keyLimits(owner), field)
		}
	}
	set("rate", l.Rate)
	set("burst", float64(l.Burst))
	set("max_in_flight", float64(l.MaxInFlight))
	set("dispatch", float64(l.Dispatch))
	if _, err := pipe.Exec(ctx); err != nil {
		return KeyLimits{}, fmt.Errorf("jobs: set key limits: %w", err)
	}
	return s.keyLimits(ctx, owner)
}

// keyLimits reads owner's overrides.
func (s *Service) keyLimits(ctx context.Context, owner string) (KeyLimits, error) {
	m, err := s.rdb.HGetAll(ctx, keyLimits(owner)).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return KeyLimits{}, fmt.Errorf("jobs: key limits: %w", err)
	}
	var l KeyLimits
	l.Rate, _ = strconv.ParseFloat(m["rate"], 64)
	l.Burst, _ = strconv.Atoi(m["burst"])
	l.MaxInFlight, _ = strconv.Atoi(m["max_in_flight"])
	l.Dispatch, _ = strconv.Atoi(m["dispatch"])
	return l, nil
}
