package jobs

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Idempotency (Stripe's semantics): the first request with a key claims it
// atomically (SET NX) with a short-lived "pending" marker holding the
// request's fingerprint; the submit script replaces the marker with the
// job id for IdempotencyTTL. A repeat with the same fingerprint gets that
// job; with another fingerprint, ErrIdempotencyMismatch; while the first is
// still being processed, the repeat waits for it up to idemWait.
const (
	// IdempotencyTTL is how long an Idempotency-Key maps to its job.
	IdempotencyTTL = 24 * time.Hour
	// idemPendingTTL bounds a claim whose request never completed (its
	// process died): the key can be used again after it.
	idemPendingTTL = time.Minute
	// idemWait is how long a repeat waits for the first request.
	idemWait = 10 * time.Second
	// idemPoll is the interval at which a repeat looks again.
	idemPoll = 25 * time.Millisecond
	// MaxIdempotencyKeyLen bounds an Idempotency-Key.
	MaxIdempotencyKeyLen = 255
)

// keyIdem is the Redis key of owner's Idempotency-Key k.
func keyIdem(owner, k string) string {
	h := sha256.Sum256([]byte(k))
	return keyPrefix + "idem:" + owner + ":" + hex.EncodeToString(h[:16])
}

func idemPending(fp string) string    { return "p|" + fp }
func idemDone(fp, id string) string   { return "d|" + fp + "|" + id }
func fingerprintOK(fp string) bool    { return fp != "" && !strings.Contains(fp, "|") }
func idemParts(v string) []string     { return strings.SplitN(v, "|", 3) }
func idemErr(err error) (*Job, error) { return nil, err }

// Fingerprint is the fingerprint of a request body for idempotency: a hash
// of its parts.
func Fingerprint(parts ...[]byte) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(strconv.Itoa(len(p)) + ":"))
		h.Write(p)
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// idemBegin claims req's key, or returns the job of an earlier request
// with it (Replayed set).
func (s *Service) idemBegin(ctx context.Context, req SubmitRequest) (*Job, error) {
	if !fingerprintOK(req.Fingerprint) {
		return nil, errors.New("jobs: an idempotent submit needs a fingerprint without '|'")
	}
	key := keyIdem(req.Owner, req.IdempotencyKey)
	deadline := time.Now().Add(idemWait)
	for {
		ok, err := s.rdb.SetNX(ctx, key, idemPending(req.Fingerprint), idemPendingTTL).Result()
		if err != nil {
			return idemErr(fmt.Errorf("jobs: idempotency key: %w", err))
		}
		if ok {
			return nil, nil
		}
		v, err := s.rdb.Get(ctx, key).Result()
		if errors.Is(err, redis.Nil) {
			continue // it expired or was released meanwhile
		}
		if err != nil {
			return idemErr(fmt.Errorf("jobs: idempotency key: %w", err))
		}
		p := idemParts(v)
		switch {
		case len(p) < 2 || p[1] != req.Fingerprint:
			return idemErr(ErrIdempotencyMismatch)
		case p[0] == "d" && len(p) == 3:
			j, err := s.Get(ctx, req.Owner, p[2])
			if err != nil {
				return nil, err
			}
			j.Replayed = true
			return j, nil
		case time.Now().After(deadline):
			return idemErr(ErrIdempotencyInProgress)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(idemPoll):
		}
	}
}

// idemReleaseScript deletes a pending claim of the given fingerprint.
var idemReleaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`)

// idemAbort releases req's claim after a failed submission, so that a
// retry may submit again (nothing was charged).
func (s *Service) idemAbort(ctx context.Context, req SubmitRequest) {
	err := idemReleaseScript.Run(ctx, s.rdb, []string{keyIdem(req.Owner, req.IdempotencyKey)}, idemPending(req.Fingerprint)).Err()
	if err != nil {
		s.log.Warn("release an idempotency key", "err", err)
	}
}

// cancelScript is the cancel transition (see refundLua).
var cancelScript = redis.NewScript(refundLua)

// Cancel ends owner's unfinished job with status canceled and refunds it:
// a waiting job never starts (its queue task is deleted); a running one is
// stopped by its worker, which watches the job's events. ErrNotFound for
// unknown and other owners' jobs; ErrNotCancelable (with the job) when it
// has ended.
func (s *Service) Cancel(ctx context.Context, owner, id string) (*Job, error) {
	r, err := s.load(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := s.awaitReplicas(ctx, ""); err != nil {
		return nil, err // nothing written: any retry is safe
	}
	n, err := cancelScript.Run(ctx, s.rdb, refundKeys(owner, id),
		"", stamp(), id, ledgerJSON("refund", id, r.Model, int64(r.Cost)), StatusCanceled, owner).Int()
	if err != nil {
		return nil, fmt.Errorf("jobs: cancel %s: %w", id, err)
	}
	if n == -1 {
		return nil, ErrNotFound
	}
	if n == 1 {
		s.deleteTask(QueueName(r.Model), id)
		s.dropInputs(ctx, id, owner)
		s.promote(ctx, r.Model, owner)
		if r2, err := s.load(ctx, id); err == nil {
			s.enqueueWebhook(ctx, r2)
		}
	}
	if n == 1 {
		if err := s.confirmReplicated(ctx, ""); err != nil {
			return nil, err // a retried cancel finds the job cancelled, or cancels it
		}
	}
	j, err := s.Get(ctx, owner, id)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return j, ErrNotCancelable
	}
	return j, nil
}

// deleteScript turns an ended job into a tombstone. KEYS: job, owner's
// jobs, idempotency ("" none). ARGV: owner, job id.
var deleteScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] or redis.call('HGET', KEYS[1], 'deleted') == '1' then return -1 end
if redis.call('HGET', KEYS[1], 'status') == 'starting' then return 0 end
redis.call('HSET', KEYS[1], 'deleted', '1')
redis.call('HDEL', KEYS[1], 'output', 'outputs_info', 'error', 'webhook', 'inputs')
redis.call('ZREM', KEYS[2], ARGV[2])
if KEYS[3] ~= '' and KEYS[3] ~= nil then redis.call('DEL', KEYS[3]) end
return 1`)

