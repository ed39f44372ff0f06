package jobs

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"time"

	"fashiond/jobs/internal/rdb"
)

// Idempotency (Stripe's semantics): the first request with a key claims it
// atomically (SET NX) with a short-lived "pending" marker holding the
// request's fingerprint and a token of its own; the submit script replaces
// the marker with the job id for IdempotencyTTL, only while the key still
// holds that request's claim. A repeat with the same fingerprint gets that
// job; with another fingerprint, ErrIdempotencyMismatch; while the first is
// still being processed, the repeat waits for it up to idemWait, and takes
// over a claim older than idemTakeOver (its request is gone, or its
// release was lost: a release written to a Redis master that a failover
// then demoted kept the key claimed for idemPendingTTL, issue 22), which
// the first request, if it is still running, then finds taken and answers
// ErrIdempotencyInProgress having written nothing.
const (
	// IdempotencyTTL is how long an Idempotency-Key maps to its job.
	IdempotencyTTL = 24 * time.Hour
	// idemPendingTTL bounds a claim whose request never completed (its
	// process died): the key can be used again after it.
	idemPendingTTL = time.Minute
	// idemWait is how long a repeat waits for the first request.
	idemWait = 10 * time.Second
	// idemTakeOver is the age of a claim with the same fingerprint that
	// a repeat takes over: far longer than a submission takes from its
	// claim to its submit script.
	idemTakeOver = 5 * time.Second
	// idemPoll is the interval at which a repeat looks again.
	idemPoll = 25 * time.Millisecond
	// MaxIdempotencyKeyLen bounds an Idempotency-Key.
	MaxIdempotencyKeyLen = 255
)

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

// idemBegin claims req's key with the claim token (a value of its own),
// or returns the job of an earlier request with it (Replayed set).
func (s *Service) idemBegin(ctx context.Context, req SubmitRequest, token string) (*Job, error) {
	if !rdb.FingerprintOK(req.Fingerprint) {
		return nil, errors.New("jobs: an idempotent submit needs a fingerprint without '|'")
	}
	deadline := time.Now().Add(idemWait)
	for {
		ok, err := s.db.ClaimIdem(ctx, req.Owner, req.IdempotencyKey, req.Fingerprint, token, idemPendingTTL)
		if err != nil {
			return nil, fmt.Errorf("jobs: idempotency key: %w", err)
		}
		if ok {
			return nil, nil
		}
		st, found, err := s.db.Idem(ctx, req.Owner, req.IdempotencyKey)
		if err != nil {
			return nil, fmt.Errorf("jobs: idempotency key: %w", err)
		}
		if !found {
			continue // it expired or was released meanwhile
		}
		switch {
		case st.Fingerprint != req.Fingerprint:
			return nil, ErrIdempotencyMismatch
		case st.Done:
			j, err := s.Get(ctx, req.Owner, st.JobID)
			if err != nil {
				return nil, err
			}
			j.Replayed = true
			return j, nil
		case idemPendingTTL-st.TTL >= idemTakeOver:
			ok, err := s.db.TakeOverIdem(ctx, req.Owner, req.IdempotencyKey, st.Value, req.Fingerprint, token, idemPendingTTL)
			if err != nil {
				return nil, fmt.Errorf("jobs: idempotency key: %w", err)
			}
			if ok {
				s.log.Warn("took over an Idempotency-Key claim whose request did not finish (a lost release?)", "age", (idemPendingTTL - st.TTL).Round(time.Millisecond))
				return nil, nil
			}
			continue
		case time.Now().After(deadline):
			return nil, ErrIdempotencyInProgress
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(idemPoll):
		}
	}
}

// idemAbort releases req's claim after a failed submission, so that a
// retry may submit again (nothing was charged).
func (s *Service) idemAbort(ctx context.Context, req SubmitRequest, token string) {
	if err := s.db.ReleaseIdem(ctx, req.Owner, req.IdempotencyKey, req.Fingerprint, token); err != nil {
		s.log.Warn("release an idempotency key", "err", err)
	}
}
