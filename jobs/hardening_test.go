package jobs

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"image"
	"image/png"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"fashiond/fetch"
	"fashiond/jobs/internal/rdb"
	"fashiond/pipelines"
	"fashiond/spec"
	"fashiond/storage"
)

// echo loads the first image input and returns it (so a test sees what the
// worker read from the stored inputs).
type echo struct {
	name string
	fail string // when set, the job fails with this message after loading
	seen chan image.Rectangle
}

func (p *echo) Name() string { return p.name }
func (p *echo) Run(ctx context.Context, req *pipelines.Request) (*pipelines.Result, error) {
	first := spec.Images(req.Inputs)[0]
	img, err := req.Images.Load(ctx, first.Field, *first.Ref)
	if err != nil {
		return nil, err
	}
	p.seen <- img.Bounds()
	if p.fail != "" {
		return nil, pipelines.Failf("%s", p.fail)
	}
	return &pipelines.Result{Outputs: []pipelines.Output{{Image: img}}}, nil
}

// pngDataURI is a w x h PNG of noise (incompressible) as a data URI.
func pngDataURI(t testing.TB, w, h int) string {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, w, h))
	x := uint32(1)
	for i := range img.Pix {
		x = x*1664525 + 1013904223
		img.Pix[i] = byte(x >> 24)
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(b.Bytes())
}

func (e *env) submitInputs(model string, inputs string) (*Job, error) {
	e.t.Helper()
	in, err := spec.DecodeInputs(model, json.RawMessage(inputs))
	if err != nil {
		e.t.Fatal(err)
	}
	return e.svc.Submit(context.Background(), SubmitRequest{Owner: e.owner, Model: model, Cost: 1, Inputs: in})
}

// personInputs are inputs of tryon or prompt-tryon with the person image
// uri.
func personInputs(model, uri string) string {
	if model == spec.ModelPromptTryOn {
		return `{"personImage":"` + uri + `","prompt":"a red top"}`
	}
	return `{"personImage":"` + uri + `","garmentImage":"https://example.com/g.jpg"}`
}

func (e *env) inputsDir(id string) string {
	return filepath.Join(e.store.Dir(), "private", "inputs", id)
}

// TestInputsLeaveRedis (defect 2): a data URI image goes to the private
// blob store at submission; the job record keeps a short reference; the
// worker loads the same image; the blobs and the quota are released when
// the job ends, succeeded or failed; the CDN never serves them.
func TestInputsLeaveRedis(t *testing.T) {
	forBackends(t, func(t *testing.T, addr string) {
		e := newEnv(t, addr, Options{})
		ok := &echo{name: spec.ModelTryOn, seen: make(chan image.Rectangle, 4)}
		bad := &echo{name: spec.ModelPromptTryOn, fail: "no person found", seen: make(chan image.Rectangle, 4)}
		e.worker(ok, bad)
		ctx := context.Background()
		uri := pngDataURI(t, 300, 200)
		for _, p := range []*echo{ok, bad} {
			j, err := e.submitInputs(p.name, personInputs(p.name, uri))
			if err != nil {
				t.Fatal(err)
			}
			stored, _ := e.svc.rdb.HGet(ctx, rdb.KeyJob(j.ID), rdb.FieldInputs).Result()
			if terminal(e.mustGet(j.ID).Status) {
				t.Fatal("job ended before the check")
			}
			if len(stored) > 300 || !strings.Contains(stored, `"blob:private/inputs/`+j.ID+`/`) || strings.Contains(stored, "base64") {
				t.Fatalf("job record inputs = %.200q, want a short blob reference", stored)
			}
			if got := <-p.seen; got != image.Rect(0, 0, 300, 200) {
				t.Fatalf("worker loaded %v", got)
			}
			e.waitTerminal(j.ID)
			// The worker drops the inputs right after the terminal transition.
			eventually(t, p.name+": inputs folder removed", func() bool {
				_, err := os.Stat(e.inputsDir(j.ID))
				return os.IsNotExist(err)
			})
			if v, _ := e.svc.rdb.HGet(ctx, rdb.KeyJob(j.ID), rdb.FieldInputs).Result(); v != "" {
				t.Errorf("%s: inputs still in the job record after the end", p.name)
			}
		}
		eventually(t, "input quota released", func() bool {
			n, _ := e.svc.rdb.Get(ctx, rdb.KeyInputBytes(e.owner)).Int64()
			return n == 0
		})
		if code, _, _ := fetchURL(t, e.cdn.URL+"/cdn/private/inputs/x/y.png"); code != http.StatusNotFound {
			t.Errorf("CDN served a private key: %d", code)
		}
	})
}

