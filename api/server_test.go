package api

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// startServer serves New(o) through NewServer and LimitListener on a free
// loopback port.
func startServer(t *testing.T, o Options) string {
	t.Helper()
	if o.Backend == nil {
		o.Backend = newFake()
	}
	srv := NewServer(o)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(LimitListener(ln, o.Limits))
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// readStatus reads one HTTP response from c within d and returns its
// status code and body ("" and 0 when nothing came).
func readStatus(t *testing.T, c net.Conn, d time.Duration) (int, string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(d))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestSlowBodyIsCut: a body that declares 1000 bytes and sends 3 is
// answered 408 (JSON) and its connection closed once the deadline scaled
// to its size passes. Before the fix (ReadHeaderTimeout only) no answer
// ever came.
func TestSlowBodyIsCut(t *testing.T) {
	addr := startServer(t, Options{Limits: Limits{BodyBaseTimeout: 300 * time.Millisecond}})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	fmt.Fprintf(c, "POST /v1/run HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"m", keyAlice)
	code, body := readStatus(t, c, 3*time.Second)
	if code != http.StatusRequestTimeout || !strings.Contains(body, `"code":"request_timeout"`) {
		t.Fatalf("got %d %q, want 408 request_timeout", code, body)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("answered after %v", el)
	}
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if n, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("connection still open after the 408: n=%d err=%v", n, err)
	}
}

// TestConnectionCap: connections over MaxConns get a JSON 503 at once; the
// idle ones are closed by the header timeout and /healthz answers again.
func TestConnectionCap(t *testing.T) {
	addr := startServer(t, Options{Limits: Limits{MaxConns: 3, MaxConnsPerIP: -1, ReadHeaderTimeout: 300 * time.Millisecond}})
	var idle []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		idle = append(idle, c)
	}
	time.Sleep(50 * time.Millisecond) // let the server accept them
	over, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer over.Close()
	if code, body := readStatus(t, over, 2*time.Second); code != 503 || !strings.Contains(body, `"code":"busy"`) {
		t.Fatalf("over the cap: %d %q, want 503 busy", code, body)
	}
	for _, c := range idle {
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil {
			t.Fatal("an idle connection without headers was not closed")
		}
	}
	time.Sleep(50 * time.Millisecond)
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("healthz %d after the idle connections closed", resp.StatusCode)
	}
}

// TestConnectionCapPerIP: one client address cannot take every slot; a
// request from another address is served meanwhile.
func TestConnectionCapPerIP(t *testing.T) {
	addr := startServer(t, Options{Limits: Limits{MaxConns: 8, MaxConnsPerIP: 2}})
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	time.Sleep(50 * time.Millisecond)
	third, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	if code, body := readStatus(t, third, 2*time.Second); code != 503 || !strings.Contains(body, `"code":"busy"`) {
		t.Fatalf("third connection of one address: %d %q, want 503 busy", code, body)
	}
	if code := healthzFrom(t, "127.0.0.2", addr); code != 200 {
		t.Fatalf("healthz from another address: %d", code)
	}
}

// healthzFrom GETs /healthz from the local address ip (any 127/8 address
// works on Linux loopback) and returns the status.
func healthzFrom(t *testing.T, ip, addr string) int {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	code, _ := readStatus(t, c, 2*time.Second)
	return code
}

