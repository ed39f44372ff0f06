package api

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"fashiond/jobs"
)

var tryonBody = runBody("tryon", minimalInputs["tryon"])

// TestIdempotencyKeyHTTP: a retried POST with the same key answers the
// same job with the same code and Idempotent-Replayed; another body is a
// 422 naming the header; malformed keys are 400s.
func TestIdempotencyKeyHTTP(t *testing.T) {
	hs := newHarness(t)
	first := hs.do("POST", "/v1/run", keyAlice, tryonBody, HeaderIdempotencyKey, "abc-123")
	again := hs.do("POST", "/v1/run", keyAlice, tryonBody, HeaderIdempotencyKey, "abc-123")
	if first.status != again.status || first.json["id"] != again.json["id"] {
		t.Fatalf("retry: %d %v, first %d %v", again.status, again.json["id"], first.status, first.json["id"])
	}
	if first.header.Get(HeaderIdempotentReplayed) != "" || again.header.Get(HeaderIdempotentReplayed) != "true" {
		t.Errorf("Idempotent-Replayed %q then %q", first.header.Get(HeaderIdempotentReplayed), again.header.Get(HeaderIdempotentReplayed))
	}
	if len(hs.fake.submitted) != 1 || hs.fake.balance["owner-alice"] != 1000-1 {
		t.Errorf("%d submissions, balance %d: want one charge", len(hs.fake.submitted), hs.fake.balance["owner-alice"])
	}
	// The same key of another API key is another request.
	if bob := hs.do("POST", "/v1/run", keyBob, tryonBody, HeaderIdempotencyKey, "abc-123"); bob.json["id"] == first.json["id"] {
		t.Error("another API key got alice's job")
	}
	other := runBody("tryon", strings.Replace(minimalInputs["tryon"], `}`, `,"sampleCount":2}`, 1))
	hs.do("POST", "/v1/run", keyAlice, other, HeaderIdempotencyKey, "abc-123").
		wantError(t, http.StatusUnprocessableEntity, CodeIdempotencyReused, HeaderIdempotencyKey)
	for _, bad := range []string{"has space", strings.Repeat("k", 256), "tab\there", "é"} {
		hs.do("POST", "/v1/run", keyAlice, tryonBody, HeaderIdempotencyKey, bad).
			wantError(t, http.StatusBadRequest, CodeInvalidIdempotencyKey, HeaderIdempotencyKey)
	}
}

// TestCancelHTTP: the owner cancels a waiting job (200, canceled, credits
// 0 in body and headers, balance restored); again is 409 with the status;
// another key gets 404; GET is 405.
func TestCancelHTTP(t *testing.T) {
	hs := newHarness(t)
	hs.fake.hold = true
	id := hs.do("POST", "/v1/run", keyAlice, tryonBody).json["id"].(string)
	hs.do("POST", "/v1/cancel/"+id, keyBob, "").wantError(t, http.StatusNotFound, CodeNotFound, "")
	r := hs.do("POST", "/v1/cancel/"+id, keyAlice, "")
	if r.status != 200 || r.json["status"] != jobs.StatusCanceled || r.json["credits_used"] != 0.0 || r.json["credits_refunded"] != 1.0 {
		t.Fatalf("cancel: %d %s", r.status, r.body)
	}
	if r.header.Get(HeaderFashnCreditsUsed) != "0" || hs.fake.balance["owner-alice"] != 1000 {
		t.Errorf("credits header %q, balance %d", r.header.Get(HeaderFashnCreditsUsed), hs.fake.balance["owner-alice"])
	}
	st := hs.do("GET", "/v1/status/"+id, keyAlice, "")
	if st.header.Get(HeaderCreditsUsed) != "0" || st.json["status"] != jobs.StatusCanceled {
		t.Errorf("status after cancel: %s headers %v", st.body, st.header)
	}
	again := hs.do("POST", "/v1/cancel/"+id, keyAlice, "")
	again.wantError(t, http.StatusConflict, CodeNotCancelable, "")
	if again.json["status"] != jobs.StatusCanceled {
		t.Errorf("409 body %s lacks the status", again.body)
	}
	if r := hs.do("GET", "/v1/cancel/"+id, keyAlice, ""); r.status != http.StatusMethodNotAllowed {
		t.Errorf("GET cancel: %d", r.status)
	}
}