// TestInputQuota: a submission over the key's stored-input quota is
// refused with nothing charged and nothing left on disk.
func TestInputQuota(t *testing.T) {
	forBackends(t, func(t *testing.T, addr string) {
		uri := pngDataURI(t, 400, 400) // ~160 kB
		e := newEnv(t, addr, Options{InputQuota: 250_000})
		p := newBlocking(spec.ModelTryOn, 1)
		defer p.Release()
		e.worker(p)
		first, err := e.submitInputs(spec.ModelTryOn, personInputs(spec.ModelTryOn, uri))
		if err != nil {
			t.Fatal(err)
		}
		_, err = e.submitInputs(spec.ModelTryOn, personInputs(spec.ModelTryOn, uri))
		var qe *QuotaError
		if !errors.As(err, &qe) || !errors.Is(err, ErrInputQuota) || qe.Quota != 250_000 {
			t.Fatalf("second submission: %v, want a quota refusal", err)
		}
		if b := e.balance(); b != e.credits-1 {
			t.Errorf("balance %d, want %d (the refused job charged nothing)", b, e.credits-1)
		}
		ents, _ := os.ReadDir(filepath.Join(e.store.Dir(), "private", "inputs"))
		if len(ents) != 1 || ents[0].Name() != first.ID {
			t.Errorf("inputs folders %v, want only %s", ents, first.ID)
		}
	})
}

// TestGarbageSubmissionsRedisMemory (defect 2, the reported case): five
// submissions of two multi-megabyte garbage images that all fail leave
// Redis' memory where it was (before: every byte stayed for the retention).
func TestGarbageSubmissionsRedisMemory(t *testing.T) {
	addr := backends[0].start(t)
	e := newEnv(t, addr, Options{})
	e.worker(&failing{name: spec.ModelTryOn, msg: "inputs.personImage: content is not a JPEG, PNG or WEBP image"})
	ctx := context.Background()
	used := func() int64 {
		info, _ := e.svc.rdb.Info(ctx, "memory").Result()
		m := regexp.MustCompile(`used_memory:(\d+)`).FindStringSubmatch(info)
		n, _ := strconv.ParseInt(m[1], 10, 64)
		return n
	}
	before := used()
	garbage := "data:image/jpeg;base64," + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0x5a}, 4<<20))
	var ids []string
	for i := 0; i < 5; i++ {
		j, err := e.submitInputs(spec.ModelTryOn, `{"personImage":"`+garbage+`","garmentImage":"`+garbage+`"}`)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.ID)
	}
	for _, id := range ids {
		e.waitTerminal(id)
	}
	after := used()
	t.Logf("redis used_memory %d -> %d bytes after 5 x 2 x 4 MiB garbage images", before, after)
	if after-before > 1<<20 {
		t.Errorf("redis grew by %d bytes, want under 1 MiB", after-before)
	}
	if b := e.balance(); b != e.credits {
		t.Errorf("balance %d, want %d (all refunded)", b, e.credits)
	}
}

