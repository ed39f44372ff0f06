// Package api is the HTTP surface of fashiond: POST /v1/run, GET
// /v1/status/{id}, credits, models and the studio, health checks and the
// CDN mount. It authenticates API keys, validates each model's inputs
// against the interface spec, applies defaults, computes the credit cost and
// hands the job to a jobs.Backend. It has no cgo.
package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"fashiond/fetch"
	"fashiond/jobs"
	"fashiond/pipelines"
	"fashiond/playground"
	"fashiond/spec"
)

// Options configures the handler.
// DefaultMaxBodySize is the default of Options.MaxBodyBytes.
const DefaultMaxBodySize = 100 << 20

type Options struct {
	// Backend is the job system (required).
	Backend jobs.Backend
	// CDN serves result files; mounted at /cdn/ as is (no prefix
	// stripping), without authentication. nil: /cdn/ answers 404.
	CDN http.Handler
	// MaxBodyBytes bounds a POST /v1/run body (default 100 MiB: two 25 MB
	// images as base64 fit).
	MaxBodyBytes int64
	// FetchPolicy supplies the image byte limit for data URIs (MaxBytes,
	// default 25 MB) and the allow list for literal-address URLs.
	FetchPolicy fetch.Policy
	// Log receives request and panic logs (never API keys). nil: discard.
	Log *slog.Logger
	// Version is reported by /healthz.
	Version string
	// Limits are the connection and body limits (timeouts, caps); zero
	// fields take their defaults. NewServer applies the server-wide ones.
	Limits Limits
	// StreamHeartbeat is the interval of the ": ping" comments of a status
	// stream (DefaultStreamHeartbeat).
	StreamHeartbeat time.Duration
}

// Response headers.
const (
	HeaderCreditsUsed      = "X-Credits-Used"
	HeaderFashnCreditsUsed = "X-Fashn-Credits-Used" // read by the fashn SDK's subscribe
)

type server struct {
	o      Options
	log    *slog.Logger
	limits Limits
	gate   *bodyGate
}

type ctxKey struct{}

// New returns the service's HTTP handler.
func New(o Options) http.Handler {
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodySize
	}
	if o.StreamHeartbeat <= 0 {
		o.StreamHeartbeat = DefaultStreamHeartbeat
	}
	if o.FetchPolicy.MaxBytes <= 0 {
		o.FetchPolicy.MaxBytes = fetch.DefaultMaxBytes
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	lim := o.Limits.withDefaults()
	s := &server{o: o, log: log, limits: lim, gate: newBodyGate(lim)}
	mux := http.NewServeMux()
	route := func(pattern string, methods string, h http.HandlerFunc) {
		mux.HandleFunc(pattern, h)
		// The method-less pattern catches other methods with a JSON 405.
		path := pattern[strings.IndexByte(pattern, ' ')+1:]
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", methods)
			writeError(w, http.StatusMethodNotAllowed, CodeMethodNotAllowed, "", fmt.Sprintf("%s %s is not supported; use %s", r.Method, path, methods))
		})
	}
	route("POST /v1/run", "POST", s.auth(s.run))
	route("GET /v1/status/{id}", "GET, HEAD", s.auth(s.status))
	route("POST /v1/cancel/{id}", "POST", s.auth(s.cancel))
	route("GET /v1/jobs", "GET, HEAD", s.auth(s.listJobs))
	route("DELETE /v1/jobs/{id}", "DELETE", s.auth(s.deleteJob))
	route("GET /v1/credits", "GET, HEAD", s.auth(s.credits))
	route("GET /v1/models", "GET, HEAD", s.auth(s.models))
	route("GET /v1/models/saved", "GET, HEAD", s.auth(s.listSaved))
	route("GET /v1/models/saved/{id}", "GET, HEAD", s.auth(s.getSaved))
	route("GET /healthz", "GET, HEAD", s.healthz)
	route("GET /readyz", "GET, HEAD", s.readyz)
	route("GET /openapi.json", "GET, HEAD", s.openapi(o))
	route("GET /docs", "GET, HEAD", serveDocs)
	mux.Handle("GET /docs/assets/", docsAssets())
	if o.CDN != nil {
		mux.Handle("/cdn/", o.CDN)
	}
	notFound := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, CodeNotFound, "", fmt.Sprintf("no endpoint %s %s", r.Method, clip(r.URL.Path, 200)))
	})
	// The playground page at exactly "/", its files under /playground/.
	route("GET /{$}", "GET, HEAD", playground.ServePage)
	mux.Handle("GET "+playground.AssetsPrefix, playground.Assets(notFound))
	mux.Handle("/", notFound)
	return s.recover(s.guardBody(mux))
}

