package api

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"fashiond/jobs"
	"fashiond/spec"
)

// Client API beyond the spec: idempotent submits, cancel, the live status
// stream, job history and deletion, per-key rate limits.

// Headers of the client API.
const (
	HeaderIdempotencyKey = "Idempotency-Key"
	// HeaderIdempotentReplayed is "true" on a POST /v1/run answer that
	// is the job of an earlier request with the same Idempotency-Key.
	HeaderIdempotentReplayed = "Idempotent-Replayed"
	HeaderRateLimit          = "RateLimit"
	HeaderRateLimitPolicy    = "RateLimit-Policy"
)

// Error codes of the client API.
const (
	CodeInvalidIdempotencyKey = "invalid_idempotency_key"     // 400
	CodeIdempotencyReused     = "idempotency_key_reused"      // 422
	CodeIdempotencyInProgress = "idempotency_key_in_progress" // 409
	CodeNotCancelable         = "not_cancelable"              // 409
	CodeJobUnfinished         = "job_unfinished"              // 409
	CodeRateLimited           = "rate_limited"                // 429
	CodeTooManyJobs           = "too_many_jobs"               // 429
	CodeInvalidParameter      = "invalid_parameter"           // 400
)

// Stream timing of GET /v1/status/{id} with Accept: text/event-stream.
const (
	// DefaultStreamHeartbeat is the interval of ": ping" comments that
	// keep proxies from closing an idle stream (Options.StreamHeartbeat).
	DefaultStreamHeartbeat = 15 * time.Second
	// streamPoll re-reads a job that had no event for this long (queue
	// positions change as other jobs start; events lost to a Redis
	// reconnect are caught up).
	streamPoll = 2 * time.Second
	// streamMaxDuration ends a stream; the client reconnects.
	streamMaxDuration = time.Hour
	// streamWriteTimeout bounds one write of the stream.
	streamWriteTimeout = 10 * time.Second
	// inProgressRetryAfter is the Retry-After (s) of a 409 in progress.
	inProgressRetryAfter = 1
	// tooManyJobsRetryAfter is the Retry-After (s) of a 429 too_many_jobs.
	tooManyJobsRetryAfter = 10
)

// checkIdempotencyKey validates an Idempotency-Key header value: 1 to 255
// visible ASCII characters.
func checkIdempotencyKey(k string) error {
	if k == "" || len(k) > jobs.MaxIdempotencyKeyLen {
		return fmt.Errorf("the %s header must hold 1 to %d characters", HeaderIdempotencyKey, jobs.MaxIdempotencyKeyLen)
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return fmt.Errorf("the %s header must hold visible ASCII characters only (a UUID is a good key)", HeaderIdempotencyKey)
		}
	}
	return nil
}

// idempotencyKey reads the request's Idempotency-Key ("" none).
func idempotencyKey(r *http.Request) (string, error) {
	vs := r.Header.Values(HeaderIdempotencyKey)
	switch len(vs) {
	case 0:
		return "", nil
	case 1:
		return vs[0], checkIdempotencyKey(vs[0])
	}
	return "", fmt.Errorf("the %s header is given %d times; give it once", HeaderIdempotencyKey, len(vs))
}

// submitError answers the client-API errors of Submit; false when err is
// none of them.
func (s *server) submitError(w http.ResponseWriter, err error) bool {
	switch {
	case errors.Is(err, jobs.ErrIdempotencyMismatch):
		w.Header().Set("X-Should-Retry", "false")
		writeError(w, http.StatusUnprocessableEntity, CodeIdempotencyReused, HeaderIdempotencyKey,
			"this Idempotency-Key was already used with a different request body within 24 hours; use a new key for a new request")
	case errors.Is(err, jobs.ErrIdempotencyInProgress):
		w.Header().Set("Retry-After", strconv.Itoa(inProgressRetryAfter))
		writeError(w, http.StatusConflict, CodeIdempotencyInProgress, HeaderIdempotencyKey,
			"a request with this Idempotency-Key is still being processed; retry shortly to get its job")
	case errors.Is(err, jobs.ErrTooManyJobs):
		w.Header().Set("Retry-After", strconv.Itoa(tooManyJobsRetryAfter))
		w.Header().Set("X-Should-Retry", "false")
		writeError(w, http.StatusTooManyRequests, CodeTooManyJobs, "",
			fmt.Sprintf("%v; nothing was charged, submit again when some of your jobs have finished", err))
	default:
		return false
	}
	return true
}

// rateLimit takes a token from the owner's bucket, sets the RateLimit
// headers and answers 429 when none is left; false means stop.
func (s *server) rateLimit(w http.ResponseWriter, r *http.Request, owner string) bool {
	d, err := s.o.Backend.Allow(r.Context(), owner)
	if err != nil {
		s.backendError(w, r, "rate limit", err)
		return false
	}
	if d.Limit <= 0 {
		return true // no limit for this key
	}
	secs := func(t time.Duration) int { return int(math.Ceil(t.Seconds())) }
	w.Header().Set(HeaderRateLimitPolicy, fmt.Sprintf(`"per-key";q=%d;w=%d`, d.Limit, max(secs(d.Window), 1)))
	w.Header().Set(HeaderRateLimit, fmt.Sprintf(`"per-key";r=%d;t=%d`, d.Remaining, secs(d.Reset)))
	if d.Allowed {
		return true
	}
	w.Header().Set("Retry-After", strconv.Itoa(max(secs(d.RetryAfter), 1)))
	writeError(w, http.StatusTooManyRequests, CodeRateLimited, "",
		fmt.Sprintf("too many requests for this API key (%d at once, refilled over %ds); retry after the Retry-After seconds", d.Limit, max(secs(d.Window), 1)))
	return false
}