// Delete removes owner's ended job's outputs from the store at once and
// leaves a tombstone (until the retention ends) so that its status is 404
// and it leaves the history. ErrNotFound for unknown, deleted and other
// owners' jobs; ErrJobUnfinished while it may still run (cancel it first).
func (s *Service) Delete(ctx context.Context, owner, id string) error {
	r, err := s.load(ctx, id)
	if err != nil {
		return err
	}
	if r.Owner != owner {
		return ErrNotFound
	}
	idem := r.IdemKey
	if idem == "" {
		idem = keyIdem(owner, "") // a key no request uses
	}
	n, err := deleteScript.Run(ctx, s.rdb, []string{keyJob(id), keyOwnerJobs(owner), idem}, owner, id).Int()
	switch {
	case err != nil:
		return fmt.Errorf("jobs: delete %s: %w", id, err)
	case n == -1:
		return ErrNotFound
	case n == 0:
		return ErrJobUnfinished
	}
	if err := s.store.DeletePrefix(ctx, id+"/"); err != nil {
		return fmt.Errorf("jobs: delete %s: outputs: %w", id, err)
	}
	return nil
}

// List bounds.
const (
	DefaultListLimit = 20
	MaxListLimit     = 100
	// listScanFactor bounds the records read per page when filtering.
	listScanFactor = 10
)

// List pages owner's jobs, newest first. The cursor is opaque: the
// creation time (ms) and id of the last job of the previous page.
func (s *Service) List(ctx context.Context, owner string, q ListQuery) (ListPage, error) {
	if q.Limit <= 0 {
		q.Limit = DefaultListLimit
	}
	q.Limit = min(q.Limit, MaxListLimit)
	maxScore, after, err := parseCursor(q.Cursor)
	if err != nil {
		return ListPage{}, err
	}
	page := ListPage{Jobs: []Job{}}
	scanned := 0
	for len(page.Jobs) < q.Limit && scanned < q.Limit*listScanFactor {
		zs, err := s.rdb.ZRevRangeByScoreWithScores(ctx, keyOwnerJobs(owner), &redis.ZRangeBy{
			Max: maxScore, Min: "-inf", Count: int64(q.Limit + 1)}).Result()
		if err != nil {
			return ListPage{}, fmt.Errorf("jobs: list: %w", err)
		}
		zs = skipThrough(zs, after)
		if len(zs) == 0 {
			return page, nil
		}
		for _, z := range zs {
			id := z.Member.(string)
			scanned++
			maxScore, after = strconv.FormatInt(int64(z.Score), 10), id
			r, err := s.load(ctx, id)
			if errors.Is(err, ErrNotFound) {
				continue
			}
			if err != nil {
				return ListPage{}, err
			}
			if (q.Model == "" || r.Model == q.Model) && (q.Status == "" || r.Status == q.Status) {
				page.Jobs = append(page.Jobs, r.Job)
			}
			if len(page.Jobs) == q.Limit {
				break
			}
		}
	}
	page.NextCursor = maxScore + "." + after
	return page, nil
}

// ErrBadCursor: the cursor of GET /v1/jobs is not one it gave (400).
var ErrBadCursor = errors.New("invalid cursor")

// ErrJobUnfinished: the job may still run; cancel it first (409).
var ErrJobUnfinished = errors.New("the job has not ended")

// parseCursor splits "<ms>.<id>"; "" is the first page.
func parseCursor(c string) (maxScore, after string, err error) {
	if c == "" {
		return "+inf", "", nil
	}
	ms, id, ok := strings.Cut(c, ".")
	if _, err := strconv.ParseInt(ms, 10, 64); !ok || err != nil || !validID(id) {
		return "", "", ErrBadCursor
	}
	return ms, id, nil
}

// skipThrough drops the entries up to and including member after (the
// last job of the previous page) among those with the same score.
func skipThrough(zs []redis.Z, after string) []redis.Z {
	if after == "" {
		return zs
	}
	for i, z := range zs {
		if z.Member.(string) == after {
			return zs[i+1:]
		}
	}
	return zs
}
