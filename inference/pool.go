package inference

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Pool is a Runner over several sessions of the same graph, for models
// that cannot batch: each Run takes a free session, so up to Size calls
// run at once. Close is idempotent and nil-safe.
type Pool struct {
	spec     SessionSpec
	sessions []*Session
	free     chan *Session
	quit     chan struct{}
	once     sync.Once
	err      error
}

// NewPool loads size sessions of spec (size < 1 means 1).
func NewPool(ctx context.Context, rt *Runtime, spec SessionSpec, size int) (*Pool, error) {
	if rt == nil {
		return nil, errors.New("inference: NewPool needs a runtime")
	}
	if size < 1 {
		size = 1
	}
	p := &Pool{spec: spec, free: make(chan *Session, size), quit: make(chan struct{})}
	for range size {
		s, err := rt.NewSession(ctx, spec)
		if err != nil {
			p.Close()
			return nil, err
		}
		p.sessions = append(p.sessions, s)
		p.free <- s
	}
	return p, nil
}

// Size is the number of sessions.
func (p *Pool) Size() int {
	if p == nil {
		return 0
	}
	return len(p.sessions)
}

// Device is the execution provider of the pool's sessions.
func (p *Pool) Device() string {
	if p == nil || len(p.sessions) == 0 {
		return ""
	}
	return p.sessions[0].Device()
}

// Run waits for a free session (or the end of ctx) and runs the inputs.
func (p *Pool) Run(ctx context.Context, inputs []Tensor) ([]Tensor, error) {
	if p == nil {
		return nil, errors.New("inference: nil pool")
	}
	select {
	case <-p.quit:
		return nil, fmt.Errorf("inference: pool %s: %w", p.spec.Name, ErrClosed)
	default:
	}
	var s *Session
	select {
	case s = <-p.free:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-p.quit:
		return nil, fmt.Errorf("inference: pool %s: %w", p.spec.Name, ErrClosed)
	}
	defer func() { p.free <- s }()
	return s.Run(ctx, inputs)
}

// Close releases every session, waiting for running calls to finish.
func (p *Pool) Close() error {
	if p == nil {
		return nil
	}
	p.once.Do(func() {
		close(p.quit)
		var errs []error
		for _, s := range p.sessions {
			errs = append(errs, s.Close())
		}
		p.err = errors.Join(errs...)
	})
	return p.err
}