// ---- middleware ----

type recorder struct {
	http.ResponseWriter
	status int
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// recover turns a handler panic into a JSON 500 (when nothing was written
// yet) and logs it; it also logs each request at debug level.
func (s *server) recover(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &recorder{ResponseWriter: w}
		start := time.Now()
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("handler panic", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				if rec.status == 0 {
					if r.Method == http.MethodPost {
						// The job may or may not exist: the SDK must not resubmit.
						w.Header().Set("X-Should-Retry", "false")
					}
					writeError(rec, http.StatusInternalServerError, CodeInternal, "", "internal error; it was logged")
				}
			}
			s.log.Debug("request", "method", r.Method, "path", r.URL.Path, "status", rec.status, "duration_ms", time.Since(start).Milliseconds())
		}()
		next.ServeHTTP(rec, r)
	})
}

// APIKey extracts the API key from Authorization: Bearer <key> or
// x-api-key: <key>. ok is false when neither is present; err is set for a
// malformed Authorization header.
func APIKey(r *http.Request) (key string, ok bool, err error) {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, tok, _ := strings.Cut(strings.TrimSpace(h), " ")
		if !strings.EqualFold(scheme, "Bearer") {
			return "", true, errors.New("the Authorization header must use the Bearer scheme: Authorization: Bearer <API_KEY>")
		}
		tok = strings.TrimSpace(tok)
		if tok == "" {
			return "", true, errors.New("the Authorization header holds no key: Authorization: Bearer <API_KEY>")
		}
		return tok, true, nil
	}
	if k := strings.TrimSpace(r.Header.Get("X-Api-Key")); k != "" {
		return k, true, nil
	}
	return "", false, nil
}

func (s *server) auth(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		key, ok, err := APIKey(r)
		if !ok {
			writeError(w, http.StatusUnauthorized, CodeUnauthorized, "", "an API key is required: send Authorization: Bearer <API_KEY> or x-api-key: <API_KEY>")
			return
		}
		if err != nil {
			writeError(w, http.StatusUnauthorized, CodeUnauthorized, "", err.Error())
			return
		}
		owner, err := s.o.Backend.Authenticate(r.Context(), key)
		switch {
		case errors.Is(err, jobs.ErrUnauthorized):
			writeError(w, http.StatusUnauthorized, CodeUnauthorized, "", "the API key is not valid")
			return
		case err != nil:
			s.backendError(w, r, "authenticate", err)
			return
		case owner == "":
			writeError(w, http.StatusUnauthorized, CodeUnauthorized, "", "the API key is not valid")
			return
		}
		if !s.rateLimit(w, r, owner) {
			return
		}
		next(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, owner)))
	}
}

// Owner returns the authenticated owner id of a request handled by New.
func Owner(ctx context.Context) string {
	s, _ := ctx.Value(ctxKey{}).(string)
	return s
}

func (s *server) backendError(w http.ResponseWriter, r *http.Request, op string, err error) {
	s.log.Error("backend error", "op", op, "method", r.Method, "path", r.URL.Path, "err", err)
	if errors.Is(err, jobs.ErrNotReplicated) {
		notReplicated(w, r)
		return
	}
	if re := (*jobs.ReplicasError)(nil); errors.As(err, &re) {
		replicasOffline(w, re)
		return
	}
	if r.Method == http.MethodPost {
		w.Header().Set("X-Should-Retry", "false")
	}
	// A Redis that did not answer in time (a restart, a failover, a
	// machine too loaded to serve it) is usually back within seconds.
	w.Header().Set("Retry-After", strconv.Itoa(backendRetryAfter))
	writeError(w, http.StatusServiceUnavailable, CodeBackendUnavailable, "", "the job store is unavailable; try again shortly")
}

// backendRetryAfter is the Retry-After (seconds) of a request the job
// store could not serve (unreachable, or no answer in time).
const backendRetryAfter = 1

