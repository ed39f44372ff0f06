package rdb

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// An Idempotency-Key's value: "p|<fingerprint>|<claim token>" while a
// request holds it, "d|<fingerprint>|<job id>" once Submit created the
// job (submitScript writes it with the record, and only while the value
// is still the claim of the request that runs it).

// IdemPending is the value of a key claimed by the request with token.
func IdemPending(fp, token string) string { return "p|" + fp + "|" + token }

// IdemDone is the value of a key whose job exists.
func IdemDone(fp, id string) string { return "d|" + fp + "|" + id }

// FingerprintOK reports whether fp can be kept in a value.
func FingerprintOK(fp string) bool { return fp != "" && !strings.Contains(fp, "|") }

// IdemState is a key's value, read.
type IdemState struct {
	Done        bool   // the job exists
	Fingerprint string // the first request's
	JobID       string // when Done
	// Value is the raw value and TTL its time to live (a claim's TTL
	// tells its age).
	Value string
	TTL   time.Duration
}

// ClaimIdem claims owner's Idempotency-Key k for the request with
// fingerprint fp and token (SET NX), for ttl.
func (d *DB) ClaimIdem(ctx context.Context, owner, k, fp, token string, ttl time.Duration) (bool, error) {
	return d.c.SetNX(ctx, KeyIdem(owner, k), IdemPending(fp, token), ttl).Result()
}

// idemTakeOverScript replaces a claim by another (compare and set).
var idemTakeOverScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1`)

// TakeOverIdem replaces the claim old on owner's key k by the claim of
// fp and token, for ttl; false when the value is no longer old.
func (d *DB) TakeOverIdem(ctx context.Context, owner, k, old, fp, token string, ttl time.Duration) (bool, error) {
	n, err := idemTakeOverScript.Run(ctx, d.c, []string{KeyIdem(owner, k)}, old, IdemPending(fp, token), ttl.Milliseconds()).Int()
	return n == 1, err
}

// Idem reads owner's Idempotency-Key k; found is false when it is not set.
// A value that is not one of the two forms reads as a claim by another
// fingerprint.
func (d *DB) Idem(ctx context.Context, owner, k string) (st IdemState, found bool, err error) {
	pipe := d.c.Pipeline()
	get := pipe.Get(ctx, KeyIdem(owner, k))
	ttl := pipe.PTTL(ctx, KeyIdem(owner, k))
	_, _ = pipe.Exec(ctx)
	v, err := get.Result()
	if errors.Is(err, redis.Nil) {
		return st, false, nil
	}
	if err != nil {
		return st, false, err
	}
	st.Value, st.TTL = v, ttl.Val()
	p := strings.SplitN(v, "|", 3)
	if len(p) < 2 {
		return st, true, nil
	}
	st.Fingerprint = p[1]
	if p[0] == "d" && len(p) == 3 {
		st.Done, st.JobID = true, p[2]
	}
	return st, true, nil
}

// idemReleaseScript deletes one request's pending claim.
var idemReleaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`)

// ReleaseIdem releases the claim of fp and token on owner's key k (its
// submission failed, nothing charged); a completed key, or another
// request's claim, is kept.
func (d *DB) ReleaseIdem(ctx context.Context, owner, k, fp, token string) error {
	return idemReleaseScript.Run(ctx, d.c, []string{KeyIdem(owner, k)}, IdemPending(fp, token)).Err()
}
