package jobs

import (
	"context"
	"image"
	"image/color"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"fashiond/fetch"
	"fashiond/internal/pipelinetest"
	"fashiond/jobs/redistest"
	"fashiond/pipelines"
	"fashiond/spec"
	"fashiond/storage"
)

// backends are the two Redis implementations every table test runs on.
var backends = []struct {
	name  string
	start func(t testing.TB) string
}{
	{"redis-server", redistest.Start},
	{"miniredis", func(t testing.TB) string { return miniredis.RunT(t).Addr() }},
}

// forBackends runs f as a subtest per backend.
func forBackends(t *testing.T, f func(t *testing.T, addr string)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { f(t, b.start(t)) })
	}
}

func testLog() *slog.Logger {
	lvl := slog.LevelError
	if os.Getenv("JOBS_TEST_LOG") != "" {
		lvl = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))
}

// env is a service on one Redis with a local store served over HTTP and one
// API key.
type env struct {
	t       *testing.T
	addr    string
	svc     *Service
	store   *storage.Local
	cdn     *httptest.Server
	key     string
	owner   string
	credits int64
}

func loopbackClient() *http.Client {
	return fetch.NewClient(fetch.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, TotalTimeout: WebhookTimeout})
}

func newEnv(t *testing.T, addr string, o Options) *env {
	t.Helper()
	e := &env{t: t, addr: addr, credits: 100}
	var h http.Handler = http.NotFoundHandler()
	e.cdn = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	t.Cleanup(e.cdn.Close)
	st, err := storage.NewLocal(t.TempDir(), e.cdn.URL+"/cdn")
	if err != nil {
		t.Fatal(err)
	}
	e.store = st
	h = http.StripPrefix("/cdn", st.Handler())
	o.RedisURL = addr
	o.Store = st
	if o.JanitorInterval == 0 {
		o.JanitorInterval = -1 // tests call Sweep
	}
	if o.RetryDelay == nil {
		o.RetryDelay = func(int) time.Duration { return 10 * time.Millisecond }
	}
	if o.WebhookBackoff == nil {
		o.WebhookBackoff = []time.Duration{50 * time.Millisecond, 50 * time.Millisecond}
	}
	if o.WebhookClient == nil {
		o.WebhookClient = loopbackClient()
	}
	o.Log = testLog()
	svc, err := Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	e.svc = svc
	e.key, err = svc.CreateKey(context.Background(), "test", e.credits)
	if err != nil {
		t.Fatal(err)
	}
	e.owner = OwnerOf(e.key)
	return e
}

