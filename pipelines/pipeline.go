// Package pipelines holds one pipeline per model name of the interface spec.
// A pipeline receives validated inputs and a context, reports progress and
// returns images or a video; it never imports asynq or HTTP code.
package pipelines

import (
	"context"
	"errors"
	"fmt"
	"image"
	"time"

	"fashiond/spec"
)

// Pipeline is what a worker runs for one model_name.
type Pipeline interface {
	// Name is the spec's model_name, e.g. "tryon".
	Name() string
	// Run executes one job. Errors should be *Error so that the message
	// becomes the job's error verbatim.
	Run(ctx context.Context, req *Request) (*Result, error)
}

// Request is one job as a pipeline sees it.
type Request struct {
	JobID string
	Model string
	// Owner identifies the API key that submitted the job (an opaque id,
	// never the key). Studio records are scoped by it.
	Owner string
	// Inputs are the job's normalised inputs, decoded once by the API: the
	// model's spec input type (*spec.TryOnInputs, ...; read them with
	// InputsOf), images as references for Images. nil for a model outside
	// the spec.
	Inputs spec.Inputs
	// Images loads an image input. field is the input's JSON path for error
	// messages ("inputs.personImage", "inputs.poses[1].cdnUrl"); ref is the URL
	// or data URI. Errors name the field.
	Images ImageLoader
	// Progress reports the current stage and overall fraction 0..1. Never
	// nil: every maker of a Request sets it (jobs.Worker reports to the
	// job record; tests pass pipelinetest.NoProgress or a recorder), and no
	// pipeline checks it.
	Progress ProgressFunc
	// Studio stores and reads saved models (model-create) for Owner.
	Studio Studio
}

// ImageLoader fetches and decodes an image input under the service's URL and
// size rules.
type ImageLoader interface {
	Load(ctx context.Context, field, ref string) (image.Image, error)
	// Decode decodes an image's encoded bytes (JPEG, PNG or WEBP) under
	// the same rules and returns it with its format name: for images the
	// service already holds (a job's stored inputs).
	Decode(field string, data []byte) (image.Image, string, error)
}

// InputsOf returns req's inputs as the model's input type T (spec's
// TryOnInputs, ...); a job whose inputs are of another type is an internal
// error.
func InputsOf[T any](req *Request) (*T, error) {
	in, ok := any(req.Inputs).(*T)
	if !ok || in == nil {
		return nil, Failf("internal error: the %s pipeline got inputs of type %T", req.Model, req.Inputs)
	}
	return in, nil
}

// ProgressFunc reports progress: stage name, fraction of the whole job done
// (0..1) and an optional detail such as "frame 12/144".
type ProgressFunc func(stage string, fraction float64, detail string)

// Output is one result file.
type Output struct {
	// Exactly one of Image or Video is set.
	Image image.Image
	// Video is a complete MP4 file.
	Video []byte
	// Format forces "jpeg" or "png" for Image; "" chooses automatically
	// (PNG when the image has transparency, else JPEG).
	Format string
	// Path says which path produced it: "reference" (perception models +
	// classical synthesis) or "generative" (a generative model from the
	// repository).
	Path string
	// Method describes how it was made, e.g. "tps-warp+shading" or
	// "dibr-depth-parallax"; shown in the status body.
	Method string
	// Notes lists what the method could not do, said plainly.
	Notes []string
	// DataURI asks the worker to return this output as a data URI instead of
	// a URL (angle-generation's return_base64).
	DataURI bool
	// Checks are the pipeline's measurements of its own result (reported
	// in outputs_info[].checks).
	Checks []Check
}

// Check is one self-check of an output: a figure the pipeline measured on
// its own result, the documented limit and whether the figure is within it.
type Check struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Limit float64 `json:"limit"`
	// Bound is "max" (Value must be at most Limit) or "min" (at least).
	Bound string `json:"bound"`
	Pass  bool   `json:"pass"`
}

// MaxCheck is a check that passes when value <= limit.
func MaxCheck(name string, value, limit float64) Check {
	return Check{Name: name, Value: value, Limit: limit, Bound: "max", Pass: value <= limit}
}

// MinCheck is a check that passes when value >= limit.
func MinCheck(name string, value, limit float64) Check {
	return Check{Name: name, Value: value, Limit: limit, Bound: "min", Pass: value >= limit}
}

// FirstFailed returns the first check of checks that does not pass; ok is
// false when every check passes.
func FirstFailed(checks []Check) (c Check, ok bool) {
	for _, c := range checks {
		if !c.Pass {
			return c, true
		}
	}
	return Check{}, false
}

