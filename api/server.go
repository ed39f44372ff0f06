package api

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"fashiond/fetch"
)

// Default connection and body limits (see Limits).
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultBodyBaseTimeout   = 10 * time.Second
	DefaultMinBodyRate       = 256 << 10 // bytes per second
	DefaultIdleTimeout       = 60 * time.Second
	DefaultResponseTimeout   = 2 * time.Minute
	DefaultMaxConns          = 512
	DefaultLargeBodyBytes    = 1 << 20
	DefaultMaxLargeBodies    = 4
	DefaultLargeBodyWait     = 5 * time.Second
	// busyRetryAfter is the Retry-After (seconds) of a 503 busy answer.
	busyRetryAfter = 5
	// overCapWriteTimeout bounds the canned 503 written to a connection
	// over MaxConns.
	overCapWriteTimeout = time.Second
)

// CodeBusy is the 503 code of a request refused because the server is at
// one of its concurrency caps (nothing was submitted; retry later).
const CodeBusy = "busy"

// CodeRequestTimeout is the 408 code of a body that did not arrive in time.
const CodeRequestTimeout = "request_timeout"

// Limits protects the server from slow and abusive clients. Zero fields
// take the Default* values.
type Limits struct {
	// ReadHeaderTimeout bounds reading a request's headers.
	ReadHeaderTimeout time.Duration
	// BodyBaseTimeout plus the declared body size at MinBodyRate bytes per
	// second is the deadline for reading a request body, on every route and
	// before authentication (a body of unknown length gets the deadline of
	// the largest allowed body).
	BodyBaseTimeout time.Duration
	MinBodyRate     int64
	// IdleTimeout closes keep-alive connections idle this long.
	IdleTimeout time.Duration
	// ResponseTimeout bounds writing a response after the body was read.
	ResponseTimeout time.Duration
	// MaxConns caps open connections; a connection over the cap is answered
	// 503 busy and closed at once.
	MaxConns int
	// MaxConnsPerIP caps the open connections of one client address, so
	// one client cannot take all of MaxConns (0: MaxConns/4; negative: no
	// cap, e.g. behind a reverse proxy whose address every request has).
	MaxConnsPerIP int
	// LargeBodyBytes is the size from which a body (or one of unknown
	// length) counts as large; at most MaxLargeBodies are received at once,
	// a further one waits up to LargeBodyWait, then gets 503 busy.
	LargeBodyBytes int64
	MaxLargeBodies int
	LargeBodyWait  time.Duration
}

func (l Limits) withDefaults() Limits {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&l.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	def(&l.BodyBaseTimeout, DefaultBodyBaseTimeout)
	def(&l.IdleTimeout, DefaultIdleTimeout)
	def(&l.ResponseTimeout, DefaultResponseTimeout)
	def(&l.LargeBodyWait, DefaultLargeBodyWait)
	if l.MinBodyRate <= 0 {
		l.MinBodyRate = DefaultMinBodyRate
	}
	if l.MaxConns <= 0 {
		l.MaxConns = DefaultMaxConns
	}
	if l.MaxConnsPerIP == 0 {
		l.MaxConnsPerIP = max(l.MaxConns/4, 1)
	}
	if l.LargeBodyBytes <= 0 {
		l.LargeBodyBytes = DefaultLargeBodyBytes
	}
	if l.MaxLargeBodies <= 0 {
		l.MaxLargeBodies = DefaultMaxLargeBodies
	}
	return l
}

// bodyTimeout is the time allowed to receive a body of n bytes (n < 0:
// unknown, the largest allowed).
func (l Limits) bodyTimeout(n, max int64) time.Duration {
	if n < 0 || n > max {
		n = max
	}
	return l.BodyBaseTimeout + time.Duration(float64(n)/float64(l.MinBodyRate)*float64(time.Second))
}

// NewServer returns an http.Server for the handler of New(o) with o.Limits
// applied: header, body, idle and response deadlines. Serve it on
// LimitListener(ln, o.Limits) to cap connections.
func NewServer(o Options) *http.Server {
	l := o.Limits.withDefaults()
	maxBody := o.MaxBodyBytes
	if maxBody <= 0 {
		maxBody = DefaultMaxBodySize
	}
	read := l.ReadHeaderTimeout + l.bodyTimeout(-1, maxBody)
	return &http.Server{
		Handler:           New(o),
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		// An outer bound for every route; POST /v1/run sets a deadline
		// scaled to its declared body size.
		ReadTimeout:  read,
		WriteTimeout: read + l.ResponseTimeout,
		IdleTimeout:  l.IdleTimeout,
	}
}

// guardBody puts every request that carries a body, on every route and
// before authentication, under the read deadline of its declared size
// (BodyBaseTimeout + size at MinBodyRate), and marks an answer written
// before the body was read to its end "Connection: close": net/http would
// otherwise read up to 256 KiB of the rest before writing the header, so
// a refusal (401, 404, 405, 413, 415) of a stalled body would wait for
// the deadline instead of going out at once.
func (s *server) guardBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		s.bodyDeadline(w, r)
		body := &countedBody{ReadCloser: r.Body, declared: r.ContentLength}
		r = r.WithContext(r.Context()) // a copy: net/http's own request keeps its body
		r.Body = body
		next.ServeHTTP(&closeUnread{ResponseWriter: w, body: body}, r)
	})
}

// countedBody records whether a request body was read to its end.
type countedBody struct {
	io.ReadCloser
	declared, read int64 // declared < 0: unknown length
	done           bool
}

func (b *countedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.read += int64(n)
	if err == io.EOF || b.declared >= 0 && b.read >= b.declared {
		b.done = true
	}
	return n, err
}