// setCredits sets the credits headers of a job answer: what the job
// finally cost (0 once refunded).
func setCredits(w http.ResponseWriter, j *jobs.Job) {
	c := strconv.Itoa(j.Credits)
	w.Header().Set(HeaderCreditsUsed, c)
	w.Header().Set(HeaderFashnCreditsUsed, c)
}

// cancel is POST /v1/cancel/{id}.
func (s *server) cancel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	job, err := s.o.Backend.Cancel(r.Context(), Owner(r.Context()), id)
	switch {
	case errors.Is(err, jobs.ErrNotFound) || err == nil && job == nil:
		writeError(w, http.StatusNotFound, CodeNotFound, "", fmt.Sprintf("no job with id %s", quoteClip(id)))
	case errors.Is(err, jobs.ErrNotCancelable):
		msg := fmt.Sprintf("the job has already ended with status %s; it cannot be cancelled", job.Status)
		writeJSON(w, http.StatusConflict, ErrorBody{Error: msg, Message: msg, Code: CodeNotCancelable, Status: job.Status})
	case err != nil:
		s.backendError(w, r, "cancel", err)
	default:
		setCredits(w, job)
		writeJSON(w, http.StatusOK, wireJob(job))
	}
}

// deleteJob is DELETE /v1/jobs/{id}.
func (s *server) deleteJob(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	err := s.o.Backend.Delete(r.Context(), Owner(r.Context()), id)
	switch {
	case errors.Is(err, jobs.ErrNotFound):
		writeError(w, http.StatusNotFound, CodeNotFound, "", fmt.Sprintf("no job with id %s", quoteClip(id)))
	case errors.Is(err, jobs.ErrJobUnfinished):
		writeError(w, http.StatusConflict, CodeJobUnfinished, "", "the job has not ended; cancel it first (POST /v1/cancel/{id})")
	case err != nil:
		s.backendError(w, r, "delete", err)
	default:
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "deleted": true})
	}
}

// jobStatuses are the statuses GET /v1/jobs filters on.
var jobStatuses = []string{jobs.StatusStarting, jobs.StatusSucceeded, jobs.StatusSuccess, jobs.StatusError, jobs.StatusCanceled}

// parseListQuery reads GET /v1/jobs's query.
func parseListQuery(q map[string][]string) (jobs.ListQuery, *ValidationError) {
	var lq jobs.ListQuery
	one := func(k string) (string, *ValidationError) {
		switch len(q[k]) {
		case 0:
			return "", nil
		case 1:
			return q[k][0], nil
		}
		return "", verr(k, CodeInvalidParameter, "%s is given %d times; give it once", k, len(q[k]))
	}
	v, e := one("limit")
	if e != nil {
		return lq, e
	}
	if v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > jobs.MaxListLimit {
			return lq, verr("limit", CodeInvalidParameter, "limit must be an integer from 1 to %d", jobs.MaxListLimit)
		}
		lq.Limit = n
	}
	if lq.Cursor, e = one("cursor"); e != nil {
		return lq, e
	}
	if lq.Model, e = one("model_name"); e != nil {
		return lq, e
	}
	if lq.Model != "" && !slices.Contains(spec.ModelNames, lq.Model) {
		return lq, unknownModel(lq.Model)
	}
	if lq.Status, e = one("status"); e != nil {
		return lq, e
	}
	if lq.Status != "" && !slices.Contains(jobStatuses, lq.Status) {
		return lq, verr("status", CodeInvalidParameter, "status must be one of %s", strings.Join(jobStatuses, ", "))
	}
	return lq, nil
}

// listJobs is GET /v1/jobs.
func (s *server) listJobs(w http.ResponseWriter, r *http.Request) {
	lq, ve := parseListQuery(r.URL.Query())
	if ve != nil {
		writeValidation(w, ve)
		return
	}
	page, err := s.o.Backend.List(r.Context(), Owner(r.Context()), lq)
	switch {
	case errors.Is(err, jobs.ErrBadCursor):
		writeValidation(w, verr("cursor", CodeInvalidParameter, "cursor must be the next_cursor of a previous page"))
		return
	case err != nil:
		s.backendError(w, r, "list jobs", err)
		return
	}
	out := make([]*jobs.Job, len(page.Jobs))
	for i := range page.Jobs {
		out[i] = wireJob(&page.Jobs[i])
	}
	var next *string
	if page.NextCursor != "" {
		next = &page.NextCursor
	}
	writeJSON(w, http.StatusOK, map[string]any{"jobs": out, "next_cursor": next})
}