// Failure says how c fails its limit: "self-check <name> failed: <value>
// above the limit <limit>" ("below" for a min bound). The wording of every
// check failure, in job errors and notes alike.
func (c Check) Failure() string {
	side := "above"
	if c.Bound == "min" {
		side = "below"
	}
	return fmt.Sprintf("self-check %s failed: %.4g %s the limit %.4g", c.Name, c.Value, side, c.Limit)
}

// CheckFailure is the cause of a CheckError: the check that failed. Read
// it with errors.As instead of parsing the message.
type CheckFailure struct {
	Check Check
}

func (e *CheckFailure) Error() string { return e.Check.Failure() }

// CheckError returns a permanent job error naming the first failed check
// of checks ("<model>: self-check <name> failed: <value> above the limit
// <limit>"), wrapping a *CheckFailure that carries it, or nil when all
// pass.
func CheckError(model string, checks []Check) error {
	c, ok := FirstFailed(checks)
	if !ok {
		return nil
	}
	cf := &CheckFailure{Check: c}
	return &Error{Msg: model + ": " + cf.Error(), Err: cf}
}

// Result is what a successful run returns, in output order.
type Result struct {
	Outputs []Output
}

// Error is a job failure whose message becomes the job's `error` field.
type Error struct {
	Msg string
	// Transient marks failures worth a retry (e.g. a fetch that timed out).
	Transient bool
	Err       error
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Err }

// Failf returns a permanent job error with a formatted message.
func Failf(format string, args ...any) error {
	return &Error{Msg: fmt.Sprintf(format, args...)}
}

// Transientf returns a retryable job error.
func Transientf(format string, args ...any) error {
	return &Error{Msg: fmt.Sprintf(format, args...), Transient: true}
}

// IsTransient reports whether err is worth retrying.
func IsTransient(err error) bool {
	var pe *Error
	return errors.As(err, &pe) && pe.Transient
}

// GenerativeUser is implemented by pipelines that can run generative
// stages: GenerativeModels names the installed generative models the
// pipeline uses on this node (none: it runs its reference path only).
type GenerativeUser interface {
	GenerativeModels() []string
}

// GenerativeModels is p's generative models, or nil.
func GenerativeModels(p Pipeline) []string {
	if g, ok := p.(GenerativeUser); ok {
		return g.GenerativeModels()
	}
	return nil
}

// Registry maps model_name to a pipeline.
type Registry struct {
	m     map[string]Pipeline
	order []string
}

// NewRegistry builds a registry from pipelines.
func NewRegistry(ps ...Pipeline) *Registry {
	r := &Registry{m: map[string]Pipeline{}}
	for _, p := range ps {
		r.Register(p)
	}
	return r
}

// Register adds or replaces a pipeline.
func (r *Registry) Register(p Pipeline) {
	if _, ok := r.m[p.Name()]; !ok {
		r.order = append(r.order, p.Name())
	}
	r.m[p.Name()] = p
}

// Get returns the pipeline for a model name.
func (r *Registry) Get(name string) (Pipeline, bool) {
	p, ok := r.m[name]
	return p, ok
}

// Names lists the registered model names in registration order.
func (r *Registry) Names() []string { return append([]string(nil), r.order...) }

// SavedModel is a studio record created by model-create.
type SavedModel struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Source    string    `json:"source"` // "upload" or "generate"
	ImageURL  string    `json:"image_url"`
	Width     int       `json:"width"`
	Height    int       `json:"height"`
	FaceBox   []float64 `json:"face_box,omitempty"`       // x0,y0,x1,y1 in image pixels
	Landmarks []float64 `json:"face_landmarks,omitempty"` // 5 x (x,y)
	Keypoints []float64 `json:"keypoints,omitempty"`      // 33 x (x,y,visibility)
	CreatedAt time.Time `json:"created_at"`
}

// Studio stores saved models per owner. Implemented by the jobs package over
// Redis and the blob store.
type Studio interface {
	// Save stores img and the record (ID and CreatedAt are filled in when
	// empty) and returns the stored record with its ImageURL.
	Save(ctx context.Context, owner string, m SavedModel, img image.Image) (SavedModel, error)
	// Get returns a record and its image; ErrNotFound when absent.
	Get(ctx context.Context, owner, id string) (SavedModel, image.Image, error)
}

// ErrNotFound is returned by Studio.Get for unknown ids.
var ErrNotFound = errors.New("not found")