// closeUnread closes the connection after an answer written before its
// request's body was read to the end (see guardBody).
type closeUnread struct {
	http.ResponseWriter
	body        *countedBody
	wroteHeader bool
}

func (c *closeUnread) WriteHeader(code int) {
	if !c.wroteHeader && !c.body.done {
		c.Header().Set("Connection", "close")
	}
	c.wroteHeader = true
	c.ResponseWriter.WriteHeader(code)
}

func (c *closeUnread) Write(b []byte) (int, error) {
	if !c.wroteHeader {
		c.WriteHeader(http.StatusOK)
	}
	return c.ResponseWriter.Write(b)
}

func (c *closeUnread) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// bodyDeadline sets the read deadline of a request body from its declared
// size and the write deadline of the answer after it.
func (s *server) bodyDeadline(w http.ResponseWriter, r *http.Request) {
	d := s.limits.bodyTimeout(r.ContentLength, s.o.MaxBodyBytes)
	rc := http.NewResponseController(w)
	now := time.Now()
	// Errors mean the writer has no deadlines (a test recorder).
	_ = rc.SetReadDeadline(now.Add(d))
	_ = rc.SetWriteDeadline(now.Add(d + s.limits.ResponseTimeout))
}

// bodyReadError answers a body that could not be read: 413 over the
// limit, 408 when its deadline passed, else 400.
func (s *server) bodyReadError(w http.ResponseWriter, err error) {
	var mbe *http.MaxBytesError
	var ne net.Error
	var long *longStringError
	switch {
	case errors.As(err, &mbe):
		s.tooLarge(w)
	case errors.As(err, &long):
		w.Header().Set("Connection", "close")
		writeError(w, http.StatusBadRequest, CodeImageTooLarge, "", long.Error())
	case errors.As(err, &ne) && ne.Timeout():
		w.Header().Set("Connection", "close")
		writeError(w, http.StatusRequestTimeout, CodeRequestTimeout, "", "the request body did not arrive in time; send it at a steady rate")
	default:
		writeError(w, http.StatusBadRequest, CodeInvalidJSON, "", "the request body could not be read: "+err.Error())
	}
}

func (s *server) tooLarge(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	writeError(w, http.StatusRequestEntityTooLarge, CodeBodyTooLarge, "",
		fmt.Sprintf("the request body is larger than %s, the limit; send large images as URLs instead of data URIs", fetch.FormatMB(s.o.MaxBodyBytes)))
}

// bodyGate bounds the number of large bodies received at once, so that
// concurrent large requests cannot multiply the API's memory.
type bodyGate struct {
	slots chan struct{}
	large int64
	wait  time.Duration
}

func newBodyGate(l Limits) *bodyGate {
	return &bodyGate{slots: make(chan struct{}, l.MaxLargeBodies), large: l.LargeBodyBytes, wait: l.LargeBodyWait}
}

// enter takes a slot for a large body (waiting up to g.wait); small bodies
// pass at once. ok is false when no slot freed in time.
func (g *bodyGate) enter(r *http.Request) (release func(), ok bool) {
	if r.ContentLength >= 0 && r.ContentLength < g.large {
		return func() {}, true
	}
	t := time.NewTimer(g.wait)
	defer t.Stop()
	select {
	case g.slots <- struct{}{}:
		return func() { <-g.slots }, true
	case <-t.C:
		return nil, false
	case <-r.Context().Done():
		return nil, false
	}
}

// LimitListener caps the open connections of ln at l.MaxConns: a
// connection over the cap is answered with a JSON 503 and closed at once,
// so it holds no file descriptor.
func LimitListener(ln net.Listener, l Limits) net.Listener {
	l = l.withDefaults()
	return &limitListener{Listener: ln, slots: make(chan struct{}, l.MaxConns), perIP: l.MaxConnsPerIP, open: map[string]int{}}
}

type limitListener struct {
	net.Listener
	slots chan struct{}
	perIP int // <0: no cap

	mu   sync.Mutex
	open map[string]int // client address -> open connections
}

// takeIP counts a connection of c's client address; false over the cap.
func (ll *limitListener) takeIP(c net.Conn) (string, bool) {
	if ll.perIP < 0 {
		return "", true
	}
	ip, _, _ := net.SplitHostPort(c.RemoteAddr().String())
	ll.mu.Lock()
	defer ll.mu.Unlock()
	if ll.open[ip] >= ll.perIP {
		return "", false
	}
	ll.open[ip]++
	return ip, true
}

func (ll *limitListener) dropIP(ip string) {
	if ll.perIP < 0 {
		return
	}
	ll.mu.Lock()
	defer ll.mu.Unlock()
	if ll.open[ip]--; ll.open[ip] <= 0 {
		delete(ll.open, ip)
	}
}

// overCapResponse is written to connections over the cap.
var overCapResponse = func() []byte {
	body := `{"error":"the server is at its connection limit; try again shortly","code":"busy","message":"the server is at its connection limit; try again shortly"}` + "\n"
	return fmt.Appendf(nil, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json; charset=utf-8\r\nRetry-After: %d\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", busyRetryAfter, len(body), body)
}()

func (ll *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := ll.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip, ok := ll.takeIP(c)
		if !ok {
			go refuse(c)
			continue
		}
		select {
		case ll.slots <- struct{}{}:
			return &limitConn{Conn: c, release: func() { <-ll.slots; ll.dropIP(ip) }}, nil
		default:
			ll.dropIP(ip)
			go refuse(c)
		}
	}
}

func refuse(c net.Conn) {
	_ = c.SetWriteDeadline(time.Now().Add(overCapWriteTimeout))
	_, _ = c.Write(overCapResponse)
	_ = c.Close()
}

type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
