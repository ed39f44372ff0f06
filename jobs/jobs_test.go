package jobs

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"image"
	"image/color"
	_ "image/jpeg"
	_ "image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"fashiond/fetch"
	"fashiond/internal/pipelinetest"
	"fashiond/jobs/internal/rdb"
	"fashiond/pipelines"
	"fashiond/spec"
)

func TestSubmitLifecycle(t *testing.T) {
	tests := []struct {
		name       string
		p          pipelines.Pipeline
		cost       int
		status     string
		n          int
		ct         string
		dataURI    bool
		w, h       int
		wantMethod string
	}{
		{"tryon-two-jpegs", &gradient{name: spec.ModelTryOn, n: 2, w: 64, h: 48}, 2, StatusSucceeded, 2, "image/jpeg", false, 64, 48, "gradient"},
		{"prompt-tryon-success", &gradient{name: spec.ModelPromptTryOn, n: 1, w: 40, h: 30}, 3, StatusSuccess, 1, "image/jpeg", false, 40, 30, "gradient"},
		{"alpha-png", &gradient{name: spec.ModelModelCreate, n: 1, w: 32, h: 32, alpha: true}, 1, StatusSucceeded, 1, "image/png", false, 32, 32, "gradient"},
		{"angles-data-uri", &gradient{name: spec.ModelAngleGeneration, n: 3, w: 24, h: 24, dataURI: true}, 3, StatusSucceeded, 3, "image/jpeg", true, 24, 24, "gradient"},
		{"video-mp4", video{}, 9, StatusSucceeded, 1, "video/mp4", false, 0, 0, "test"},
	}
	forBackends(t, func(t *testing.T, addr string) {
		e := newEnv(t, addr, Options{})
		var ps []pipelines.Pipeline
		for _, tc := range tests {
			ps = append(ps, tc.p)
		}
		e.worker(ps...)
		spent := int64(0)
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				j := e.submit(tc.p.Name(), tc.cost, "")
				spent += int64(tc.cost)
				if j.Status != StatusStarting || j.Output != nil || j.Error != nil || j.UpdatedAt == nil {
					t.Fatalf("submitted job = %+v, want starting with no output and error", j)
				}
				body, _ := json.Marshal(j)
				if !bytes.Contains(body, []byte(`"output":null`)) || !bytes.Contains(body, []byte(`"error":null`)) {
					t.Errorf("submitted job JSON %s lacks output:null or error:null", body)
				}
				got := e.waitTerminal(j.ID)
				if got.Status != tc.status {
					t.Fatalf("status %q (error %v), want %q", got.Status, got.Error, tc.status)
				}
				if got.Error != nil || got.Progress != nil {
					t.Errorf("finished job has error %v progress %+v", got.Error, got.Progress)
				}
				if !got.UpdatedAt.After(got.CreatedAt) && !got.UpdatedAt.Equal(got.CreatedAt) {
					t.Errorf("updated_at %v before created_at %v", got.UpdatedAt, got.CreatedAt)
				}
				if len(got.Output) != tc.n || len(got.Outputs) != tc.n {
					t.Fatalf("%d outputs, %d infos; want %d", len(got.Output), len(got.Outputs), tc.n)
				}
				for i, u := range got.Output {
					if got.Outputs[i].Path != "reference" || got.Outputs[i].Method != tc.wantMethod {
						t.Errorf("outputs_info[%d] = %+v", i, got.Outputs[i])
					}
					var data []byte
					var ct string
					if tc.dataURI {
						prefix := "data:" + tc.ct + ";base64,"
						if !strings.HasPrefix(u, prefix) {
							t.Fatalf("output %d = %.40q, want a %s data URI", i, u, tc.ct)
						}
						data, _ = base64.StdEncoding.DecodeString(strings.TrimPrefix(u, prefix))
						ct = tc.ct
					} else {
						want := e.cdn.URL + "/cdn/" + j.ID + "/"
						if !strings.HasPrefix(u, want) {
							t.Fatalf("output %d = %q, want under %s", i, u, want)
						}
						var code int
						code, data, ct = fetchURL(t, u)
						if code != 200 {
							t.Fatalf("GET %s: %d", u, code)
						}
					}
					if ct != tc.ct {
						t.Errorf("output %d content type %q, want %q", i, ct, tc.ct)
					}
					if tc.w == 0 {
						if !bytes.Contains(data, []byte("ftyp")) {
							t.Errorf("video output is not the MP4 the pipeline returned")
						}
						continue
					}
					img, _, err := image.Decode(bytes.NewReader(data))
					if err != nil {
						t.Fatalf("output %d: %v", i, err)
					}
					if b := img.Bounds(); b.Dx() != tc.w || b.Dy() != tc.h {
						t.Errorf("output %d is %v, want %dx%d", i, b, tc.w, tc.h)
					}
					// Output order: image i has blue = 40*i.
					if _, _, bl, _ := img.At(tc.w/2, tc.h/2).RGBA(); int(bl>>8) < 40*i-6 || int(bl>>8) > 40*i+6 {
						t.Errorf("output %d has blue %d, want about %d (order kept?)", i, bl>>8, 40*i)
					}
				}
			})
		}
		if got := e.balance(); got != e.credits-spent {
			t.Errorf("balance %d, want %d", got, e.credits-spent)
		}
		if k := e.ledgerKinds(); k["charge"] != len(tests) || k["refund"] != 0 {
			t.Errorf("ledger %v, want %d charges and no refund", k, len(tests))
		}
	})
}

