package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"

	"fashiond/jobs"
	"fashiond/pipelines"
	"fashiond/spec"
)

// fakeBackend is an in-memory jobs.Backend for HTTP-layer tests. Jobs
// complete on their first Get (status success for prompt-tryon, succeeded
// otherwise; error when an image-to-video prompt is "fail").
type fakeBackend struct {
	mu          sync.Mutex
	keys        map[string]string // raw key -> owner
	balance     map[string]int64
	jobs        map[string]*jobs.Job
	inputs      map[string]spec.Inputs                     // by job id
	saved       map[string]map[string]pipelines.SavedModel // owner -> id -> record
	unavailable map[string]bool
	readyErr    error
	failErr     error  // returned by every call when set
	panicOn     string // "balance": Balance panics
	submitted   []jobs.SubmitRequest
	cdnBase     string
	loc         *time.Location // created_at location (to test UTC output)

	order    []string             // job ids, oldest first
	idem     map[string][2]string // owner+key -> fingerprint, job id
	watchers map[string][]func()  // job id -> notify
	hold     bool                 // jobs stay starting on Get (queued)
	rateMax  int                  // requests per owner before 429 (0: no limit)
	used     map[string]int       // owner -> requests taken
	deleted  map[string]bool      // tombstones
}

const (
	keyAlice = "fk_alice_0123456789abcdef"
	keyBob   = "fk_bob_0123456789abcdef"
	keyPoor  = "fk_poor_0123456789abcdef"
)

func newFake() *fakeBackend {
	return &fakeBackend{
		keys:    map[string]string{keyAlice: "owner-alice", keyBob: "owner-bob", keyPoor: "owner-poor"},
		balance: map[string]int64{"owner-alice": 1000, "owner-bob": 1000, "owner-poor": 2},
		jobs:    map[string]*jobs.Job{},
		inputs:  map[string]spec.Inputs{},
		saved: map[string]map[string]pipelines.SavedModel{
			"owner-alice": {
				"11111111-1111-4111-8111-111111111111": {ID: "11111111-1111-4111-8111-111111111111", Name: "Ava", Source: "upload", Width: 768, Height: 1024},
				"22222222-2222-4222-8222-222222222222": {ID: "22222222-2222-4222-8222-222222222222", Name: "Pose A", Source: "generate", Width: 768, Height: 1024},
			},
		},
		unavailable: map[string]bool{},
		idem:        map[string][2]string{},
		watchers:    map[string][]func(){},
		used:        map[string]int{},
		deleted:     map[string]bool{},
		cdnBase:     "http://cdn.test",
		loc:         time.FixedZone("UTC+2", 2*3600),
	}
}

func (f *fakeBackend) Authenticate(ctx context.Context, key string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failErr != nil {
		return "", f.failErr
	}
	if o, ok := f.keys[key]; ok {
		return o, nil
	}
	return "", jobs.ErrUnauthorized
}

func (f *fakeBackend) Submit(ctx context.Context, req jobs.SubmitRequest) (*jobs.Job, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if req.IdempotencyKey != "" {
		if prev, ok := f.idem[req.Owner+req.IdempotencyKey]; ok {
			if prev[0] != req.Fingerprint {
				return nil, jobs.ErrIdempotencyMismatch
			}
			c := *f.jobs[prev[1]]
			c.Replayed = true
			return &c, nil
		}
	}
	if f.unavailable[req.Model] {
		return nil, fmt.Errorf("%w: %s", jobs.ErrModelUnavailable, req.Model)
	}
	if f.balance[req.Owner] < int64(req.Cost) {
		return nil, &jobs.CreditsError{Balance: f.balance[req.Owner], Cost: req.Cost}
	}
	f.balance[req.Owner] -= int64(req.Cost)
	f.submitted = append(f.submitted, req)
	j := &jobs.Job{
		ID:         uuid.NewString(),
		Model:      req.Model,
		Status:     jobs.StatusStarting,
		CreatedAt:  time.Date(2026, 11, 21, 4, 5, 6, 0, f.loc),
		Output:     []string{}, // the API must still write null
		Credits:    req.Cost,
		Owner:      req.Owner,
		WebhookURL: req.WebhookURL,
	}
	f.inputs[j.ID] = req.Inputs
	f.jobs[j.ID] = j
	f.order = append(f.order, j.ID)
	if req.IdempotencyKey != "" {
		f.idem[req.Owner+req.IdempotencyKey] = [2]string{req.Fingerprint, j.ID}
	}
	c := *j
	return &c, nil
}

func (f *fakeBackend) Get(ctx context.Context, owner, id string) (*jobs.Job, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failErr != nil {
		return nil, f.failErr
	}
	j, ok := f.jobs[id]
	if !ok || j.Owner != owner || f.deleted[id] {
		return nil, jobs.ErrNotFound
	}
	if j.Status == jobs.StatusStarting && f.hold {
		c := *j
		c.Queue = &jobs.QueueInfo{Position: 1}
		return &c, nil
	}
	if j.Status == jobs.StatusStarting {
		now := time.Date(2026, 11, 21, 4, 5, 9, 0, f.loc)
		j.UpdatedAt = &now
		var in struct {
			Prompt      string
			SampleCount int
			Poses       []json.RawMessage
			AngleIDs    []string
		}
		raw, _ := spec.Encode(f.inputs[id])
		json.Unmarshal(raw, &in)
		n := max(1, in.SampleCount, len(in.Poses), len(in.AngleIDs))
		switch {
		case j.Model == spec.ModelImageToVideo && in.Prompt == "fail":
			msg := "imageUrl: image could not be loaded"
			j.Status, j.Error = jobs.StatusError, &msg
		case j.Model == spec.ModelImageToVideo:
			j.Status, j.Output = jobs.StatusSucceeded, []string{f.cdnBase + "/cdn/" + j.ID + "/0.mp4"}
		default:
			j.Status = jobs.StatusSucceeded
			if j.Model == spec.ModelPromptTryOn {
				j.Status = jobs.StatusSuccess
			}
			for i := range n {
				j.Output = append(j.Output, fmt.Sprintf("%s/cdn/%s/%d.png", f.cdnBase, j.ID, i))
			}
		}
	}
	c := *j
	return &c, nil
}

