package rdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Hash fields of a job record (KeyJob). The scripts name them too.
const (
	FieldID         = "id"
	FieldModel      = "model"
	FieldOwner      = "owner"
	FieldStatus     = "status"
	FieldCreated    = "created_at"
	FieldUpdated    = "updated_at"
	FieldError      = "error"
	FieldOutput     = "output"
	FieldInfo       = "outputs_info"
	FieldProgress   = "progress"
	FieldCost       = "cost"
	FieldInputs     = "inputs"
	FieldWebhook    = "webhook"
	FieldExpires    = "expires_at"
	FieldRefunded   = "refunded"
	FieldRunner     = "runner"
	FieldAttempt    = "attempt"
	FieldHookSent   = "hook_sent"
	FieldFailures   = "failures"    // transient failures so far
	FieldInputBytes = "input_bytes" // bytes of the job's stored input images
	FieldHeld       = "held"        // "1" while the job waits in its key's backlog
	FieldRequeues   = "requeues"    // times the janitor enqueued its lost task again
	FieldDeleted    = "deleted"     // "1": a tombstone left by DELETE /v1/jobs/{id}
	FieldIdem       = "idem"        // the Redis key of the job's Idempotency-Key
	FieldRunning    = "running"     // the worker of the attempt in progress
	FieldCrashes    = "crashes"     // attempts that never ended
	// timeLayout is the layout of created_at and updated_at.
	timeLayout = time.RFC3339Nano
)

// ErrNoRecord: the job hash is absent (or has no id).
var ErrNoRecord = errors.New("rdb: no job record")

// Record is a job hash as stored. Output is decoded (a JSON array of
// strings); outputs_info and progress are the job system's own JSON,
// handed over raw.
type Record struct {
	ID, Model, Owner, Status string
	CreatedAt                time.Time
	UpdatedAt                *time.Time
	Error                    *string
	Output                   []string
	OutputsInfo, Progress    []byte
	Cost                     int
	Inputs                   []byte
	Webhook                  string
	ExpiresAt                time.Time // zero: none
	Refunded, Held, Deleted  bool
	HookSent                 bool
	IdemKey                  string // Redis key of its Idempotency-Key, if any
	Runner                   string // worker id of the latest attempt
	Attempt                  int
}

// parseRecord reads a job hash (ErrNoRecord when empty).
func parseRecord(m map[string]string) (*Record, error) {
	if len(m) == 0 || m[FieldID] == "" {
		return nil, ErrNoRecord
	}
	r := &Record{ID: m[FieldID], Model: m[FieldModel], Owner: m[FieldOwner], Status: m[FieldStatus],
		Inputs: []byte(m[FieldInputs]), Webhook: m[FieldWebhook]}
	var err error
	if r.CreatedAt, err = time.Parse(timeLayout, m[FieldCreated]); err != nil {
		return nil, fmt.Errorf("jobs: record %s: created_at: %w", r.ID, err)
	}
	if v := m[FieldUpdated]; v != "" {
		if t, err := time.Parse(timeLayout, v); err == nil {
			r.UpdatedAt = &t
		}
	}
	if v, ok := m[FieldError]; ok {
		r.Error = &v
	}
	if v := m[FieldOutput]; v != "" {
		if err := json.Unmarshal([]byte(v), &r.Output); err != nil {
			return nil, fmt.Errorf("jobs: record %s: output: %w", r.ID, err)
		}
	}
	if v := m[FieldInfo]; v != "" {
		r.OutputsInfo = []byte(v)
	}
	if v := m[FieldProgress]; v != "" {
		r.Progress = []byte(v)
	}
	r.Cost, _ = strconv.Atoi(m[FieldCost])
	r.Refunded, r.Held, r.Deleted = m[FieldRefunded] == "1", m[FieldHeld] == "1", m[FieldDeleted] == "1"
	r.HookSent, r.IdemKey, r.Runner = m[FieldHookSent] == "1", m[FieldIdem], m[FieldRunner]
	if ms, err := strconv.ParseInt(m[FieldExpires], 10, 64); err == nil {
		r.ExpiresAt = time.UnixMilli(ms)
	}
	r.Attempt, _ = strconv.Atoi(m[FieldAttempt])
	return r, nil
}

// Record reads job id's hash (ErrNoRecord when absent).
func (d *DB) Record(ctx context.Context, id string) (*Record, error) {
	m, err := d.c.HGetAll(ctx, KeyJob(id)).Result()
	if err != nil {
		return nil, fmt.Errorf("jobs: load %s: %w", id, err)
	}
	return parseRecord(m)
}

// NewJob is a job record as Submit creates it.
type NewJob struct {
	ID, Model, Owner, Status string
	Created                  time.Time
	Cost                     int
	Inputs                   []byte // normalised, images as blob references
	Webhook                  string
	ExpiresAt                time.Time
	InputBytes               int64
}

// fields are the hash's field/value pairs.
func (j NewJob) fields() []any {
	created := j.Created.Format(timeLayout)
	return []any{FieldID, j.ID, FieldModel, j.Model, FieldOwner, j.Owner, FieldStatus, j.Status,
		FieldCreated, created, FieldUpdated, created, FieldCost, j.Cost, FieldInputs, string(j.Inputs),
		FieldWebhook, j.Webhook, FieldExpires, j.ExpiresAt.UnixMilli(), FieldInputBytes, j.InputBytes}
}

// stamp is the current time as updated_at holds it.
func stamp() string { return time.Now().UTC().Format(timeLayout) }