func TestErrorRefund(t *testing.T) {
	tests := []struct {
		name      string
		p         *failing
		status    string
		wantCalls int32
		refunds   int
	}{
		{"permanent", &failing{name: "fail-permanent", msg: "inputs.personImage: no person found in the image"}, StatusError, 1, 1},
		{"transient-exhausted", &failing{name: "fail-transient", msg: "inputs.garmentImage: fetch timed out", transient: true}, StatusError, 3, 1},
		{"transient-then-ok", &failing{name: "fail-once", msg: "flaky", transient: true, okFrom: 2}, StatusSucceeded, 2, 0},
	}
	forBackends(t, func(t *testing.T, addr string) {
		e := newEnv(t, addr, Options{MaxRetry: 2})
		var ps []pipelines.Pipeline
		for _, tc := range tests {
			ps = append(ps, tc.p)
		}
		e.worker(ps...)
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				tc.p.calls.Store(0) // the pipelines are shared by both backends
				before, kinds := e.balance(), e.ledgerKinds()
				j := e.submit(tc.p.name, 5, "")
				got := e.waitTerminal(j.ID)
				if got.Status != tc.status {
					t.Fatalf("status %q, want %q", got.Status, tc.status)
				}
				if tc.status == StatusError {
					if got.Error == nil || *got.Error != tc.p.msg {
						t.Errorf("error %v, want %q", got.Error, tc.p.msg)
					}
					if got.Output != nil {
						t.Errorf("failed job has output %v", got.Output)
					}
				}
				if n := tc.p.calls.Load(); n != tc.wantCalls {
					t.Errorf("pipeline ran %d times, want %d", n, tc.wantCalls)
				}
				wantBal := before - 5
				if tc.refunds == 1 {
					wantBal = before
				}
				// A second failure attempt (e.g. a re-run) changes nothing.
				r, err := e.svc.load(context.Background(), j.ID)
				if err != nil {
					t.Fatal(err)
				}
				if done, err := e.svc.fail(context.Background(), r, "again"); err != nil || done {
					t.Errorf("second fail: done=%v err=%v, want no transition", done, err)
				}
				if b := e.balance(); b != wantBal {
					t.Errorf("balance %d, want %d", b, wantBal)
				}
				k := e.ledgerKinds()
				if k["refund"]-kinds["refund"] != tc.refunds || k["charge"]-kinds["charge"] != 1 {
					t.Errorf("ledger moved by %d refunds %d charges, want %d and 1", k["refund"]-kinds["refund"], k["charge"]-kinds["charge"], tc.refunds)
				}
			})
		}
	})
}