// TestLargeBodyGate: with one large-body slot taken by a slow upload, a
// second large body is refused 503 busy after LargeBodyWait; a small one
// passes.
func TestLargeBodyGate(t *testing.T) {
	lim := Limits{MaxLargeBodies: 1, LargeBodyBytes: 1024, LargeBodyWait: 100 * time.Millisecond, BodyBaseTimeout: 5 * time.Second}
	addr := startServer(t, Options{Limits: lim})
	slow, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	fmt.Fprintf(slow, "POST /v1/run HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n{", keyAlice)
	time.Sleep(100 * time.Millisecond)
	post := func(body string) (int, string) {
		req, _ := http.NewRequest("POST", "http://"+addr+"/v1/run", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+keyAlice)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	big := runBody("prompt-tryon", `{"personImage":"`+img+`","prompt":"`+strings.Repeat("x", 1500)+`"}`)
	if code, body := post(big); code != 503 || !strings.Contains(body, `"code":"busy"`) {
		t.Fatalf("second large body: %d %s, want 503 busy", code, body)
	}
	if code, body := post(runBody("tryon", minimalInputs["tryon"])); code != 200 {
		t.Fatalf("small body: %d %s", code, body)
	}
}

// TestStrictJSON: what encoding/json accepts silently is a 400 naming the
// field.
func TestStrictJSON(t *testing.T) {
	hs := newHarness(t)
	svg := "data:image/svg+xml;base64," + base64.StdEncoding.EncodeToString([]byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`))
	cases := []struct {
		name, body, code, field string
	}{
		{"duplicate model_name", `{"model_name":"nope","model_name":"model-create","inputs":{"type":"generate","name":"a","prompt":"b"}}`, CodeDuplicateKey, "model_name"},
		{"duplicate input", `{"model_name":"tryon","inputs":{"personImage":"` + img + `","personImage":"` + img2 + `","garmentImage":"` + img + `"}}`, CodeDuplicateKey, "inputs.personImage"},
		{"duplicate in pose", `{"model_name":"pose-control","inputs":{"modelImage":"` + img + `","poses":[{"type":"custom","type":"template","text":"x"}]}}`, CodeDuplicateKey, "inputs.poses[0].type"},
		{"invalid utf-8", "{\"model_name\":\"prompt-tryon\",\"inputs\":{\"personImage\":\"" + img + "\",\"prompt\":\"red \xff dress\"}}", CodeInvalidUTF8, "inputs.prompt"},
		{"lone surrogate", `{"model_name":"prompt-tryon","inputs":{"personImage":"` + img + `","prompt":"red \ud800 dress"}}`, CodeInvalidUTF8, "inputs.prompt"},
		{"svg data uri", `{"model_name":"tryon","inputs":{"personImage":"` + svg + `","garmentImage":"` + img + `"}}`, CodeInvalidImage, "inputs.personImage"},
		{"trailing data", runBody("tryon", minimalInputs["tryon"]) + `{}`, CodeInvalidJSON, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hs.do("POST", "/v1/run", keyAlice, tc.body).wantError(t, 400, tc.code, tc.field)
		})
	}
	if n := len(hs.fake.submitted); n != 0 {
		t.Fatalf("%d jobs submitted from invalid bodies", n)
	}
}

// allocatedBy returns the bytes allocated while f ran.
func allocatedBy(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

func postRecorded(h http.Handler, body []byte) *httptest.ResponseRecorder {
	r := httptest.NewRequest("POST", "/v1/run", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Authorization", "Bearer "+keyAlice)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestLargeBodyMemory: a body is read into one buffer of its declared size
// and decoded in place. A 24 MB image is accepted with at most 2.5x the
// body allocated in all (the old ReadAll-then-Unmarshal path allocated 9x);
// a 72 MB body of two oversize "images" is refused with one copy of the
// body allocated.
func TestLargeBodyMemory(t *testing.T) {
	h := New(Options{Backend: newFake()})
	image := "data:image/jpeg;base64," + base64.StdEncoding.EncodeToString(make([]byte, 24<<20))
	ok, _ := json.Marshal(map[string]any{"model_name": "tryon", "inputs": map[string]string{"personImage": image, "garmentImage": img}})
	var w *httptest.ResponseRecorder
	got := allocatedBy(func() { w = postRecorded(h, ok) })
	if w.Code != 200 {
		t.Fatalf("valid 24 MB image: %d %s", w.Code, w.Body)
	}
	t.Logf("%d MB valid body: %d MB allocated", len(ok)>>20, got>>20)
	if limit := uint64(5 * len(ok) / 2); got > limit {
		t.Errorf("a %d MB body allocated %d MB, want at most %d MB", len(ok)>>20, got>>20, limit>>20)
	}
	garbage := "data:image/jpeg;base64," + strings.Repeat("A", 36<<20)
	bad, _ := json.Marshal(map[string]any{"model_name": "tryon", "inputs": map[string]string{"personImage": garbage, "garmentImage": garbage}})
	got = allocatedBy(func() { w = postRecorded(h, bad) })
	var e ErrorBody
	json.Unmarshal(w.Body.Bytes(), &e)
	if w.Code != 400 || e.Code != CodeImageTooLarge {
		t.Fatalf("oversize images: %d %s", w.Code, w.Body)
	}
	t.Logf("%d MB body of oversize images: %d MB allocated", len(bad)>>20, got>>20)
	if limit := uint64(len(bad)) * 11 / 10; got > limit {
		t.Errorf("a %d MB body of oversize images allocated %d MB, want at most %d MB (one copy)", len(bad)>>20, got>>20, limit>>20)
	}
}

// TestStalledBodiesBeforeAuth: 200 connections that send the headers of a
// request with Content-Length: 1000 and then 3 bytes of body, and stop,
// are each answered (401 before the body is read, 404, or 503 busy over
// the per-address cap) or closed within the body deadline, with or without
// the per-address cap (FASHIOND_MAX_CONNS_PER_IP=-1), while /healthz from
// another address answers in under 100 ms throughout (see pollHealthz).
// Before the fix an unauthenticated one was never answered: net/http read
// the rest of its body before writing the 401, until the outer read
// timeout (~7 min).
func TestStalledBodiesBeforeAuth(t *testing.T) {
	const (
		conns       = 200
		deadline    = 2 * time.Second
		slack       = time.Second
		healthzWant = 100 * time.Millisecond
	)
	tests := []struct {
		name    string
		perIP   int
		request string
		want    map[int]bool
	}{
		{"no key, per-address cap", 0, "POST /v1/run HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n", map[int]bool{401: true, 503: true}},
		{"no key, no per-address cap", -1, "POST /v1/run HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n", map[int]bool{401: true}},
		{"invalid key, no per-address cap", -1, "POST /v1/run HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer not-a-key\r\nContent-Type: application/json\r\n", map[int]bool{401: true}},
		{"unknown route, no per-address cap", -1, "POST /v1/nothing HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n", map[int]bool{404: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			addr := startServer(t, Options{Limits: Limits{MaxConns: 512, MaxConnsPerIP: tc.perIP, BodyBaseTimeout: deadline}})
			stopHealthz := pollHealthz(addr)
			answers, slowest := stallBodies(t, addr, tc.request, conns, deadline+slack)
			worst, probes, failed := stopHealthz()
			t.Logf("%d stalled bodies: answers %v, slowest answer or close %v; healthz worst %v over %d probes",
				conns, answers, slowest.Round(time.Millisecond), worst.Round(time.Millisecond), probes)
			for code, n := range answers {
				if !tc.want[code] {
					t.Errorf("%d connections answered %d, want one of %v (0: no answer and not closed)", n, code, tc.want)
				}
			}
			if slowest > deadline+slack {
				t.Errorf("slowest connection answered or closed after %v, want within the %v deadline (+%v)", slowest, deadline, slack)
			}
			if probes == 0 || worst > healthzWant || failed != 0 {
				t.Errorf("healthz from another address: worst %v over %d probes (%d failed), want every one under %v", worst, probes, failed, healthzWant)
			}
		})
	}
}

// stallBodies opens n connections that each send request's headers with
// Content-Length: 1000 and 3 bytes of body, then reads each one's answer
// (one after the other, so that the client adds no goroutines of its own
// to the load), waiting up to limit from when it was sent. It returns the
// count of each status (-1: closed without an answer; -2: an answer that
// is not the JSON error body; 0: neither within limit) and the longest
// time from a connection's request to having read its answer or close (an
// upper bound of when it came).
func stallBodies(t *testing.T, addr, request string, n int, limit time.Duration) (map[int]int, time.Duration) {
	t.Helper()
	conns := make([]net.Conn, n)
	sent := make([]time.Time, n)
	for i := range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := fmt.Fprintf(c, "%sContent-Length: 1000\r\n\r\n{\"m", request); err != nil {
			t.Fatal(err)
		}
		conns[i], sent[i] = c, time.Now()
	}
	answers := map[int]int{}
	var slowest time.Duration
	for i, c := range conns {
		c.SetReadDeadline(sent[i].Add(limit))
		code := 0
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		switch {
		case err == nil:
			code = resp.StatusCode
			var eb ErrorBody
			if json.NewDecoder(resp.Body).Decode(&eb) != nil || eb.Code == "" || eb.Message == "" {
				code = -2
			}
			resp.Body.Close()
		case !isTimeout(err):
			code = -1
		}
		answers[code]++
		slowest = max(slowest, time.Since(sent[i]))
	}
	return answers, slowest
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// pollHealthz GETs /healthz from 127.0.0.2 every 20 ms until stop is
// called (stop first lets it make minProbes probes, within 5 s); stop
// returns the slowest answer, the number of probes and the
// number that did not answer 200. A probe slower than slowProbe is
// repeated at once and counts with the faster of the two: on a loaded
// 2-core machine a single probe sometimes waits 100 ms for a CPU, while
// a server that the stalled connections block answers neither.
func pollHealthz(addr string) (stop func() (worst time.Duration, probes, failed int)) {
	const (
		every         = 20 * time.Millisecond
		slowProbe     = 100 * time.Millisecond
		minProbes     = 3
		minProbesWait = 5 * time.Second
	)
	probe := func() (int, time.Duration) {
		t0 := time.Now()
		code := healthzStatus(addr)
		return code, time.Since(t0)
	}
	done := make(chan struct{})
	var worst time.Duration
	var probes, bad int
	var count atomic.Int64 // probes, for stop's wait
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case <-done:
				return
			case <-time.After(every):
			}
			code, took := probe()
			if code != 200 || took >= slowProbe {
				code, took = probe()
			}
			if code != 200 {
				bad++
			}
			worst = max(worst, took)
			probes++
			count.Add(1)
		}
	}()
	return func() (time.Duration, int, int) {
		// The stalled connections are still open when stop is called: on
		// a loaded machine the poller may not have run yet, so wait for
		// minProbes of them (bounded) rather than report none.
		for deadline := time.Now().Add(minProbesWait); count.Load() < minProbes && time.Now().Before(deadline); {
			time.Sleep(every)
		}
		close(done)
		<-finished
		return worst, probes, bad
	}
}

// healthzStatus is healthzFrom for a goroutine: 0 on any error.
func healthzStatus(addr string) int {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}, Timeout: time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return 0
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestKeepAliveAfterBody: an answer to a request whose body the server
// read to its end keeps the connection (a second request is served on
// it); an answer written before the body was read closes it.
func TestKeepAliveAfterBody(t *testing.T) {
	addr := startServer(t, Options{})
	body := runBody("tryon", minimalInputs["tryon"])
	tests := []struct {
		name      string
		auth      string
		wantCode  int
		wantClose bool
	}{
		{"accepted, body read", "Authorization: Bearer " + keyAlice + "\r\n", http.StatusOK, false},
		{"refused before the body", "", http.StatusUnauthorized, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(5 * time.Second))
			br := bufio.NewReader(c)
			fmt.Fprintf(c, "POST /v1/run HTTP/1.1\r\nHost: x\r\n%sContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", tc.auth, len(body), body)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.wantCode || resp.Close != tc.wantClose {
				t.Fatalf("got %d close=%v, want %d close=%v", resp.StatusCode, resp.Close, tc.wantCode, tc.wantClose)
			}
			fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
			resp, err = http.ReadResponse(br, nil)
			if tc.wantClose != (err != nil) {
				t.Fatalf("second request on the connection: err %v, want an error: %v", err, tc.wantClose)
			}
			if err == nil {
				resp.Body.Close()
			}
		})
	}
}