func (e *env) mustGet(id string) *Job {
	e.t.Helper()
	j, err := e.svc.Get(context.Background(), e.owner, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return j
}

// TestPerKeyWebhookSecrets (defect 5): each key's webhooks verify with its
// own secret and not with another key's; a rotation sends both signatures
// during the overlap and only the new one after it.
func TestPerKeyWebhookSecrets(t *testing.T) {
	forBackends(t, func(t *testing.T, addr string) {
		e := newEnv(t, addr, Options{})
		ctx := context.Background()
		rc := &receiver{}
		hook := httptest.NewServer(rc)
		defer hook.Close()
		p := newBlocking("block", 1)
		p.Release()
		e.worker(p)
		other, err := e.svc.CreateKey(ctx, "other", 10)
		if err != nil {
			t.Fatal(err)
		}
		id := func(raw string) string { return OwnerOf(raw)[:12] }
		mine, err := e.svc.KeyWebhookSecret(ctx, id(e.key), false, 0)
		if err != nil {
			t.Fatal(err)
		}
		theirs, _ := e.svc.KeyWebhookSecret(ctx, id(other), false, 0)
		if mine == theirs || !strings.HasPrefix(mine, "whsec_") || mine == e.svc.WebhookSecret() {
			t.Fatalf("secrets not per key: %q %q", mine, theirs)
		}
		if again, _ := e.svc.KeyWebhookSecret(ctx, id(e.key), false, 0); again != mine {
			t.Fatal("the key's secret changed without a rotation")
		}
		deliver := func() delivery {
			n := len(rc.deliveries())
			j := e.submit("block", 1, hook.URL)
			e.waitTerminal(j.ID)
			for deadline := time.Now().Add(10 * time.Second); len(rc.deliveries()) == n && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
			return rc.deliveries()[n]
		}
		d := deliver()
		if err := Verify(mine, d.h, d.body, time.Minute); err != nil {
			t.Errorf("own secret: %v", err)
		}
		if err := Verify(theirs, d.h, d.body, time.Minute); err == nil {
			t.Error("another key's secret verifies this key's webhook")
		}
		fresh, err := e.svc.KeyWebhookSecret(ctx, id(e.key), true, time.Hour)
		if err != nil || fresh == mine {
			t.Fatalf("rotate: %q %v", fresh, err)
		}
		d = deliver()
		for _, s := range []string{mine, fresh} {
			if err := Verify(s, d.h, d.body, time.Minute); err != nil {
				t.Errorf("during the overlap: %v", err)
			}
		}
		if _, err := e.svc.KeyWebhookSecret(ctx, id(e.key), true, time.Millisecond); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
		d = deliver()
		if err := Verify(fresh, d.h, d.body, time.Minute); err == nil {
			t.Error("a secret rotated out (overlap over) still verifies")
		}
	})
}

// TestWebhookFailures (defects 7 and 8): a failing delivery's error names
// the URL without user info, query or fragment; a 410 answer and a refused
// address are permanent (no retry).
func TestWebhookFailures(t *testing.T) {
	forBackends(t, func(t *testing.T, addr string) {
		e := newEnv(t, addr, Options{})
		rc := &receiver{codes: []int{410, 410, 410}}
		hook := httptest.NewServer(rc)
		defer hook.Close()
		p := newBlocking("block", 1)
		p.Release()
		e.worker(p)
		ctx := context.Background()

		dead := closedPort(t)
		j := e.submit("block", 1, "http://user:hunter2@"+dead+"/hook?token=SECRET-TOKEN#frag")
		e.waitTerminal(j.ID)
		err := e.svc.deliverWebhook(ctx, j.ID)
		if err == nil {
			t.Fatal("delivery to a closed port succeeded")
		}
		for _, leak := range []string{"SECRET-TOKEN", "hunter2", "frag", "user"} {
			if strings.Contains(err.Error(), leak) {
				t.Errorf("error %q contains %q", err, leak)
			}
		}
		if !strings.Contains(err.Error(), "http://"+dead+"/hook") {
			t.Errorf("error %q does not name the redacted URL", err)
		}

		gone := e.submit("block", 1, hook.URL)
		e.waitTerminal(gone.ID)
		// The webhook server polls its queue every 500 ms: wait for the
		// first delivery, then long enough for a retry (50 ms backoff).
		eventually(t, "the first delivery", func() bool { return len(rc.deliveries()) > 0 })
		time.Sleep(time.Second)
		if n := len(rc.deliveries()); n != 1 {
			t.Errorf("410 receiver got %d deliveries, want 1", n)
		}
		strict := newEnv(t, addr, Options{WebhookClient: fetch.NewClient(fetch.Policy{TotalTimeout: WebhookTimeout})})
		if err := strict.svc.deliverWebhook(ctx, gone.ID); !errors.Is(err, asynq.SkipRetry) {
			t.Errorf("refused address: %v, want a permanent failure", err)
		}
	})
}

// closedPort returns the address of a loopback port with nothing
// listening.
func closedPort(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.NotFoundHandler())
	a := srv.Listener.Addr().String()
	srv.Close()
	return a
}