// TestStatusStream: with Accept: text/event-stream the status is a stream
// of job events (queue block first), one per change, that ends after the
// terminal event.
func TestStatusStream(t *testing.T) {
	hs := newHarness(t)
	hs.fake.hold = true
	srv := httptest.NewServer(hs.h)
	defer srv.Close()
	id := hs.do("POST", "/v1/run", keyAlice, tryonBody).json["id"].(string)
	req, _ := http.NewRequest("GET", srv.URL+"/v1/status/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+keyAlice)
	req.Header.Set("Accept", "text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("content type %q", ct)
	}
	events := make(chan map[string]any, 8)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var m map[string]any
				json.Unmarshal([]byte(data), &m)
				events <- m
			}
		}
	}()
	first := <-events
	if first["status"] != "starting" || first["queue"] == nil {
		t.Fatalf("first event %v, want starting with a queue block", first)
	}
	hs.do("POST", "/v1/cancel/"+id, keyAlice, "")
	select {
	case ev := <-events:
		if ev["status"] != jobs.StatusCanceled {
			t.Fatalf("second event %v", ev)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("no event after the cancel")
	}
	select {
	case _, open := <-events:
		if open {
			t.Error("an event after the terminal one")
		}
	case <-time.After(3 * time.Second):
		t.Error("the stream stayed open after the terminal event")
	}
	req.Header.Set("Authorization", "Bearer "+keyBob)
	if res, _ := http.DefaultClient.Do(req); res.StatusCode != http.StatusNotFound {
		t.Errorf("another key's stream: %d", res.StatusCode)
	}
}

// TestHistoryHTTP: GET /v1/jobs pages the owner's jobs newest first with
// next_cursor (null on the last page) and filters; bad parameters are 400;
// DELETE removes an ended job (its status is then 404) and is 409 for an
// unfinished one.
func TestHistoryHTTP(t *testing.T) {
	hs := newHarness(t)
	var ids []string
	for range 3 {
		ids = append(ids, hs.do("POST", "/v1/run", keyAlice, tryonBody).json["id"].(string))
	}
	hs.do("POST", "/v1/run", keyBob, tryonBody)
	var got []string
	cursor := ""
	for range 4 {
		r := hs.do("GET", "/v1/jobs?limit=2&cursor="+url.QueryEscape(cursor), keyAlice, "")
		if r.status != 200 {
			t.Fatalf("list: %d %s", r.status, r.body)
		}
		for _, j := range r.json["jobs"].([]any) {
			got = append(got, j.(map[string]any)["id"].(string))
		}
		next, _ := r.json["next_cursor"].(string)
		if cursor = next; next == "" {
			break
		}
	}
	if strings.Join(got, ",") != strings.Join([]string{ids[2], ids[1], ids[0]}, ",") {
		t.Fatalf("history %v, want %v reversed", got, ids)
	}
	for _, q := range []string{"limit=0", "limit=101", "limit=x", "status=done", "model_name=nope", "limit=1&limit=2"} {
		if r := hs.do("GET", "/v1/jobs?"+q, keyAlice, ""); r.status != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", q, r.status)
		}
	}
	hs.fake.hold = true
	waiting := hs.do("POST", "/v1/run", keyAlice, tryonBody).json["id"].(string)
	hs.do("DELETE", "/v1/jobs/"+waiting, keyAlice, "").wantError(t, http.StatusConflict, CodeJobUnfinished, "")
	hs.fake.hold = false
	hs.do("GET", "/v1/status/"+ids[0], keyAlice, "") // ends it
	hs.do("DELETE", "/v1/jobs/"+ids[0], keyBob, "").wantError(t, http.StatusNotFound, CodeNotFound, "")
	if r := hs.do("DELETE", "/v1/jobs/"+ids[0], keyAlice, ""); r.status != 200 || r.json["deleted"] != true {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	hs.do("GET", "/v1/status/"+ids[0], keyAlice, "").wantError(t, http.StatusNotFound, CodeNotFound, "")
}

