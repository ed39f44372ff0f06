// Package jobs is the job system: job records and credits in Redis, the asynq
// producer and worker server, dispatch to pipelines, webhook delivery,
// retention, API keys and the studio store.
package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"fashiond/pipelines"
)

// Terminal and initial status values of the spec.
const (
	StatusStarting  = "starting"
	StatusSucceeded = "succeeded" // every model but prompt-tryon
	StatusSuccess   = "success"   // prompt-tryon
	StatusError     = "error"
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
	Credits  int          `json:"credits_used"`

	Owner      string          `json:"-"`
	Inputs     json.RawMessage `json:"-"`
	WebhookURL string          `json:"-"`
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
	Owner      string
	Model      string
	Inputs     json.RawMessage // validated, defaults applied
	Cost       int
	WebhookURL string
}

// ModelInfo is one row of GET /v1/models.
type ModelInfo struct {
	Name      string `json:"name"`
	Lifecycle string `json:"lifecycle"` // stable or experimental
	Served    bool   `json:"served"`    // a live worker consumes its queue
	Workers   int    `json:"workers"`
}

// Errors the API maps to HTTP statuses.
var (
	ErrNotFound            = errors.New("not found")              // 404
	ErrUnauthorized        = errors.New("unknown API key")        // 401
	ErrInsufficientCredits = errors.New("insufficient credits")   // 402
	ErrModelUnavailable    = errors.New("no worker serves model") // 503
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
	// Ready reports whether Redis is reachable.
	Ready(ctx context.Context) error
}
