package rdb

import (
	"context"

	"github.com/redis/go-redis/v9"
)

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

// Take is the outcome of one TakeToken.
type Take struct {
	Allowed            bool
	Burst, Remaining   int64
	ResetMS, RetryMS   int64
	RatePerThousandSec int64 // the refill rate x 1000 (0: no limit)
}

// TakeToken takes one request from owner's token bucket, with the
// owner's limits (KeyLimits) or the defaults; a rate or burst of 0 or less
// allows everything with Burst 0. The time is Redis's.
func (d *DB) TakeToken(ctx context.Context, owner string, rate float64, burst int) (Take, error) {
	res, err := rateScript.Run(ctx, d.c, []string{KeyBucket(owner), KeyLimits(owner)}, rate, burst).Int64Slice()
	if err != nil {
		return Take{}, err
	}
	return Take{Allowed: res[0] == 1, Burst: res[1], Remaining: res[2], ResetMS: res[3], RetryMS: res[4],
		RatePerThousandSec: res[5]}, nil
}
