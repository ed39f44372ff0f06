package jobs

import (
	"context"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"fashiond/jobs/internal/rdb"
)

// Job change events. Every transition of a job record (dispatch, claim,
// progress, success, error, cancel) publishes the new state's word on the
// job's Redis channel in the same Lua script as the change, so every API
// node and worker learns of it at once. Each process holds one pattern
// subscription (a single Redis connection) and fans the events out to the
// local watchers of each job.

// hub fans the events of the pattern subscription out to local watchers.
type hub struct {
	rdb redis.UniversalClient

	mu       sync.Mutex
	ps       *redis.PubSub
	next     int
	watchers map[string]map[int]func(payload string)
	done     chan struct{}
}

func newHub(rdb redis.UniversalClient) *hub {
	return &hub{rdb: rdb, watchers: map[string]map[int]func(string){}}
}

// watch calls fn with the payload of every event of job id until the
// returned stop is called. fn runs on the hub's goroutine: it must not
// block. The subscription is in place when watch returns.
func (h *hub) watch(ctx context.Context, id string, fn func(payload string)) (stop func(), err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ps == nil {
		ps := h.rdb.PSubscribe(ctx, rdb.EventsPrefix+"*")
		if _, err := ps.Receive(ctx); err != nil { // the subscription confirmation
			ps.Close()
			return nil, err
		}
		h.ps, h.done = ps, make(chan struct{})
		go h.loop(ps.Channel(), h.done)
	}
	h.next++
	n := h.next
	if h.watchers[id] == nil {
		h.watchers[id] = map[int]func(string){}
	}
	h.watchers[id][n] = fn
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.watchers[id], n)
		if len(h.watchers[id]) == 0 {
			delete(h.watchers, id)
		}
	}, nil
}

func (h *hub) loop(ch <-chan *redis.Message, done chan struct{}) {
	defer close(done)
	for m := range ch {
		id := strings.TrimPrefix(m.Channel, rdb.EventsPrefix)
		h.mu.Lock()
		for _, fn := range h.watchers[id] {
			fn(m.Payload)
		}
		h.mu.Unlock()
	}
}

// close ends the subscription.
func (h *hub) close() {
	h.mu.Lock()
	ps, done := h.ps, h.done
	h.ps = nil
	h.mu.Unlock()
	if ps != nil {
		ps.Close()
		<-done
	}
}

// Watch calls notify after every change of owner's job id until stop is
// called; ErrNotFound for unknown jobs and other owners' jobs. Events are
// not replayed: read the job after Watch returns.
func (s *Service) Watch(ctx context.Context, owner, id string, notify func()) (func(), error) {
	r, err := s.load(ctx, id)
	if err != nil {
		return nil, err
	}
	if r.Owner != owner {
		return nil, ErrNotFound
	}
	return s.events.watch(ctx, id, func(string) { notify() })
}