func TestInsufficientCredits(t *testing.T) {
	forBackends(t, func(t *testing.T, addr string) {
		e := newEnv(t, addr, Options{})
		e.worker(&gradient{name: spec.ModelTryOn, n: 1, w: 8, h: 8})
		ctx := context.Background()
		poor, err := e.svc.CreateKey(ctx, "poor", 2)
		if err != nil {
			t.Fatal(err)
		}
		owner := OwnerOf(poor)
		tests := []struct {
			cost    int
			ok      bool
			balance int64
		}{
			{3, false, 2},
			{2, true, 0},
			{1, false, 0},
			{0, true, 0},
		}
		for _, tc := range tests {
			jobsBefore := countKeys(t, e, rdb.KeyJobPrefix+"*")
			j, err := e.svc.Submit(ctx, SubmitRequest{Owner: owner, Model: spec.ModelTryOn, Cost: tc.cost, Inputs: &spec.TryOnInputs{}})
			if tc.ok != (err == nil) {
				t.Fatalf("cost %d: err %v, want ok=%v", tc.cost, err, tc.ok)
			}
			if !tc.ok {
				var ce *CreditsError
				if !errors.As(err, &ce) || !errors.Is(err, ErrInsufficientCredits) || ce.Cost != tc.cost || ce.Balance != tc.balance {
					t.Errorf("cost %d: err %#v, want CreditsError{%d %d}", tc.cost, err, tc.balance, tc.cost)
				}
				if n := countKeys(t, e, rdb.KeyJobPrefix+"*"); n != jobsBefore {
					t.Errorf("cost %d: %d job records, want %d (no job)", tc.cost, n, jobsBefore)
				}
			} else if j.Credits != tc.cost {
				t.Errorf("credits_used %d, want %d", j.Credits, tc.cost)
			}
			if b, _ := e.svc.Balance(ctx, owner); b != tc.balance {
				t.Errorf("after cost %d: balance %d, want %d", tc.cost, b, tc.balance)
			}
		}
		l, _ := e.svc.Ledger(ctx, owner, 100)
		if len(l) != 2 || l[0].Kind != "charge" || l[0].Credits != -2 || l[1].Kind != "grant" {
			t.Errorf("ledger %+v, want one charge of 2 after the grant (zero-cost jobs leave no entry)", l)
		}
	})
}

func countKeys(t *testing.T, e *env, pattern string) int {
	keys, err := e.svc.rdb.Keys(context.Background(), pattern).Result()
	if err != nil {
		t.Fatal(err)
	}
	return len(keys)
}

func TestModelUnavailable(t *testing.T) {
	forBackends(t, func(t *testing.T, addr string) {
		e := newEnv(t, addr, Options{})
		ctx := context.Background()
		req := SubmitRequest{Owner: e.owner, Model: spec.ModelPoseControl, Cost: 1, Inputs: &spec.PoseControlInputs{}}
		if _, err := e.svc.Submit(ctx, req); !errors.Is(err, ErrModelUnavailable) {
			t.Fatalf("no worker: err %v, want ErrModelUnavailable", err)
		}
		if b := e.balance(); b != e.credits {
			t.Errorf("balance %d after a 503, want %d", b, e.credits)
		}
		w := e.worker(&gradient{name: spec.ModelPoseControl, n: 1, w: 8, h: 8})
		j, err := e.svc.Submit(ctx, req)
		if err != nil {
			t.Fatalf("with a worker: %v", err)
		}
		if got := e.waitTerminal(j.ID); got.Status != StatusSucceeded {
			t.Errorf("status %q", got.Status)
		}
		ms, err := e.svc.Models(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			want := m.Name == spec.ModelPoseControl
			if m.Served != want || (want && m.Workers != 1) {
				t.Errorf("model %s: served=%v workers=%d, want served=%v", m.Name, m.Served, m.Workers, want)
			}
		}
		if len(ms) != len(Catalogue) || ms[6].Name != spec.ModelImageToVideo || ms[6].Lifecycle != "experimental" {
			t.Errorf("models %+v, want the catalogue", ms)
		}
		w.Shutdown()
		if _, err := e.svc.Submit(ctx, req); !errors.Is(err, ErrModelUnavailable) {
			t.Errorf("after shutdown: err %v, want ErrModelUnavailable", err)
		}
	})
}

