// Package jobs is the job system: job records and credits in Redis, the asynq
// producer and worker server, dispatch to pipelines, webhook delivery,
// retention, API keys and the studio store.
package jobs

import (
	"context"
	"errors"
	"time"

	"fashiond/pipelines"
	"fashiond/spec"
)

// Terminal and initial status values of the spec (package spec is their
// home).
const (
	StatusStarting  = spec.StatusStarting
	StatusSucceeded = spec.StatusSucceeded // every model but prompt-tryon
	StatusSuccess   = spec.StatusSuccess   // prompt-tryon
	StatusError     = spec.StatusError
	// StatusCanceled is the terminal status of a job its owner cancelled
	// (POST /v1/cancel/{id}); its cost is refunded.
	StatusCanceled = spec.StatusCanceled
)

// Job is the tracking object of the spec plus extra fields. JSON field names
// are the wire format of POST /v1/run and GET /v1/status/{id}.
type Job struct {
	ID        string     `json:"id"`
	Model     string     `json:"model_name"`
	Status    string     `json:"status"`
	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt *time.Time `json:"updated_at,omitempty"`
	Error     *string    `json:"error"`
	Output    []string   `json:"output"`
	// Extra fields (not in the spec; additive only).
	Progress *Progress    `json:"progress,omitempty"`
	Outputs  []OutputInfo `json:"outputs_info,omitempty"` // per output: path and method
	// Credits is what the job finally cost: its price, or 0 once refunded
	// (failed or cancelled); CreditsRefunded is the refund.
	Credits         int `json:"credits_used"`
	CreditsRefunded int `json:"credits_refunded,omitempty"`
	// Queue is the job's place in its model's queue while it waits.
	Queue *QueueInfo `json:"queue,omitempty"`

	Owner      string `json:"-"`
	WebhookURL string `json:"-"`
	// Replayed is set on a Submit answer that is the job of an earlier
	// request with the same Idempotency-Key.
	Replayed bool `json:"-"`
}

// QueueInfo is the status body's queue block while a job waits to run.
type QueueInfo struct {
	// Position is 1 for the next job of its model to start.
	Position int `json:"position"`
	// Ahead is the number of jobs that start before it (Position-1).
	Ahead int `json:"ahead"`
	// ETASeconds estimates when the job finishes, from recent run times of
	// its model and the live worker slots (null: no run time known yet).
	ETASeconds *float64 `json:"eta_seconds"`
	// Held is true while the job waits in its key's own backlog because
	// the key has its most jobs in the model queue (fair sharing).
	Held bool `json:"held,omitempty"`
}

// Progress is the status body's progress block while a job runs.
type Progress struct {
	Stage    string  `json:"stage"`
	Fraction float64 `json:"fraction"`
	Detail   string  `json:"detail,omitempty"`
	Attempt  int     `json:"attempt,omitempty"`
}

// OutputInfo tells which path produced an output and how.
type OutputInfo struct {
	Path   string   `json:"path"`
	Method string   `json:"method,omitempty"`
	Notes  []string `json:"notes,omitempty"`
	// Checks are the pipeline's self-checks of this output.
	Checks []pipelines.Check `json:"checks,omitempty"`
}

// SubmitRequest is a validated submission.
type SubmitRequest struct {
	Owner string
	Model string
	// Inputs are the validated inputs, defaults applied (the API's
	// spec.Validate). Submit stores their data URI images in the blob
	// store and puts blob references in their place, in this value.
	Inputs     spec.Inputs
	Cost       int
	WebhookURL string
	// IdempotencyKey is the client's Idempotency-Key header ("" none);
	// Fingerprint identifies the request it came with (a hash of the
	// model, the normalised inputs and the webhook URL).
	IdempotencyKey string
	Fingerprint    string
}

// ModelInfo is one row of GET /v1/models.
type ModelInfo struct {
	Name      string `json:"name"`
	Lifecycle string `json:"lifecycle"` // stable or experimental
	Served    bool   `json:"served"`    // a live worker consumes its queue
	Workers   int    `json:"workers"`
	// Stages is "generative" when a live worker runs the model with an
	// installed generative model, else "reference".
	Stages string `json:"stages"`
	// GenerativeModels names the installed generative models live workers
	// use for it (empty: none).
	GenerativeModels []string `json:"generative_models"`
	// Devices are the inference devices of the live workers serving the
	// model, each as the worker advertised it ("cpu", or
	// "cuda:0 NVIDIA H100 80GB HBM3 (plugin)"; no file paths).
	Devices []string `json:"devices"`
}