// notReplicated answers a write the Redis master took but too few replicas
// confirmed (FASHIOND_REDIS_URL's wait_replicas): it may or may not survive
// a failover, so a retry is safe only with the same Idempotency-Key, which
// returns the job if it survived and submits it once if it did not.
func notReplicated(w http.ResponseWriter, r *http.Request) {
	retry := r.Method != http.MethodPost || r.Header.Get("Idempotency-Key") != ""
	w.Header().Set("X-Should-Retry", strconv.FormatBool(retry))
	w.Header().Set("Retry-After", "1")
	msg := "the request was written but not yet confirmed by the job store's replicas; retry it with the same Idempotency-Key to get its result exactly once"
	if r.Method == http.MethodPost && !retry {
		msg = "the request was written but not yet confirmed by the job store's replicas; it may or may not have taken effect (check GET /v1/jobs before submitting again; send an Idempotency-Key to make retries safe)"
	}
	writeError(w, http.StatusServiceUnavailable, CodeBackendUnavailable, "", msg)
}

// replicasOfflineRetryAfter is the Retry-After (seconds) of a request
// refused because the job store's master has too few online replicas (a
// failover's replica takes seconds to tens of seconds to resynchronise).
const replicasOfflineRetryAfter = 5

// replicasOffline answers a write refused before anything was written
// because the Redis master has fewer online replicas than wait_replicas
// requires (jobs.ErrReplicasOffline): any retry is safe.
func replicasOffline(w http.ResponseWriter, re *jobs.ReplicasError) {
	w.Header().Set("X-Should-Retry", "true")
	w.Header().Set("Retry-After", strconv.Itoa(replicasOfflineRetryAfter))
	writeError(w, http.StatusServiceUnavailable, CodeBackendUnavailable, "", fmt.Sprintf(
		"nothing was written: the job store is degraded, its Redis master has %d of the %d online replicas needed to confirm writes (a failover or a replica's resynchronisation is under way); retry in a few seconds",
		re.Online, re.Required))
}

// ---- handlers ----

var runKeys = []string{"inputs", "model_name", "webhook_url"}

// sdkPollKeys are the fashn SDK's subscribe() polling options, which it
// sends inside the POST /v1/run body; they are accepted and ignored.
var sdkPollKeys = []string{"pollInterval", "timeout", "maxRetries"}

func (s *server) run(w http.ResponseWriter, r *http.Request) {
	release, ok := s.admitRun(w, r)
	if !ok {
		return
	}
	defer release()
	idemKey, err := idempotencyKey(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, CodeInvalidIdempotencyKey, HeaderIdempotencyKey, err.Error())
		return
	}
	req, norm, cost, ok := s.readRun(w, r)
	if !ok {
		return
	}
	owner := Owner(r.Context())
	if !s.checkRunRefs(w, r, owner, req, norm) {
		return
	}
	sub := jobs.SubmitRequest{Owner: owner, Model: req.model, Inputs: norm, Cost: cost, WebhookURL: req.webhook}
	if idemKey != "" {
		canonical, err := spec.Encode(norm)
		if err != nil {
			s.backendError(w, r, "encode the inputs", err)
			return
		}
		sub.IdempotencyKey = idemKey
		sub.Fingerprint = jobs.Fingerprint([]byte(req.model), canonical, []byte(req.webhook))
	}
	job, err := s.o.Backend.Submit(r.Context(), sub)
	if s.submitError(w, err) || s.submitRefused(w, r, err, job, req.model, cost) {
		return
	}
	if job.Replayed {
		w.Header().Set(HeaderIdempotentReplayed, "true")
	}
	setCredits(w, job)
	writeJSON(w, spec.SubmitStatus(req.model), wireJob(job))
}

// admitRun checks a POST /v1/run's Content-Type and declared length and
// takes a place at the large-body gate; it answers the request itself
// (415, 413 or 503 busy) and returns false when the request goes no
// further. The caller runs release when done.
func (s *server) admitRun(w http.ResponseWriter, r *http.Request) (release func(), ok bool) {
	if e := checkJSONContentType(r.Header.Get("Content-Type")); e != "" {
		writeError(w, http.StatusUnsupportedMediaType, CodeUnsupportedMediaType, "", e)
		return nil, false
	}
	if r.ContentLength > s.o.MaxBodyBytes {
		s.tooLarge(w)
		return nil, false
	}
	release, ok = s.gate.enter(r)
	if !ok {
		w.Header().Set("Retry-After", strconv.Itoa(busyRetryAfter))
		writeError(w, http.StatusServiceUnavailable, CodeBusy, "", "too many large request bodies are being received right now; nothing was submitted, try again shortly")
		return nil, false
	}
	return release, true
}