func TestKeysAndIsolation(t *testing.T) {
	forBackends(t, func(t *testing.T, addr string) {
		e := newEnv(t, addr, Options{})
		ctx := context.Background()
		e.worker(&gradient{name: spec.ModelTryOn, n: 1, w: 8, h: 8})
		j := e.submit(spec.ModelTryOn, 1, "")
		e.waitTerminal(j.ID)
		other, _ := e.svc.CreateKey(ctx, "other", 10)
		tests := []struct {
			owner, id string
			ok        bool
		}{
			{e.owner, j.ID, true},
			{OwnerOf(other), j.ID, false},
			{e.owner, "00000000-0000-4000-8000-000000000000", false},
			{e.owner, "../" + j.ID, false},
			{"", j.ID, false},
		}
		for _, tc := range tests {
			_, err := e.svc.Get(ctx, tc.owner, tc.id)
			if tc.ok != (err == nil) || (!tc.ok && !errors.Is(err, ErrNotFound)) {
				t.Errorf("Get(%.8s, %s): err %v, want ok=%v", tc.owner, tc.id, err, tc.ok)
			}
		}
		// Authentication by hash only.
		if o, err := e.svc.Authenticate(ctx, e.key); err != nil || o != e.owner {
			t.Errorf("Authenticate(key) = %q, %v", o, err)
		}
		for _, bad := range []string{"", e.key + "x", strings.ToUpper(e.key), "fsk_"} {
			if _, err := e.svc.Authenticate(ctx, bad); !errors.Is(err, ErrUnauthorized) {
				t.Errorf("Authenticate(%q): %v, want ErrUnauthorized", bad, err)
			}
		}
		dump, _ := e.svc.rdb.Keys(ctx, "*").Result()
		for _, k := range dump {
			if strings.Contains(k, e.key) {
				t.Errorf("raw key stored in Redis key %s", k)
			}
		}
		if v, _ := e.svc.rdb.HGetAll(ctx, rdb.KeyAPIKeys).Result(); strings.Contains(mapString(v), e.key) {
			t.Error("raw key stored in the key records")
		}
		// Provisioning is idempotent: a restart does not add credits.
		const raw = "provisioned-key-123"
		for i, want := range []bool{true, false} {
			created, err := e.svc.ProvisionKey(ctx, raw, 50)
			if err != nil || created != want {
				t.Errorf("ProvisionKey #%d: created=%v err=%v, want %v", i, created, err, want)
			}
		}
		if _, err := e.svc.Submit(ctx, SubmitRequest{Owner: OwnerOf(raw), Model: spec.ModelTryOn, Cost: 20, Inputs: &spec.TryOnInputs{}}); err != nil {
			t.Fatal(err)
		}
		e.svc.ProvisionKey(ctx, raw, 50)
		if b, _ := e.svc.Balance(ctx, OwnerOf(raw)); b != 30 {
			t.Errorf("balance after re-provisioning %d, want 30", b)
		}
		keys, err := e.svc.ListKeys(ctx)
		if err != nil || len(keys) != 3 {
			t.Fatalf("ListKeys = %d keys, %v; want 3", len(keys), err)
		}
		if n, err := e.svc.AddCredits(ctx, OwnerOf(raw)[:12], 5); err != nil || n != 35 {
			t.Errorf("AddCredits = %d, %v; want 35", n, err)
		}
		if _, err := e.svc.AddCredits(ctx, "ffffffffffff", 5); err == nil {
			t.Error("AddCredits to an unknown id succeeded")
		}
	})
}

func mapString(m map[string]string) string {
	var b strings.Builder
	for k, v := range m {
		b.WriteString(k + "=" + v + ";")
	}
	return b.String()
}

