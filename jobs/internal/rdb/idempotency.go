package rdb

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// An Idempotency-Key's value: "p|<fingerprint>" while its first request is
// being processed, "d|<fingerprint>|<job id>" once Submit created the job
// (submitScript writes it with the record).

// idemPending is the value of a claimed key.
func idemPending(fp string) string { return "p|" + fp }

// IdemDone is the value of a key whose job exists.
func IdemDone(fp, id string) string { return "d|" + fp + "|" + id }

// FingerprintOK reports whether fp can be kept in a value.
func FingerprintOK(fp string) bool { return fp != "" && !strings.Contains(fp, "|") }

// IdemState is a key's value, read.
type IdemState struct {
	Done        bool   // the job exists
	Fingerprint string // the first request's
	JobID       string // when Done
}

// ClaimIdem claims owner's Idempotency-Key k for the request with
// fingerprint fp (SET NX), for ttl.
func (d *DB) ClaimIdem(ctx context.Context, owner, k, fp string, ttl time.Duration) (bool, error) {
	return d.c.SetNX(ctx, KeyIdem(owner, k), idemPending(fp), ttl).Result()
}

// Idem reads owner's Idempotency-Key k; found is false when it is not set.
// A value that is not one of the two forms reads as a claim by another
// fingerprint.
func (d *DB) Idem(ctx context.Context, owner, k string) (st IdemState, found bool, err error) {
	v, err := d.c.Get(ctx, KeyIdem(owner, k)).Result()
	if errors.Is(err, redis.Nil) {
		return st, false, nil
	}
	if err != nil {
		return st, false, err
	}
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

// idemReleaseScript deletes a pending claim of the given fingerprint.
var idemReleaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`)

// ReleaseIdem releases the claim of fp on owner's key k (its submission
// failed, nothing charged); a completed key is kept.
func (d *DB) ReleaseIdem(ctx context.Context, owner, k, fp string) error {
	return idemReleaseScript.Run(ctx, d.c, []string{KeyIdem(owner, k)}, idemPending(fp)).Err()
}
