package jobs

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hibiken/asynq"

	"fashiond/fetch"
	"fashiond/jobs/internal/rdb"
)

// Standard Webhooks header names.
const (
	HeaderWebhookID        = "webhook-id"
	HeaderWebhookTimestamp = "webhook-timestamp"
	HeaderWebhookSignature = "webhook-signature"
)

// WebhookID is the webhook-id of a job's notification: the same on every
// retry, so receivers can deduplicate.
func WebhookID(jobID string) string { return "msg_" + jobID }

func decodeSecret(secret string) ([]byte, error) {
	if !strings.HasPrefix(secret, "whsec_") {
		return nil, errors.New("jobs: webhook secret must start with whsec_")
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || len(key) < 16 {
		return nil, errors.New("jobs: webhook secret must be whsec_ followed by at least 16 base64 bytes")
	}
	return key, nil
}

// Sign returns the Standard Webhooks signature header value
// "v1,<base64 HMAC-SHA256(key, id.timestamp.body)>", where key is the
// base64-decoded part of secret after "whsec_".
func Sign(secret, id string, ts time.Time, body []byte) (string, error) {
	key, err := decodeSecret(secret)
	if err != nil {
		return "", err
	}
	return "v1," + sign(key, id, ts.Unix(), body), nil
}

func sign(key []byte, id string, ts int64, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + strconv.FormatInt(ts, 10) + "."))
	m.Write(body)
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// Verify checks a received webhook as a receiver would: the headers are
// present, the timestamp is within tolerance of now (5 minutes when
// tolerance is 0) and one of the space-separated "v1,..." signatures matches
// (compared in constant time).
func Verify(secret string, h http.Header, body []byte, tolerance time.Duration) error {
	key, err := decodeSecret(secret)
	if err != nil {
		return err
	}
	id, tsStr, sigs := h.Get(HeaderWebhookID), h.Get(HeaderWebhookTimestamp), h.Get(HeaderWebhookSignature)
	if id == "" || tsStr == "" || sigs == "" {
		return errors.New("webhook: missing webhook-id, webhook-timestamp or webhook-signature")
	}
	ts, err := strconv.ParseInt(tsStr, 10, 64)
	if err != nil {
		return errors.New("webhook: bad webhook-timestamp")
	}
	if tolerance <= 0 {
		tolerance = 5 * time.Minute
	}
	if d := time.Since(time.Unix(ts, 0)); d > tolerance || d < -tolerance {
		return errors.New("webhook: timestamp outside the tolerance")
	}
	want := []byte(sign(key, id, ts, body))
	for _, s := range strings.Fields(sigs) {
		v, sig, ok := strings.Cut(s, ",")
		if ok && v == "v1" && subtle.ConstantTimeCompare([]byte(sig), want) == 1 {
			return nil
		}
	}
	return errors.New("webhook: no matching signature")
}

// enqueueWebhook queues the job's notification once (task id "wh-"+id,
// kept for the retention so a re-run cannot queue it again).
func (s *Service) enqueueWebhook(ctx context.Context, r *record) {
	if r.WebhookURL == "" || r.HookSent {
		return
	}
	_, err := s.client.EnqueueContext(ctx, asynq.NewTask(rdb.TaskWebhook, []byte(r.ID)),
		asynq.TaskID("wh-"+r.ID), asynq.Queue(rdb.WebhookQueue), asynq.MaxRetry(len(s.opts.WebhookBackoff)),
		asynq.Timeout(WebhookTimeout+5*time.Second), asynq.Retention(s.opts.Retention))
	if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
		// The job task is acknowledged anyway; log so an operator sees it.
		s.log.Error("queue webhook", "job", r.ID, "err", err)
		return
	}
	if err := s.rdb.HSet(ctx, rdb.KeyJob(r.ID), rdb.FieldHookSent, "1").Err(); err != nil {
		s.log.Warn("mark webhook queued", "job", r.ID, "err", err)
	}
}

// deliverWebhook posts the job object to its webhook URL once.
func (s *Service) deliverWebhook(ctx context.Context, id string) error {
	r, err := s.load(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return nil // expired: nothing left to tell
	}
	if err != nil {
		return err
	}
	if r.WebhookURL == "" {
		return nil
	}
	body, err := json.Marshal(r.Job)
	if err != nil {
		return fmt.Errorf("%v: %w", err, asynq.SkipRetry)
	}
	ctx, cancel := context.WithTimeout(ctx, WebhookTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.WebhookURL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("webhook URL: %v: %w", err, asynq.SkipRetry)
	}
	keys, err := s.signingKeys(ctx, r.Owner)
	if err != nil {
		return err
	}
	wid, now := WebhookID(id), time.Now()
	sigs := make([]string, len(keys))
	for i, k := range keys {
		sigs[i] = "v1," + sign(k, wid, now.Unix(), body)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "fashiond-webhooks/1")
	req.Header.Set(HeaderWebhookID, wid)
	req.Header.Set(HeaderWebhookTimestamp, strconv.FormatInt(now.Unix(), 10))
	req.Header.Set(HeaderWebhookSignature, strings.Join(sigs, " "))
	client := *s.hook
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	shown := fetch.RedactURL(r.WebhookURL)
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its message holds the whole URL, query included
		}
		var refused *fetch.RefusedError
		if errors.As(err, &refused) {
			return fmt.Errorf("webhook %s to %s: %w: %w", wid, shown, err, asynq.SkipRetry)
		}
		return fmt.Errorf("webhook %s to %s: %w", wid, shown, err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusGone:
		return fmt.Errorf("webhook %s to %s: receiver answered %s (gone): %w", wid, shown, resp.Status, asynq.SkipRetry)
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return fmt.Errorf("webhook %s to %s: receiver answered %s", wid, shown, resp.Status)
	}
	return nil
}

func (w *Worker) handleWebhook(ctx context.Context, t *asynq.Task) error {
	err := w.svc.deliverWebhook(ctx, string(t.Payload()))
	n, _ := asynq.GetRetryCount(ctx)
	maxRetry, _ := asynq.GetMaxRetry(ctx)
	outcome := webhookOutcome(err, n, maxRetry)
	w.opts.Observer.WebhookAttempt(outcome)
	switch outcome {
	case WebhookRefused:
		w.log.Warn("webhook refused permanently; it is not retried", "err", err, "attempt", n+1)
	case WebhookExhausted:
		w.log.Warn("webhook delivery failed on its last attempt; it is not retried", "err", err, "attempt", n+1)
	case WebhookRetry:
		w.log.Warn("webhook delivery failed; it will be retried", "err", err, "attempt", n+1)
	}
	return err
}

// webhookOutcome is the outcome (Webhook*) of a delivery attempt that
// ended with err after retried earlier attempts, of at most maxRetry
// retries.
func webhookOutcome(err error, retried, maxRetry int) string {
	switch {
	case err == nil:
		return WebhookDelivered
	case errors.Is(err, asynq.SkipRetry):
		return WebhookRefused
	case retried >= maxRetry:
		return WebhookExhausted
	}
	return WebhookRetry
}