func (f *fakeBackend) Balance(ctx context.Context, owner string) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.panicOn == "balance" {
		panic("fake balance exploded")
	}
	if f.failErr != nil {
		return 0, f.failErr
	}
	return f.balance[owner], nil
}

func (f *fakeBackend) Models(ctx context.Context) ([]jobs.ModelInfo, error) {
	var out []jobs.ModelInfo
	for _, m := range spec.ModelNames {
		mi := jobs.ModelInfo{Name: m, Served: !f.unavailable[m], Workers: 1}
		if m != spec.ModelTryOn { // leave one empty: the API fills it in
			mi.Lifecycle = spec.Lifecycle(m)
		}
		if !mi.Served {
			mi.Workers = 0
		}
		out = append(out, mi)
	}
	return out, nil
}

func (f *fakeBackend) ListSaved(ctx context.Context, owner string) ([]pipelines.SavedModel, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []pipelines.SavedModel
	for _, m := range f.saved[owner] {
		out = append(out, m)
	}
	return out, nil
}

func (f *fakeBackend) GetSaved(ctx context.Context, owner, id string) (pipelines.SavedModel, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failErr != nil {
		return pipelines.SavedModel{}, f.failErr
	}
	m, ok := f.saved[owner][id]
	if !ok {
		return pipelines.SavedModel{}, jobs.ErrNotFound
	}
	return m, nil
}

func (f *fakeBackend) Ready(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.readyErr
}

var errRedisDown = errors.New("dial tcp 127.0.0.1:6379: connection refused")

func (f *fakeBackend) Cancel(ctx context.Context, owner, id string) (*jobs.Job, error) {
	f.mu.Lock()
	j, ok := f.jobs[id]
	if !ok || j.Owner != owner || f.deleted[id] {
		f.mu.Unlock()
		return nil, jobs.ErrNotFound
	}
	if j.Status != jobs.StatusStarting {
		c := *j
		f.mu.Unlock()
		return &c, jobs.ErrNotCancelable
	}
	j.Status = jobs.StatusCanceled
	f.balance[owner] += int64(j.Credits)
	j.CreditsRefunded, j.Credits = j.Credits, 0
	c := *j
	notify := f.watchers[id]
	f.mu.Unlock()
	for _, n := range notify {
		n()
	}
	return &c, nil
}

func (f *fakeBackend) Watch(ctx context.Context, owner, id string, notify func()) (func(), error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if j, ok := f.jobs[id]; !ok || j.Owner != owner {
		return nil, jobs.ErrNotFound
	}
	f.watchers[id] = append(f.watchers[id], notify)
	return func() {}, nil
}

// List pages by insertion order (all fake jobs share created_at); the
// cursor is the index of the next older job.
func (f *fakeBackend) List(ctx context.Context, owner string, q jobs.ListQuery) (jobs.ListPage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	start := len(f.order) - 1
	if q.Cursor != "" {
		n, err := strconv.Atoi(q.Cursor)
		if err != nil || n < 0 || n >= len(f.order) {
			return jobs.ListPage{}, jobs.ErrBadCursor
		}
		start = n
	}
	if q.Limit == 0 {
		q.Limit = jobs.DefaultListLimit
	}
	page := jobs.ListPage{Jobs: []jobs.Job{}}
	for i := start; i >= 0; i-- {
		j := f.jobs[f.order[i]]
		if j.Owner != owner || f.deleted[j.ID] || q.Model != "" && j.Model != q.Model || q.Status != "" && j.Status != q.Status {
			continue
		}
		if len(page.Jobs) == q.Limit {
			page.NextCursor = strconv.Itoa(i)
			break
		}
		page.Jobs = append(page.Jobs, *j)
	}
	return page, nil
}

func (f *fakeBackend) Delete(ctx context.Context, owner, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	j, ok := f.jobs[id]
	switch {
	case !ok || j.Owner != owner || f.deleted[id]:
		return jobs.ErrNotFound
	case j.Status == jobs.StatusStarting:
		return jobs.ErrJobUnfinished
	}
	f.deleted[id] = true
	return nil
}

func (f *fakeBackend) Allow(ctx context.Context, owner string) (jobs.RateDecision, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rateMax == 0 {
		return jobs.RateDecision{Allowed: true}, nil
	}
	f.used[owner]++
	left := f.rateMax - f.used[owner]
	d := jobs.RateDecision{Allowed: left >= 0, Limit: f.rateMax, Remaining: max(left, 0), Reset: 10 * time.Second, Window: 10 * time.Second}
	if !d.Allowed {
		d.RetryAfter = 1500 * time.Millisecond
	}
	return d, nil
}