// TestRateLimitHTTP: requests over the key's limit are 429 with
// Retry-After and the RateLimit headers; the others carry the headers too.
func TestRateLimitHTTP(t *testing.T) {
	hs := newHarness(t)
	hs.fake.rateMax = 2
	for i := range 2 {
		r := hs.do("GET", "/v1/credits", keyAlice, "")
		if r.status != 200 || r.header.Get(HeaderRateLimitPolicy) != `"per-key";q=2;w=10` {
			t.Fatalf("request %d: %d %v", i, r.status, r.header)
		}
	}
	r := hs.do("GET", "/v1/credits", keyAlice, "")
	r.wantError(t, http.StatusTooManyRequests, CodeRateLimited, "")
	if r.header.Get("Retry-After") != "2" || r.header.Get(HeaderRateLimit) != `"per-key";r=0;t=10` {
		t.Errorf("429 headers %v", r.header)
	}
	if hs.do("GET", "/v1/credits", keyBob, "").status != 200 {
		t.Error("another key was limited")
	}
}

// TestWantsStream is the Accept check of the stream.
func TestWantsStream(t *testing.T) {
	cases := map[string]bool{
		"text/event-stream":                     true,
		"application/json, text/event-stream":   true,
		"text/event-stream;q=0.9":               true,
		"application/json":                      false,
		"":                                      false,
		"text/event-streams":                    false,
		"*/*":                                   false,
		"text/html,application/xhtml+xml;q=0.9": false,
	}
	for accept, want := range cases {
		if got := wantsStream(accept); got != want {
			t.Errorf("wantsStream(%q) = %v, want %v", accept, got, want)
		}
	}
}

// FuzzListQuery: any query parses to a valid query or a 400, never a
// panic, and accepted limits are in range.
func FuzzListQuery(f *testing.F) {
	for _, s := range []string{"limit=5", "cursor=1.x&status=error", "model_name=tryon&limit=100", "limit=-1", "%zz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		lq, ve := parseListQuery(q)
		if ve == nil && (lq.Limit < 0 || lq.Limit > jobs.MaxListLimit) {
			t.Fatalf("limit %d accepted", lq.Limit)
		}
	})
}

// FuzzIdempotencyKey: accepted keys are 1-255 visible ASCII bytes.
func FuzzIdempotencyKey(f *testing.F) {
	for _, s := range []string{"a", "550e8400-e29b-41d4-a716-446655440000", " ", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, k string) {
		if checkIdempotencyKey(k) != nil {
			return
		}
		if len(k) == 0 || len(k) > 255 || strings.ContainsFunc(k, func(r rune) bool { return r <= ' ' || r > '~' }) {
			t.Fatalf("accepted %q", k)
		}
	})
}

// TestStreamHeartbeat: an idle stream carries ": ping" comments.
func TestStreamHeartbeat(t *testing.T) {
	fake := newFake()
	fake.hold = true
	h := New(Options{Backend: fake, StreamHeartbeat: 20 * time.Millisecond})
	srv := httptest.NewServer(h)
	defer srv.Close()
	j, _ := fake.Submit(t.Context(), jobs.SubmitRequest{Owner: "owner-alice", Model: "tryon", Cost: 1})
	req, _ := http.NewRequest("GET", srv.URL+"/v1/status/"+j.ID, nil)
	req.Header.Set("x-api-key", keyAlice)
	req.Header.Set("Accept", "text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	pings := 0
	for deadline := time.Now().Add(5 * time.Second); pings < 2 && time.Now().Before(deadline) && sc.Scan(); {
		if sc.Text() == ": ping" {
			pings++
		}
	}
	if pings < 2 {
		t.Fatalf("%d heartbeats, want 2", pings)
	}
}
