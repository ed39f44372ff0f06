package metrics

import (
	"context"
	"errors"

	"fashiond/jobs"
)

// Backend wraps the API's job system: every submission it accepts or
// refuses, the credits it reserves and the credits a cancellation refunds
// are counted. The other methods pass through.
func (m *Metrics) Backend(b jobs.Backend) jobs.Backend { return &backend{Backend: b, m: m} }

type backend struct {
	jobs.Backend
	m *Metrics
}

// Submit counts the submission by model (a replayed idempotent request is
// not counted again) or its rejection by reason.
func (b *backend) Submit(ctx context.Context, req jobs.SubmitRequest) (*jobs.Job, error) {
	j, err := b.Backend.Submit(ctx, req)
	switch {
	case err != nil:
		b.m.Rejections.WithLabelValues(req.Model, RejectionReason(err)).Inc()
	case !j.Replayed:
		b.m.Submissions.WithLabelValues(req.Model).Inc()
		b.m.CreditsCharged.Add(float64(req.Cost))
	}
	return j, err
}

// Cancel counts the credits a cancellation refunds.
func (b *backend) Cancel(ctx context.Context, owner, id string) (*jobs.Job, error) {
	j, err := b.Backend.Cancel(ctx, owner, id)
	if err == nil && j != nil && j.CreditsRefunded > 0 {
		b.m.CreditsRefunded.Add(float64(j.CreditsRefunded))
	}
	return j, err
}

// rejectionReasons map the job system's errors to the reason label.
var rejectionReasons = []struct {
	err    error
	reason string
}{
	{jobs.ErrInsufficientCredits, "insufficient_credits"},
	{jobs.ErrModelUnavailable, "model_unavailable"},
	{jobs.ErrTooManyJobs, "too_many_jobs"},
	{jobs.ErrInputQuota, "input_quota"},
	{jobs.ErrIdempotencyMismatch, "idempotency"},
	{jobs.ErrIdempotencyInProgress, "idempotency"},
	{context.Canceled, "canceled"},
	{context.DeadlineExceeded, "timeout"},
}

// RejectionReason is the bounded reason label of a Submit error ("error"
// for anything unexpected, such as Redis being unreachable).
func RejectionReason(err error) string {
	var ce *jobs.CreditsError
	if errors.As(err, &ce) {
		return "insufficient_credits"
	}
	for _, r := range rejectionReasons {
		if errors.Is(err, r.err) {
			return r.reason
		}
	}
	return "error"
}