func TestProgress(t *testing.T) {
	forBackends(t, func(t *testing.T, addr string) {
		e := newEnv(t, addr, Options{})
		p := newBlocking("block", 1)
		e.worker(p)
		j := e.submit("block", 1, "")
		<-p.started
		mid := e.wait(j.ID, "in progress", func(j *Job) bool { return j.Progress != nil && j.Progress.Stage == "blocked" })
		if mid.Status != StatusStarting || mid.Progress.Fraction != 0.5 || mid.Progress.Detail != "waiting for release" || mid.Progress.Attempt != 1 {
			t.Errorf("mid-job %+v progress %+v", mid, mid.Progress)
		}
		body, _ := json.Marshal(mid)
		if !bytes.Contains(body, []byte(`"progress":{"stage":"blocked","fraction":0.5`)) {
			t.Errorf("status body %s lacks the progress block", body)
		}
		p.Release()
		if got := e.waitTerminal(j.ID); got.Status != StatusSucceeded || got.Progress != nil {
			t.Errorf("final %+v", got)
		}
	})
}

func TestRetention(t *testing.T) {
	forBackends(t, func(t *testing.T, addr string) {
		e := newEnv(t, addr, Options{Retention: 1500 * time.Millisecond})
		e.worker(&gradient{name: spec.ModelTryOn, n: 2, w: 8, h: 8})
		j := e.submit(spec.ModelTryOn, 1, "")
		done := e.waitTerminal(j.ID)
		if code, _, _ := fetchURL(t, done.Output[0]); code != 200 {
			t.Fatalf("output not served before expiry: %d", code)
		}
		time.Sleep(time.Until(j.CreatedAt.Add(1600 * time.Millisecond)))
		if _, err := e.svc.Get(context.Background(), e.owner, j.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("after retention: err %v, want ErrNotFound", err)
		}
		if err := e.svc.Sweep(context.Background()); err != nil {
			t.Fatal(err)
		}
		for _, u := range done.Output {
			if code, _, _ := fetchURL(t, u); code != 404 {
				t.Errorf("GET %s after retention: %d, want 404", u, code)
			}
		}
		if _, err := os.Stat(filepath.Join(e.store.Dir(), j.ID)); !os.IsNotExist(err) {
			t.Errorf("output folder still exists: %v", err)
		}
		if n := countKeys(t, e, rdb.KeyJob(j.ID)); n != 0 {
			t.Errorf("job record still in Redis")
		}
		if n, _ := e.svc.rdb.ZCard(context.Background(), rdb.KeyExpiry).Result(); n != 0 {
			t.Errorf("expiry index holds %d entries", n)
		}
	})
}

// receiver is a webhook endpoint that answers codes in turn (then 200).
type receiver struct {
	mu    sync.Mutex
	codes []int
	got   []delivery
}

type delivery struct {
	h    http.Header
	body []byte
	at   time.Time
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	rc.got = append(rc.got, delivery{r.Header.Clone(), b, time.Now()})
	code := 200
	if len(rc.codes) > 0 {
		code, rc.codes = rc.codes[0], rc.codes[1:]
	}
	rc.mu.Unlock()
	w.WriteHeader(code)
}

func (rc *receiver) deliveries() []delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]delivery(nil), rc.got...)
}