// readRun reads and validates a POST /v1/run body: the request's top-level
// members, then the model's inputs, normalised, with the job's cost. It
// answers the request itself (a body error or a 400) and returns false
// when the body is not acceptable.
func (s *server) readRun(w http.ResponseWriter, r *http.Request) (runRequest, spec.Inputs, int, bool) {
	// Re-armed after the large-body gate (guardBody armed it on arrival),
	// so a body that waited for a slot keeps its whole deadline.
	s.bodyDeadline(w, r)
	body, err := readBody(w, r, s.o.MaxBodyBytes, maxStringLen(s.o.FetchPolicy.MaxBytes))
	if err != nil {
		s.bodyReadError(w, err)
		return runRequest{}, nil, 0, false
	}
	pb, ve, err := readRunBody(body, s.o.FetchPolicy.MaxBytes)
	if err != nil {
		s.bodyReadError(w, err)
		return runRequest{}, nil, 0, false
	}
	req := runRequest{}
	if ve == nil {
		req, ve = runFromBody(pb, r.URL.Query())
	}
	if ve != nil {
		writeValidation(w, ve)
		return runRequest{}, nil, 0, false
	}
	v := &validator{policy: s.o.FetchPolicy}
	in := req.obj
	if in == nil {
		o, e := v.object("inputs", req.inputs)
		if e != nil {
			writeValidation(w, e)
			return runRequest{}, nil, 0, false
		}
		in = &o
	}
	norm, cost, ve := v.validateObject(req.model, *in)
	if ve != nil {
		writeValidation(w, ve)
		return runRequest{}, nil, 0, false
	}
	return req, norm, cost, true
}

// checkRunRefs checks what a valid request refers to: model-create's saved
// models in the owner's studio and the webhook URL against the fetch
// policy. It answers the request itself (a 400, or the backend's error)
// and returns false when a reference is refused.
func (s *server) checkRunRefs(w http.ResponseWriter, r *http.Request, owner string, req runRequest, norm spec.Inputs) bool {
	if ve, err := CheckStudioRefs(r.Context(), s.o.Backend, owner, norm); err != nil {
		s.backendError(w, r, "studio lookup", err)
		return false
	} else if ve != nil {
		writeValidation(w, ve)
		return false
	}
	if req.webhook == "" {
		return true
	}
	if err := s.o.FetchPolicy.CheckURL(req.webhook); err != nil {
		code := CodeInvalidURL
		var re *fetch.RefusedError
		if errors.As(err, &re) {
			code = CodeURLRefused
		}
		writeValidation(w, verr("webhook_url", code, "webhook_url: %v", err))
		return false
	}
	return true
}

// submitRefused answers a submission the backend refused (402 credits,
// 429 input quota, 503 model unavailable, or its failure) or that returned
// no job, and reports whether it did; cost is the validated cost, named
// when the backend's error gives none.
func (s *server) submitRefused(w http.ResponseWriter, r *http.Request, err error, job *jobs.Job, model string, cost int) bool {
	var ce *jobs.CreditsError
	switch {
	case errors.As(err, &ce):
		bal, c := ce.Balance, ce.Cost
		if c == 0 {
			c = cost
		}
		msg := fmt.Sprintf("insufficient credits: this job costs %d credits and the balance is %d; nothing was charged", c, bal)
		writeJSON(w, http.StatusPaymentRequired, ErrorBody{Error: msg, Message: msg, Code: CodeInsufficientCredits, Balance: &bal, Cost: &c})
	case errors.Is(err, jobs.ErrInsufficientCredits):
		msg := fmt.Sprintf("insufficient credits: this job costs %d credits; nothing was charged", cost)
		writeJSON(w, http.StatusPaymentRequired, ErrorBody{Error: msg, Message: msg, Code: CodeInsufficientCredits, Cost: &cost})
	case errors.Is(err, jobs.ErrInputQuota):
		msg := fmt.Sprintf("your unfinished jobs already hold the most input image bytes a key may store (%v); nothing was charged, submit again when some finish or send images as URLs", err)
		w.Header().Set("X-Should-Retry", "false")
		writeError(w, http.StatusTooManyRequests, CodeInputQuota, "", msg)
	case errors.Is(err, jobs.ErrModelUnavailable):
		msg := fmt.Sprintf("no worker currently serves model %s; no credits were charged", model)
		// The SDK would honour Retry-After and retry a 5xx three times;
		// answer at once instead (GET /v1/models shows what is served).
		w.Header().Set("X-Should-Retry", "false")
		writeJSON(w, http.StatusServiceUnavailable, ErrorBody{Error: msg, Message: msg, Code: CodeModelUnavailable, Model: model})
	case err != nil:
		s.backendError(w, r, "submit", err)
	case job == nil:
		s.backendError(w, r, "submit", errors.New("backend returned no job"))
	default:
		return false
	}
	return true
}

