package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"time"

	"fashiond/jobs"
)

// wantsStream reports whether an Accept header asks for text/event-stream.
func wantsStream(accept string) bool {
	for _, part := range strings.Split(accept, ",") {
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err == nil && mt == "text/event-stream" {
			return true
		}
	}
	return false
}

// streamer writes one job's Server-Sent Events.
type streamer struct {
	w    http.ResponseWriter
	rc   *http.ResponseController
	last []byte
	seq  int
}

// write sends b (with the write deadline extended) and flushes.
func (st *streamer) write(b []byte) error {
	_ = st.rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	if _, err := st.w.Write(b); err != nil {
		return err
	}
	return st.rc.Flush()
}

// send writes the job as an event when it differs from the last one.
func (st *streamer) send(j *jobs.Job) error {
	b, err := marshal(wireJob(j))
	if err != nil || bytes.Equal(b, st.last) {
		return err
	}
	st.last = b
	st.seq++
	return st.write(fmt.Appendf(nil, "id: %d\nevent: status\ndata: %s\n\n", st.seq, b))
}

// stream is GET /v1/status/{id} with Accept: text/event-stream: the job
// object as an event on every change (queue place, stage, progress,
// end), a ": ping" comment every Options.StreamHeartbeat, closed after the
// terminal event.
func (s *server) stream(w http.ResponseWriter, r *http.Request, id string) {
	ctx, cancel := context.WithTimeout(r.Context(), streamMaxDuration)
	defer cancel()
	owner := Owner(ctx)
	changed := make(chan struct{}, 1)
	stop, err := s.o.Backend.Watch(ctx, owner, id, func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	})
	switch {
	case errors.Is(err, jobs.ErrNotFound):
		writeError(w, http.StatusNotFound, CodeNotFound, "", fmt.Sprintf("no job with id %s", quoteClip(id)))
		return
	case err != nil:
		s.backendError(w, r, "watch job", err)
		return
	}
	defer stop()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	st := &streamer{w: w, rc: http.NewResponseController(w)}
	if err := st.write([]byte("retry: 2000\n\n")); err != nil {
		return
	}
	s.streamLoop(ctx, st, owner, id, changed)
}

// streamLoop sends the job after each change or poll until it ends.
func (s *server) streamLoop(ctx context.Context, st *streamer, owner, id string, changed <-chan struct{}) {
	beat := time.NewTicker(s.o.StreamHeartbeat)
	defer beat.Stop()
	poll := time.NewTimer(0) // the first read
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-beat.C:
			if st.write([]byte(": ping\n\n")) != nil {
				return
			}
			continue
		case <-changed:
		case <-poll.C:
		}
		poll.Reset(streamPoll)
		j, err := s.o.Backend.Get(ctx, owner, id)
		if err != nil {
			// Deleted or expired meanwhile, or Redis away: say so and end.
			msg, code := "the job is no longer available", CodeNotFound
			if !errors.Is(err, jobs.ErrNotFound) {
				msg, code = "the job store is unavailable; reconnect shortly", CodeBackendUnavailable
			}
			b, _ := marshal(ErrorBody{Error: msg, Message: msg, Code: code})
			_ = st.write(fmt.Appendf(nil, "event: error\ndata: %s\n\n", b))
			return
		}
		if st.send(j) != nil || j.Status != jobs.StatusStarting {
			return
		}
	}
}