// worker starts a worker for the pipelines and stops it at the end.
func (e *env) worker(ps ...pipelines.Pipeline) *Worker {
	e.t.Helper()
	w, err := NewWorker(e.svc, pipelines.NewRegistry(ps...), pipelinetest.Loader{}, WorkerOptions{
		Concurrency: 2, ShutdownTimeout: 3 * time.Second, Log: testLog()})
	if err != nil {
		e.t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(w.Shutdown)
	return w
}

func (e *env) submit(model string, cost int, hook string) *Job {
	e.t.Helper()
	j, err := e.svc.Submit(context.Background(), SubmitRequest{Owner: e.owner, Model: model, Cost: cost,
		Inputs: spec.NewInputs(model), WebhookURL: hook})
	if err != nil {
		e.t.Fatalf("Submit(%s): %v", model, err)
	}
	return j
}

// wait polls the job until cond holds (20 s at most).
func (e *env) wait(id string, what string, cond func(*Job) bool) *Job {
	e.t.Helper()
	return e.waitFor(id, what, 20*time.Second, cond)
}

func (e *env) waitFor(id string, what string, limit time.Duration, cond func(*Job) bool) *Job {
	e.t.Helper()
	deadline := time.Now().Add(limit)
	var j *Job
	var err error
	for time.Now().Before(deadline) {
		j, err = e.svc.Get(context.Background(), e.owner, id)
		if err == nil && cond(j) {
			return j
		}
		time.Sleep(10 * time.Millisecond)
	}
	e.t.Fatalf("job %s: not %s within %s; last %+v err %v", id, what, limit, j, err)
	return nil
}

func (e *env) waitTerminal(id string) *Job {
	return e.wait(id, "terminal", func(j *Job) bool { return terminal(j.Status) })
}

func (e *env) balance() int64 {
	b, err := e.svc.Balance(context.Background(), e.owner)
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}

func (e *env) ledgerKinds() map[string]int {
	l, err := e.svc.Ledger(context.Background(), e.owner, 1000)
	if err != nil {
		e.t.Fatal(err)
	}
	m := map[string]int{}
	for _, x := range l {
		m[x.Kind]++
	}
	return m
}

// fetchURL GETs an output URL and returns its body and content type.
func fetchURL(t *testing.T, u string) (int, []byte, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp.Header.Get("Content-Type")
}

// gradient draws n images of w x h with a colour gradient (with an alpha
// ramp when alpha), reporting progress per image.
type gradient struct {
	name    string
	n, w, h int
	alpha   bool
	dataURI bool
	calls   atomic.Int32
}

func (g *gradient) Name() string { return g.name }
func (g *gradient) Run(ctx context.Context, req *pipelines.Request) (*pipelines.Result, error) {
	g.calls.Add(1)
	var res pipelines.Result
	for i := 0; i < g.n; i++ {
		img := image.NewNRGBA(image.Rect(0, 0, g.w, g.h))
		for y := 0; y < g.h; y++ {
			for x := 0; x < g.w; x++ {
				a := uint8(255)
				if g.alpha {
					a = uint8(x * 255 / g.w)
				}
				img.SetNRGBA(x, y, color.NRGBA{uint8(x * 255 / g.w), uint8(y * 255 / g.h), uint8(40 * i), a})
			}
		}
		res.Outputs = append(res.Outputs, pipelines.Output{Image: img, Path: "reference", Method: "gradient",
			Notes: []string{"test double"}, DataURI: g.dataURI})
		req.Progress("draw", float64(i+1)/float64(g.n), "")
	}
	return &res, nil
}

// video returns a minimal MP4 header (test double for image-to-video).
type video struct{}

func (video) Name() string { return spec.ModelImageToVideo }
func (video) Run(ctx context.Context, req *pipelines.Request) (*pipelines.Result, error) {
	mp4 := append([]byte{0, 0, 0, 0x18}, []byte("ftypisom\x00\x00\x02\x00isomiso2")...)
	return &pipelines.Result{Outputs: []pipelines.Output{{Video: mp4, Path: "reference", Method: "test"}}}, nil
}

// failing fails with msg; transient failures succeed from attempt okFrom
// (0: never).
type failing struct {
	name      string
	msg       string
	transient bool
	okFrom    int32
	calls     atomic.Int32
}

func (f *failing) Name() string { return f.name }
func (f *failing) Run(ctx context.Context, req *pipelines.Request) (*pipelines.Result, error) {
	n := f.calls.Add(1)
	if f.okFrom > 0 && n >= f.okFrom {
		return (&gradient{n: 1, w: 8, h: 8}).Run(ctx, req)
	}
	if f.transient {
		return nil, pipelines.Transientf("%s", f.msg)
	}
	return nil, pipelines.Failf("%s", f.msg)
}

// blocking reports progress, then waits for release (or its context) and
// returns n images.
type blocking struct {
	name    string
	n       int
	started chan string
	release chan struct{}
	once    sync.Once
}

func newBlocking(name string, n int) *blocking {
	return &blocking{name: name, n: n, started: make(chan string, 16), release: make(chan struct{})}
}

func (b *blocking) Name() string { return b.name }
func (b *blocking) Release()     { b.once.Do(func() { close(b.release) }) }
func (b *blocking) Run(ctx context.Context, req *pipelines.Request) (*pipelines.Result, error) {
	req.Progress("blocked", 0.5, "waiting for release")
	b.started <- req.JobID
	select {
	case <-b.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return (&gradient{n: b.n, w: 16, h: 16}).Run(ctx, req)
}

// noop returns one tiny image at once and records when each job started.
type noop struct {
	name    string
	started chan time.Time
}

func (p *noop) Name() string { return p.name }
func (p *noop) Run(ctx context.Context, req *pipelines.Request) (*pipelines.Result, error) {
	p.started <- time.Now()
	img := image.NewGray(image.Rect(0, 0, 2, 2))
	return &pipelines.Result{Outputs: []pipelines.Output{{Image: img}}}, nil
}