type runRequest struct {
	model   string
	inputs  json.RawMessage // when obj is nil: inputs as given (absent, null, not an object)
	obj     *object
	webhook string
}

// runFromBody checks the top-level members of a decoded body.
func runFromBody(pb *parsedBody, q map[string][]string) (runRequest, *ValidationError) {
	var req runRequest
	top := pb.top
	o := object{path: "", m: top}
	if k := o.firstUnknown(append(slices.Clone(runKeys), sdkPollKeys...)); k != "" {
		return req, verr(clipKey(k), CodeUnknownField, "%s is not a field of the request body; accepted fields: %s", clipKey(k), strings.Join(runKeys, ", "))
	}
	model, _, e := o.str("model_name", false)
	if e != nil {
		return req, e
	}
	if !slices.Contains(spec.ModelNames, model) {
		return req, unknownModel(model)
	}
	req.model = model
	req.inputs, req.obj = top["inputs"], pb.inputs
	if raw, ok := top["webhook_url"]; ok && !isNull(raw) {
		s, e := stringValue("webhook_url", raw)
		if e != nil {
			return req, e
		}
		req.webhook = s
	}
	if qs := q["webhook_url"]; len(qs) > 0 {
		if len(qs) > 1 {
			return req, verr("webhook_url", CodeConflictingFields, "webhook_url is given %d times in the query; give it once", len(qs))
		}
		if req.webhook != "" && req.webhook != qs[0] {
			return req, verr("webhook_url", CodeConflictingFields, "webhook_url is given in both the query and the body with different values; give it once")
		}
		req.webhook = qs[0]
	}
	if req.webhook != "" {
		if err := fetch.CheckURLSyntax(req.webhook); err != nil {
			return req, verr("webhook_url", CodeInvalidURL, "webhook_url must be an absolute http(s) URL: %v", err)
		}
	}
	return req, nil
}

func checkJSONContentType(ct string) string {
	if ct == "" {
		return "Content-Type must be application/json (the request has none); multipart/form-data is not supported"
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return fmt.Sprintf("Content-Type must be application/json, got %s; the body is JSON only (multipart/form-data is not supported)", strconv.Quote(clip(ct, 100)))
	}
	for k, v := range params {
		if k != "charset" || !strings.EqualFold(v, "utf-8") {
			return fmt.Sprintf("Content-Type parameter %s=%s is not supported; use application/json or application/json; charset=utf-8", k, clip(v, 40))
		}
	}
	return ""
}

// CheckStudioRefs checks that model-create's faceModelId and poseModelId
// name saved models of owner. ve is a 400 (unknown_face_model,
// unknown_pose_model); err is a backend failure.
func CheckStudioRefs(ctx context.Context, b jobs.Backend, owner string, normalised spec.Inputs) (ve *ValidationError, err error) {
	in, ok := normalised.(*spec.ModelCreateInputs)
	if !ok {
		return nil, nil
	}
	for _, ref := range []struct{ field, id, code, what string }{
		{"inputs.faceModelId", in.FaceModelID, CodeUnknownFaceModel, "face model"},
		{"inputs.poseModelId", in.PoseModelID, CodeUnknownPoseModel, "pose model"},
	} {
		if ref.id == "" {
			continue
		}
		_, err := b.GetSaved(ctx, owner, ref.id)
		switch {
		case errors.Is(err, jobs.ErrNotFound):
			return verr(ref.field, ref.code, "%s: no saved %s with id %s in your studio (GET /v1/models/saved lists them)", ref.field, ref.what, quoteClip(ref.id)), nil
		case err != nil:
			return nil, err
		}
	}
	return nil, nil
}