// TestCrashAccounting (defect 4): an attempt that never ended counts as a
// crash, as the job's own only when its worker ran nothing else; the job
// task's asynq budget no longer ends a job after two lost attempts; a job
// with MaxCrashes own crashes is failed with a clear reason, refunded, and
// a job that shared its crashed workers runs on.
func TestCrashAccounting(t *testing.T) {
	forBackends(t, func(t *testing.T, addr string) {
		e := newEnv(t, addr, Options{MaxCrashes: 2})
		ctx := context.Background()
		advertise := func() { e.svc.rdb.ZAdd(ctx, rdb.KeyServed("work"), redisZ(float64(nowMS()+60_000), "fake")) }
		advertise()
		poison := e.submit("work", 2, "")
		healthy := e.submit("work", 3, "")
		if info, err := e.svc.insp.GetTaskInfo(rdb.QueueName("work"), healthy.ID); err != nil || info.MaxRetry != taskMaxRetry {
			t.Fatalf("task max retry %+v %v, want %d", info, err, taskMaxRetry)
		}
		// poison died alone on two workers; healthy shared a dead worker
		// with another job three times.
		for i, w := range []string{"dead-1", "dead-2"} {
			e.svc.rdb.SAdd(ctx, rdb.KeyRunning(w), poison.ID)
			e.svc.rdb.HSet(ctx, rdb.KeyJob(poison.ID), "running", w)
			if i == 0 {
				wk := &Worker{svc: e.svc, id: "probe", log: testLog()}
				if ok, own, err := wk.claim(ctx, poison.ID, 2); !ok || own != 1 || err != nil {
					t.Fatalf("claim after a lone crash: %v %d %v", ok, own, err)
				}
				wk.endAttempt(poison.ID)
			}
		}
		for _, w := range []string{"dead-3", "dead-4", "dead-5"} {
			e.svc.rdb.SAdd(ctx, rdb.KeyRunning(w), healthy.ID, "some-other-job")
			e.svc.rdb.HSet(ctx, rdb.KeyJob(healthy.ID), "running", w)
			wk := &Worker{svc: e.svc, id: "probe", log: testLog()}
			if ok, own, err := wk.claim(ctx, healthy.ID, 2); !ok || own != 0 || err != nil {
				t.Fatalf("claim after a shared crash: %v %d %v", ok, own, err)
			}
		}
		e.svc.rdb.HSet(ctx, rdb.KeyJob(healthy.ID), "running", "dead-5")
		e.svc.rdb.ZRem(ctx, rdb.KeyServed("work"), "fake")
		e.worker(&gradient{name: "work", n: 1, w: 4, h: 4})
		pj := e.waitTerminal(poison.ID)
		if pj.Status != StatusError || pj.Error == nil || !strings.Contains(*pj.Error, "stopped the worker running it 2 times") {
			t.Errorf("poison job: %s %v", pj.Status, pj.Error)
		}
		if hj := e.waitTerminal(healthy.ID); hj.Status != StatusSucceeded {
			t.Errorf("healthy job after 4 shared crashes: %s %v", hj.Status, hj.Error)
		}
		if b := e.balance(); b != e.credits-3 {
			t.Errorf("balance %d, want %d (poison refunded, healthy charged)", b, e.credits-3)
		}
		if v, _ := e.svc.rdb.HGet(ctx, rdb.KeyJob(healthy.ID), "crashes").Int(); v != 4 {
			t.Errorf("healthy job crashes = %d, want 4", v)
		}
	})
}

// TestStudioOpaquePath (defect 6): a saved model's URL carries no part of
// the owner id (the key's SHA-256), and models saved under the old path
// still load.
func TestStudioOpaquePath(t *testing.T) {
	forBackends(t, func(t *testing.T, addr string) {
		e := newEnv(t, addr, Options{})
		ctx := context.Background()
		img := image.NewGray(image.Rect(0, 0, 4, 4))
		m, err := e.svc.Studio().Save(ctx, e.owner, pipelines.SavedModel{Name: "a"}, img)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+8 <= len(e.owner); i += 4 {
			if strings.Contains(m.ImageURL, e.owner[i:i+8]) {
				t.Fatalf("image URL %s contains owner id digits %s", m.ImageURL, e.owner[i:i+8])
			}
		}
		if !strings.Contains(m.ImageURL, "/studio/"+e.svc.OpaqueOwner(e.owner)+"/") {
			t.Fatalf("image URL %s", m.ImageURL)
		}
		if _, got, err := e.svc.Studio().Get(ctx, e.owner, m.ID); err != nil || got.Bounds() != img.Bounds() {
			t.Fatalf("get: %v", err)
		}
		// A new webhook secret does not move saved models' files.
		other, err := Open(ctx, Options{RedisURL: addr, Store: e.store, JanitorInterval: -1, Log: testLog(),
			WebhookSecret: "whsec_" + base64.StdEncoding.EncodeToString([]byte("another secret of 32 bytes......"))})
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		if other.OpaqueOwner(e.owner) != e.svc.OpaqueOwner(e.owner) {
			t.Fatal("the opaque owner id changed with the webhook secret")
		}
		// A model stored before opaque ids: only the legacy file exists.
		legacy := pipelines.SavedModel{ID: "33333333-3333-4333-8333-333333333333", Name: "old"}
		rec, _ := json.Marshal(legacy)
		e.svc.rdb.HSet(ctx, rdb.KeyStudio(e.owner), legacy.ID, rec)
		var buf bytes.Buffer
		png.Encode(&buf, img)
		if err := e.store.Put(ctx, legacyStudioKey(e.owner, legacy.ID), "image/png", &buf); err != nil {
			t.Fatal(err)
		}
		if _, _, err := e.svc.Studio().Get(ctx, e.owner, legacy.ID); err != nil {
			t.Fatalf("legacy model: %v", err)
		}
	})
}