// Errors the API maps to HTTP statuses.
var (
	// ErrNotFound is pipelines.ErrNotFound (the Studio's): one value for
	// unknown jobs, saved models and studio images (404).
	ErrNotFound            = pipelines.ErrNotFound
	ErrUnauthorized        = errors.New("unknown API key")        // 401
	ErrInsufficientCredits = errors.New("insufficient credits")   // 402
	ErrModelUnavailable    = errors.New("no worker serves model") // 503
	// ErrIdempotencyMismatch: the Idempotency-Key was used with another
	// request body (422).
	ErrIdempotencyMismatch = errors.New("idempotency key reused with a different request")
	// ErrIdempotencyInProgress: a request with the same Idempotency-Key is
	// still being processed (409).
	ErrIdempotencyInProgress = errors.New("a request with this idempotency key is in progress")
	// ErrNotCancelable: the job already ended (409).
	ErrNotCancelable = errors.New("the job has already ended")
	// ErrTooManyJobs: the key has its most unfinished jobs (429).
	ErrTooManyJobs = errors.New("too many unfinished jobs")
)

// CreditsError carries the numbers of a 402.
type CreditsError struct {
	Balance int64
	Cost    int
}

func (e *CreditsError) Error() string { return ErrInsufficientCredits.Error() }
func (e *CreditsError) Unwrap() error { return ErrInsufficientCredits }

// Backend is what the HTTP API needs from the job system.
type Backend interface {
	// Authenticate maps a raw API key to its owner id (ErrUnauthorized).
	Authenticate(ctx context.Context, key string) (owner string, err error)
	// Submit reserves credits and enqueues atomically (ErrInsufficientCredits
	// as *CreditsError, ErrModelUnavailable).
	Submit(ctx context.Context, req SubmitRequest) (*Job, error)
	// Get returns a job of owner (ErrNotFound for other owners too).
	Get(ctx context.Context, owner, id string) (*Job, error)
	// Balance is owner's credit balance.
	Balance(ctx context.Context, owner string) (int64, error)
	// Models lists model names with lifecycle and whether a worker serves it.
	Models(ctx context.Context) ([]ModelInfo, error)
	// ListSaved and GetSaved read the studio (GetSaved: ErrNotFound).
	ListSaved(ctx context.Context, owner string) ([]pipelines.SavedModel, error)
	GetSaved(ctx context.Context, owner, id string) (pipelines.SavedModel, error)
	// Ready reports whether Redis is reachable; a *ReplicasError when it
	// is, but submissions are refused for want of online replicas.
	Ready(ctx context.Context) error
	// Cancel cancels owner's unfinished job and refunds it
	// (ErrNotFound, ErrNotCancelable with the job).
	Cancel(ctx context.Context, owner, id string) (*Job, error)
	// Watch calls notify after every change of owner's job id until stop
	// is called (ErrNotFound). notify must not block.
	Watch(ctx context.Context, owner, id string, notify func()) (stop func(), err error)
	// List pages owner's jobs, newest first.
	List(ctx context.Context, owner string, q ListQuery) (ListPage, error)
	// Delete removes owner's job and its outputs, leaving a tombstone
	// (ErrNotFound; ErrNotCancelable while it runs).
	Delete(ctx context.Context, owner, id string) error
	// Allow takes one request from owner's rate limit.
	Allow(ctx context.Context, owner string) (RateDecision, error)
}

// ListQuery selects a page of GET /v1/jobs.
type ListQuery struct {
	Limit  int    // 1..MaxListLimit (DefaultListLimit when 0)
	Cursor string // the NextCursor of the previous page
	Model  string // only this model ("" all)
	Status string // only this status ("" all)
}

// ListPage is one page of GET /v1/jobs.
type ListPage struct {
	Jobs       []Job  `json:"jobs"`
	NextCursor string `json:"next_cursor"` // "" on the last page
}

// RateDecision is the outcome of one rate-limit check.
type RateDecision struct {
	Allowed    bool
	Limit      int           // bucket size (burst)
	Remaining  int           // whole tokens left
	Reset      time.Duration // until the bucket is full again
	RetryAfter time.Duration // until the next request is allowed (when refused)
	Window     time.Duration // the time in which Limit tokens refill
}