func TestWebhook(t *testing.T) {
	forBackends(t, func(t *testing.T, addr string) {
		e := newEnv(t, addr, Options{})
		rc := &receiver{codes: []int{500}}
		hook := httptest.NewServer(rc)
		defer hook.Close()
		e.worker(&gradient{name: spec.ModelTryOn, n: 1, w: 8, h: 8}, &failing{name: "fail", msg: "no garment found"})
		tests := []struct {
			model, status string
			attempts      int
		}{
			{spec.ModelTryOn, StatusSucceeded, 2}, // first answer 500, retried
			{"fail", StatusError, 1},
		}
		for _, tc := range tests {
			n0 := len(rc.deliveries())
			j := e.submit(tc.model, 1, hook.URL+"/hook")
			e.waitTerminal(j.ID)
			deadline := time.Now().Add(15 * time.Second)
			for len(rc.deliveries()) < n0+tc.attempts && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			time.Sleep(300 * time.Millisecond) // no extra deliveries
			ds := rc.deliveries()[n0:]
			if len(ds) != tc.attempts {
				t.Fatalf("%s: %d deliveries, want %d", tc.model, len(ds), tc.attempts)
			}
			for i, d := range ds {
				if id := d.h.Get(HeaderWebhookID); id != "msg_"+j.ID {
					t.Errorf("delivery %d webhook-id %q, want msg_%s", i, id, j.ID)
				}
				if err := Verify(e.svc.WebhookSecret(), d.h, d.body, time.Minute); err != nil {
					t.Errorf("delivery %d: %v", i, err)
				}
				var got Job
				if err := json.Unmarshal(d.body, &got); err != nil || got.ID != j.ID || got.Status != tc.status {
					t.Errorf("delivery %d body %s", i, d.body)
				}
				if bytes.Contains(d.body, []byte(e.owner)) {
					t.Errorf("webhook body leaks the owner id")
				}
			}
		}
		// The secret was generated once and persisted.
		if s := e.svc.WebhookSecret(); !strings.HasPrefix(s, "whsec_") {
			t.Errorf("secret %q", s)
		}
		svc2, err := Open(context.Background(), Options{RedisURL: addr, Store: e.store, JanitorInterval: -1, Log: testLog()})
		if err != nil {
			t.Fatal(err)
		}
		defer svc2.Close()
		if svc2.WebhookSecret() != e.svc.WebhookSecret() {
			t.Error("a second Open generated a different secret")
		}
	})
}