// FuzzSpoolInputs: for any inputs of a model, spoolInputs turns every data
// URI image into a blob reference of the job, stores its bytes, and
// changes nothing else.
func FuzzSpoolInputs(f *testing.F) {
	f.Add(spec.ModelTryOn, `{"personImage":"data:image/png;base64,iVBORw0KGgo=","garmentImage":"https://x.test/g.png"}`)
	f.Add(spec.ModelPoseControl, `{"modelImage":"u","poses":[{"type":"template","cdnUrl":"data:image/jpeg;base64,/9j/"},{"type":"custom","text":"data: not an image"}]}`)
	f.Add(spec.ModelPromptTryOn, `{"personImage":"DATA:image/png;base64,AAAA","prompt":"data:image/png;base64,AAAA"}`)
	st, err := storage.NewLocal(f.TempDir(), "http://cdn.test")
	if err != nil {
		f.Fatal(err)
	}
	s := &Service{store: st}
	const id = "00000000-0000-4000-8000-000000000000"
	f.Fuzz(func(t *testing.T, model, raw string) {
		in, err := spec.DecodeInputs(model, json.RawMessage(raw))
		if err != nil {
			return
		}
		before, _ := spec.Encode(in)
		was := map[string]string{}
		for _, im := range spec.Images(in) {
			was[im.Field] = *im.Ref
		}
		n, err := s.spoolInputs(context.Background(), id, in)
		if err != nil {
			return // an invalid data URI payload: the API refuses those before
		}
		var total int64
		for _, im := range spec.Images(in) {
			ref, old := *im.Ref, was[im.Field]
			if !fetch.IsDataURI(old) {
				if ref != old {
					t.Fatalf("%s: %q became %q", im.Field, old, ref)
				}
				continue
			}
			key, ok := strings.CutPrefix(ref, blobRefPrefix+inputsFolder(id))
			if !ok {
				t.Fatalf("%s: data URI became %q, want a blob reference of the job", im.Field, ref)
			}
			fi, err := os.Stat(filepath.Join(st.Dir(), inputsFolder(id), key))
			if err != nil {
				t.Fatalf("%s: %v", im.Field, err)
			}
			total += fi.Size()
		}
		if total != n {
			t.Fatalf("spool reported %d bytes, the blobs hold %d", n, total)
		}
		after, _ := spec.Encode(in)
		if len(was) == 0 && string(before) != string(after) {
			t.Fatalf("inputs without images changed: %s -> %s", before, after)
		}
	})
}

// eventually fails the test when cond does not hold within 5 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Errorf("not within 5 s: %s", what)
			return
		}
	}
}

// TestEvictionWarning: an external Redis that may evict keys is reported
// at start (job records carry a TTL: volatile-* policies would drop them).
func TestEvictionWarning(t *testing.T) {
	addr := backends[0].start(t)
	for policy, warn := range map[string]bool{"volatile-lru": true, "allkeys-lru": true, "noeviction": false} {
		e := newEnv(t, addr, Options{})
		if err := e.svc.rdb.ConfigSet(context.Background(), "maxmemory-policy", policy).Err(); err != nil {
			t.Fatal(err)
		}
		var logs bytes.Buffer
		svc, err := Open(context.Background(), Options{RedisURL: addr, Store: e.store, JanitorInterval: -1,
			Log: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		svc.Close()
		if got := strings.Contains(logs.String(), "maxmemory-policy="+policy); got != warn {
			t.Errorf("policy %s: warned %v, want %v (%s)", policy, got, warn, logs.String())
		}
	}
}