// wireJob prepares a job for the wire: UTC times, and output null (not [])
// while there is none.
func wireJob(j *jobs.Job) *jobs.Job {
	c := *j
	c.CreatedAt = c.CreatedAt.UTC()
	if c.UpdatedAt != nil {
		u := c.UpdatedAt.UTC()
		c.UpdatedAt = &u
	}
	if len(c.Output) == 0 {
		c.Output = nil
	}
	return &c
}

func (s *server) status(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if id == "" || len(id) > 200 {
		writeError(w, http.StatusNotFound, CodeNotFound, "", "no job with this id")
		return
	}
	if r.Method == http.MethodGet && wantsStream(r.Header.Get("Accept")) {
		s.stream(w, r, id)
		return
	}
	job, err := s.o.Backend.Get(r.Context(), Owner(r.Context()), id)
	switch {
	case errors.Is(err, jobs.ErrNotFound):
		writeError(w, http.StatusNotFound, CodeNotFound, "", fmt.Sprintf("no job with id %s", quoteClip(id)))
		return
	case err != nil:
		s.backendError(w, r, "get job", err)
		return
	case job == nil:
		writeError(w, http.StatusNotFound, CodeNotFound, "", fmt.Sprintf("no job with id %s", quoteClip(id)))
		return
	}
	setCredits(w, job)
	writeJSON(w, http.StatusOK, wireJob(job))
}

func (s *server) credits(w http.ResponseWriter, r *http.Request) {
	bal, err := s.o.Backend.Balance(r.Context(), Owner(r.Context()))
	if err != nil {
		s.backendError(w, r, "balance", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int64{"credits": bal})
}

func (s *server) models(w http.ResponseWriter, r *http.Request) {
	ms, err := s.o.Backend.Models(r.Context())
	if err != nil {
		s.backendError(w, r, "models", err)
		return
	}
	out := make([]jobs.ModelInfo, len(ms))
	for i, m := range ms {
		if m.Lifecycle == "" {
			m.Lifecycle = spec.Lifecycle(m.Name)
		}
		out[i] = m
	}
	writeJSON(w, http.StatusOK, map[string]any{"models": out})
}

func (s *server) listSaved(w http.ResponseWriter, r *http.Request) {
	ms, err := s.o.Backend.ListSaved(r.Context(), Owner(r.Context()))
	if err != nil {
		s.backendError(w, r, "list saved", err)
		return
	}
	if ms == nil {
		ms = []pipelines.SavedModel{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"models": ms})
}

func (s *server) getSaved(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	m, err := s.o.Backend.GetSaved(r.Context(), Owner(r.Context()), id)
	switch {
	case errors.Is(err, jobs.ErrNotFound):
		writeError(w, http.StatusNotFound, CodeNotFound, "", fmt.Sprintf("no saved model with id %s", quoteClip(id)))
		return
	case err != nil:
		s.backendError(w, r, "get saved", err)
		return
	}
	writeJSON(w, http.StatusOK, m)
}

func (s *server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok", "version": s.o.Version})
}

func (s *server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	err := s.o.Backend.Ready(ctx)
	if re := (*jobs.ReplicasError)(nil); errors.As(err, &re) {
		// Reads and status streams still work, and every instance shares
		// the store: 200, so that a load balancer keeps routing reads.
		writeJSON(w, http.StatusOK, map[string]any{"status": "degraded", "version": s.o.Version,
			"detail": fmt.Sprintf("submissions and cancellations are refused (503 backend_unavailable, Retry-After: %d): the job store's Redis master has %d of the %d online replicas wait_replicas requires",
				replicasOfflineRetryAfter, re.Online, re.Required),
			"replicas_online": re.Online, "replicas_required": re.Required})
		return
	}
	if err != nil {
		s.log.Warn("not ready", "err", err)
		writeError(w, http.StatusServiceUnavailable, CodeNotReady, "", "not ready: the job store is unreachable")
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready", "version": s.o.Version})
}