func TestSignVerify(t *testing.T) {
	secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	body := []byte(`{"id":"x","status":"succeeded"}`)
	now := time.Now()
	sig, err := Sign(secret, "msg_1", now, body)
	if err != nil {
		t.Fatal(err)
	}
	// Known-answer check against an independent HMAC computation.
	if want := "v1," + sign([]byte("0123456789abcdef0123456789abcdef"), "msg_1", now.Unix(), body); sig != want {
		t.Fatalf("Sign = %s, want %s", sig, want)
	}
	hdr := func(id string, ts time.Time, sigs string) http.Header {
		h := http.Header{}
		h.Set(HeaderWebhookID, id)
		h.Set(HeaderWebhookTimestamp, strconvI(ts.Unix()))
		h.Set(HeaderWebhookSignature, sigs)
		return h
	}
	other := "whsec_" + base64.StdEncoding.EncodeToString([]byte("another secret of 32 bytes......"))
	tests := []struct {
		name   string
		secret string
		h      http.Header
		body   []byte
		ok     bool
	}{
		{"valid", secret, hdr("msg_1", now, sig), body, true},
		{"one of several", secret, hdr("msg_1", now, "v1,AAAA "+sig), body, true},
		{"tampered body", secret, hdr("msg_1", now, sig), append([]byte{' '}, body...), false},
		{"other id", secret, hdr("msg_2", now, sig), body, false},
		{"wrong secret", other, hdr("msg_1", now, sig), body, false},
		{"old timestamp", secret, hdr("msg_1", now.Add(-time.Hour), sig), body, false},
		{"no signature", secret, hdr("msg_1", now, ""), body, false},
		{"v2 scheme", secret, hdr("msg_1", now, strings.Replace(sig, "v1,", "v2,", 1)), body, false},
		{"bad secret", "secret", hdr("msg_1", now, sig), body, false},
	}
	for _, tc := range tests {
		err := Verify(tc.secret, tc.h, tc.body, 0)
		if (err == nil) != tc.ok {
			t.Errorf("%s: err %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

func strconvI(n int64) string { return strconv.FormatInt(n, 10) }

func redisZ(score float64, member string) redis.Z { return redis.Z{Score: score, Member: member} }

func TestStudio(t *testing.T) {
	forBackends(t, func(t *testing.T, addr string) {
		e := newEnv(t, addr, Options{})
		ctx := context.Background()
		st := e.svc.Studio()
		img := image.NewRGBA(image.Rect(0, 0, 20, 30))
		img.Set(3, 4, color.RGBA{200, 10, 20, 255})
		a, err := st.Save(ctx, e.owner, pipelines.SavedModel{Name: "anna", Source: "upload", Keypoints: []float64{1, 2, 0.9}}, img)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
		b, err := st.Save(ctx, e.owner, pipelines.SavedModel{Name: "ben", Source: "generate"}, img)
		if err != nil {
			t.Fatal(err)
		}
		if a.Width != 20 || a.Height != 30 || a.ID == "" || a.CreatedAt.IsZero() {
			t.Errorf("saved %+v", a)
		}
		m, got, err := st.Get(ctx, e.owner, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		if m.Name != "anna" || len(m.Keypoints) != 3 || got.Bounds().Dx() != 20 {
			t.Errorf("Get = %+v %v", m, got.Bounds())
		}
		if r, g, _, _ := got.At(3, 4).RGBA(); r>>8 != 200 || g>>8 != 10 {
			t.Errorf("pixel (3,4) = %d,%d, want 200,10", r>>8, g>>8)
		}
		code, _, ct := fetchURL(t, a.ImageURL)
		if code != 200 || ct != "image/png" {
			t.Errorf("GET %s: %d %s", a.ImageURL, code, ct)
		}
		list, err := e.svc.ListSaved(ctx, e.owner)
		if err != nil || len(list) != 2 || list[0].ID != b.ID {
			t.Errorf("ListSaved = %+v, %v; want ben then anna", list, err)
		}
		other := OwnerOf("someone else")
		if _, err := e.svc.GetSaved(ctx, other, a.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("other owner GetSaved: %v", err)
		}
		if _, _, err := st.Get(ctx, other, a.ID); !errors.Is(err, pipelines.ErrNotFound) {
			t.Errorf("other owner Get: %v", err)
		}
		if l, _ := e.svc.ListSaved(ctx, other); len(l) != 0 {
			t.Errorf("other owner sees %d saved models", len(l))
		}
	})
}

func TestGracefulShutdown(t *testing.T) {
	forBackends(t, func(t *testing.T, addr string) {
		e := newEnv(t, addr, Options{})
		p := newBlocking("block", 1)
		w := e.worker(p)
		j := e.submit("block", 1, "")
		<-p.started
		done := make(chan struct{})
		go func() { w.Shutdown(); close(done) }()
		time.Sleep(200 * time.Millisecond)
		select {
		case <-done:
			t.Fatal("Shutdown returned while a job was running")
		default:
		}
		p.Release()
		<-done
		if got := e.waitTerminal(j.ID); got.Status != StatusSucceeded {
			t.Errorf("job finished during shutdown as %q", got.Status)
		}
	})
}

func TestShutdownRequeues(t *testing.T) {
	forBackends(t, func(t *testing.T, addr string) {
		e := newEnv(t, addr, Options{})
		p := newBlocking("block", 2)
		w, err := NewWorker(e.svc, pipelines.NewRegistry(p), pipelinetest.Loader{}, WorkerOptions{ShutdownTimeout: 300 * time.Millisecond, Log: testLog()})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		j := e.submit("block", 1, "")
		<-p.started
		w.Shutdown() // gives up after 300 ms: the job goes back to its queue
		r, _ := e.svc.load(context.Background(), j.ID)
		if r.Status != StatusStarting {
			t.Fatalf("interrupted job is %q, want starting", r.Status)
		}
		info, err := e.svc.insp.GetTaskInfo(rdb.QueueName("block"), j.ID)
		if err != nil || info.State != asynq.TaskStatePending {
			t.Fatalf("task %+v %v, want pending", info, err)
		}
		p2 := newBlocking("block", 2)
		p2.Release()
		e.worker(p2)
		got := e.waitTerminal(j.ID)
		if got.Status != StatusSucceeded || len(got.Output) != 2 || e.balance() != e.credits-1 {
			t.Errorf("after requeue: %+v balance %d", got, e.balance())
		}
	})
}

func TestUnstick(t *testing.T) {
	forBackends(t, func(t *testing.T, addr string) {
		e := newEnv(t, addr, Options{UnservedTimeout: time.Millisecond})
		ctx := context.Background()
		w := e.worker(&gradient{name: "gone", n: 1, w: 8, h: 8})
		w.Shutdown()
		// Make "gone" look live for the submissions only.
		advertise := func() { e.svc.rdb.ZAdd(ctx, rdb.KeyServed("gone"), redisZ(float64(nowMS()), "fake")) }
		advertise()
		archived := e.submit("gone", 4, "")
		unserved := e.submit("gone", 3, "")
		orphan := e.submit("gone", 2, "")
		e.svc.rdb.ZRem(ctx, rdb.KeyServed("gone"), "fake")
		if err := e.svc.insp.ArchiveTask(rdb.QueueName("gone"), archived.ID); err != nil {
			t.Fatal(err)
		}
		// orphan: dequeued by a worker that died (asynq v0.26's layout:
		// the task leaves the pending list for the active list and gets a
		// lease; its lease was last extended a minute ago).
		q := rdb.QueueName("gone")
		e.svc.rdb.LRem(ctx, rdb.PendingKey(q), 0, orphan.ID)
		e.svc.rdb.LPush(ctx, rdb.ActiveKey(q), orphan.ID)
		e.svc.rdb.HSet(ctx, rdb.TaskKey(q, orphan.ID), "state", "active")
		e.svc.rdb.ZAdd(ctx, rdb.LeaseKey(q), redisZ(float64(time.Now().Add(-30*time.Second).Unix()), orphan.ID))
		if info, err := e.svc.insp.GetTaskInfo(q, orphan.ID); err != nil || info.State != asynq.TaskStateActive {
			t.Fatalf("simulated orphan: %+v %v", info, err)
		}
		for _, id := range []string{archived.ID, unserved.ID, orphan.ID} {
			e.svc.rdb.ZAdd(ctx, rdb.KeyActive, redisZ(0, id)) // make them old
		}
		for i := 0; i < 2; i++ { // twice: the second pass changes nothing
			if err := e.svc.Sweep(ctx); err != nil {
				t.Fatal(err)
			}
		}
		tests := []struct {
			id, want string
		}{
			{archived.ID, "the job did not finish after 1 attempts"},
			{unserved.ID, "no worker serving gone was available"},
			{orphan.ID, "the worker running the job stopped and no worker serving gone was available"},
		}
		for _, tc := range tests {
			j, _ := e.svc.Get(ctx, e.owner, tc.id)
			if j.Status != StatusError || j.Error == nil || !strings.HasPrefix(*j.Error, tc.want) {
				t.Errorf("job %+v, want error %q", j, tc.want)
			}
		}
		if b := e.balance(); b != e.credits {
			t.Errorf("balance %d, want %d (all refunded once)", b, e.credits)
		}
		if k := e.ledgerKinds(); k["refund"] != 3 {
			t.Errorf("ledger %v, want 3 refunds", k)
		}
	})
}

// TestWebhookAddressRules: webhooks obey the fetch address rules; without an
// allowance a loopback receiver is never contacted.
func TestWebhookAddressRules(t *testing.T) {
	forBackends(t, func(t *testing.T, addr string) {
		e := newEnv(t, addr, Options{WebhookClient: fetch.NewClient(fetch.Policy{TotalTimeout: WebhookTimeout})})
		rc := &receiver{}
		hook := httptest.NewServer(rc)
		defer hook.Close()
		p := newBlocking("block", 1)
		p.Release()
		e.worker(p)
		j := e.submit("block", 1, hook.URL)
		e.waitTerminal(j.ID)
		err := e.svc.deliverWebhook(context.Background(), j.ID)
		var refused *fetch.RefusedError
		if !errors.As(err, &refused) || refused.Addr.String() != "127.0.0.1" {
			t.Errorf("delivery to loopback: err %v, want a refusal", err)
		}
		if n := len(rc.deliveries()); n != 0 {
			t.Errorf("loopback receiver got %d requests", n)
		}
	})
}
