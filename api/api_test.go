package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"fashiond/jobs"
	"fashiond/spec"
)

type harness struct {
	t    *testing.T
	fake *fakeBackend
	h    http.Handler
	logs *bytes.Buffer
}

func newHarness(t *testing.T) *harness {
	fake := newFake()
	logs := &bytes.Buffer{}
	hs := &harness{t: t, fake: fake, logs: logs}
	hs.h = New(Options{
		Backend: fake,
		CDN: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "image/png")
			io.WriteString(w, "cdn:"+r.URL.Path)
		}),
		Log:     slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Version: "test-1",
	})
	return hs
}

type resp struct {
	status int
	header http.Header
	body   []byte
	err    ErrorBody
	json   map[string]any
}

func (hs *harness) do(method, target, key string, body string, hdr ...string) resp {
	hs.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	r := httptest.NewRequest(method, target, rd)
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		r.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] == "" {
			r.Header.Del(hdr[i])
		} else {
			r.Header.Set(hdr[i], hdr[i+1])
		}
	}
	w := httptest.NewRecorder()
	hs.h.ServeHTTP(w, r)
	out := resp{status: w.Code, header: w.Header(), body: w.Body.Bytes()}
	if method != http.MethodHead {
		if ct := w.Header().Get("Content-Type"); strings.HasPrefix(ct, "application/json") {
			if err := json.Unmarshal(out.body, &out.json); err != nil {
				hs.t.Fatalf("%s %s: body is not JSON: %v\n%s", method, target, err, out.body)
			}
			json.Unmarshal(out.body, &out.err)
		}
	}
	return out
}

func runBody(model, inputs string) string {
	return `{"model_name":"` + model + `","inputs":` + inputs + `}`
}

func (r resp) wantError(t *testing.T, status int, code, field string) {
	t.Helper()
	if r.status != status || r.err.Code != code || r.err.Field != field {
		t.Fatalf("got %d code=%q field=%q (%s), want %d %q %q", r.status, r.err.Code, r.err.Field, r.body, status, code, field)
	}
	if r.err.Error == "" || r.err.Message != r.err.Error {
		t.Fatalf("error body %s lacks the sentence", r.body)
	}
	if _, has := r.json["field"]; field == "" && has {
		t.Fatalf("field present although not about a field: %s", r.body)
	}
}

var minimalInputs = map[string]string{
	"prompt-tryon":     `{"personImage":"` + img + `","prompt":"a red dress"}`,
	"pose-control":     `{"modelImage":"` + img + `","poses":[{"type":"custom","text":"arms up"},{"type":"template","cdnUrl":"` + img2 + `"}]}`,
	"model-create":     `{"type":"generate","name":"Ava","prompt":"a woman"}`,
	"product-to-model": `{"productImage":"` + img + `"}`,
	"angle-generation": `{"imageUrl":"` + img + `","angleIds":["front","back"]}`,
	"tryon":            `{"personImage":"` + img + `","garmentImage":"` + img2 + `"}`,
	"image-to-video":   `{"imageUrl":"` + img + `"}`,
}

func TestRunPerModel(t *testing.T) {
	want := map[string]struct{ status, cost int }{
		"prompt-tryon": {200, 1}, "tryon": {200, 1}, "image-to-video": {200, 9},
		"pose-control": {201, 2}, "model-create": {201, 1}, "product-to-model": {201, 1}, "angle-generation": {201, 2},
	}
	hs := newHarness(t)
	for _, m := range spec.ModelNames {
		r := hs.do("POST", "/v1/run", keyAlice, runBody(m, minimalInputs[m]))
		if r.status != want[m].status {
			t.Fatalf("%s: status %d, want %d: %s", m, r.status, want[m].status, r.body)
		}
		if got := r.header.Get("X-Credits-Used"); got != itoa(want[m].cost) {
			t.Errorf("%s: X-Credits-Used %q, want %d", m, got, want[m].cost)
		}
		// The spec's immediate response: status starting, error null,
		// output null, created_at ISO 8601 UTC.
		for _, k := range []string{"id", "status", "created_at", "error", "output"} {
			if _, ok := r.json[k]; !ok {
				t.Errorf("%s: response lacks %q: %s", m, k, r.body)
			}
		}
		if r.json["status"] != "starting" || r.json["error"] != nil || r.json["output"] != nil {
			t.Errorf("%s: %s", m, r.body)
		}
		if !bytes.Contains(r.body, []byte(`"error":null`)) || !bytes.Contains(r.body, []byte(`"output":null`)) {
			t.Errorf("%s: error/output not null: %s", m, r.body)
		}
		if r.json["created_at"] != "2026-11-21T02:05:06Z" {
			t.Errorf("%s: created_at %v, want UTC 2026-11-21T02:05:06Z", m, r.json["created_at"])
		}
		sub := hs.fake.submitted[len(hs.fake.submitted)-1]
		if sub.Model != m || sub.Owner != "owner-alice" || sub.Cost != want[m].cost {
			t.Errorf("%s: submitted %+v", m, sub)
		}
		if c, err := spec.Cost(sub.Inputs); err != nil || c != sub.Cost || sub.Inputs.ModelName() != m {
			t.Errorf("%s: submitted inputs of %s cost %d, %v", m, sub.Inputs.ModelName(), c, err)
		}
	}
	// Balance went down by the sum.
	r := hs.do("GET", "/v1/credits", keyAlice, "")
	if r.status != 200 || string(bytes.TrimSpace(r.body)) != `{"credits":983}` {
		t.Fatalf("credits: %d %s", r.status, r.body)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestRunNormalisedInputsReachBackend(t *testing.T) {
	hs := newHarness(t)
	r := hs.do("POST", "/v1/run?webhook_url=https://hooks.example.com/x%3Fa%3D1", keyAlice,
		runBody("product-to-model", `{"productImage":"`+img+`","quality":"4k","sampleCount":2}`))
	if r.status != 201 || r.header.Get("X-Credits-Used") != "10" || r.header.Get("X-Fashn-Credits-Used") != "10" {
		t.Fatalf("%d %v %s", r.status, r.header, r.body)
	}
	sub := hs.fake.submitted[0]
	want := `{"productImage":"` + img + `","customPrompt":"","modelImageUrl":"","styleId":"","quality":"4k","sampleCount":2,"ratio":"3:4"}`
	if got, err := spec.Encode(sub.Inputs); err != nil || string(got) != want {
		t.Errorf("inputs\n got %s, %v\nwant %s", got, err, want)
	}
	if sub.WebhookURL != "https://hooks.example.com/x?a=1" {
		t.Errorf("webhook %q", sub.WebhookURL)
	}
	// In the body as well; both equal is fine.
	r = hs.do("POST", "/v1/run?webhook_url=https://h.example.com/1", keyAlice,
		`{"model_name":"tryon","inputs":`+minimalInputs["tryon"]+`,"webhook_url":"https://h.example.com/1"}`)
	if r.status != 200 || hs.fake.submitted[1].WebhookURL != "https://h.example.com/1" {
		t.Fatalf("%d %s", r.status, r.body)
	}
	// The fashn SDK's subscribe() puts its polling options in the body.
	r = hs.do("POST", "/v1/run", keyAlice,
		`{"model_name":"tryon","inputs":`+minimalInputs["tryon"]+`,"pollInterval":1000,"timeout":300000,"maxRetries":3}`)
	if r.status != 200 {
		t.Fatalf("SDK poll options: %d %s", r.status, r.body)
	}
}

func TestRunErrors(t *testing.T) {
	hs := newHarness(t)
	tryon := minimalInputs["tryon"]
	for _, tt := range []struct {
		name        string
		target, key string
		body        string
		hdr         []string
		status      int
		code, field string
	}{
		{"no key", "/v1/run", "", runBody("tryon", tryon), nil, 401, CodeUnauthorized, ""},
		{"bad key", "/v1/run", "nope", runBody("tryon", tryon), nil, 401, CodeUnauthorized, ""},
		{"basic auth", "/v1/run", "", runBody("tryon", tryon), []string{"Authorization", "Basic Zm9vOmJhcg=="}, 401, CodeUnauthorized, ""},
		{"empty bearer", "/v1/run", "", runBody("tryon", tryon), []string{"Authorization", "Bearer "}, 401, CodeUnauthorized, ""},
		{"text/plain", "/v1/run", keyAlice, runBody("tryon", tryon), []string{"Content-Type", "text/plain"}, 415, CodeUnsupportedMediaType, ""},
		{"multipart", "/v1/run", keyAlice, runBody("tryon", tryon), []string{"Content-Type", "multipart/form-data; boundary=x"}, 415, CodeUnsupportedMediaType, ""},
		{"no content type", "/v1/run", keyAlice, runBody("tryon", tryon), []string{"Content-Type", ""}, 415, CodeUnsupportedMediaType, ""},
		{"latin1", "/v1/run", keyAlice, runBody("tryon", tryon), []string{"Content-Type", "application/json; charset=latin1"}, 415, CodeUnsupportedMediaType, ""},
		{"empty body", "/v1/run", keyAlice, " ", nil, 400, CodeInvalidJSON, ""},
		{"broken json", "/v1/run", keyAlice, `{"model_name":`, nil, 400, CodeInvalidJSON, ""},
		{"array body", "/v1/run", keyAlice, `[1]`, nil, 400, CodeInvalidType, ""},
		{"trailing garbage", "/v1/run", keyAlice, runBody("tryon", tryon) + `x`, nil, 400, CodeInvalidJSON, ""},
		{"unknown top key", "/v1/run", keyAlice, `{"model_name":"tryon","inputs":` + tryon + `,"priority":1}`, nil, 400, CodeUnknownField, "priority"},
		{"model number", "/v1/run", keyAlice, `{"model_name":3,"inputs":{}}`, nil, 400, CodeInvalidType, "model_name"},
		{"no model", "/v1/run", keyAlice, `{"inputs":{}}`, nil, 400, CodeMissingField, "model_name"},
		{"unknown model", "/v1/run", keyAlice, runBody("tryon-v1.6", tryon), nil, 400, CodeUnknownModel, "model_name"},
		{"no inputs", "/v1/run", keyAlice, `{"model_name":"tryon"}`, nil, 400, CodeMissingField, "inputs"},
		{"bad input", "/v1/run", keyAlice, runBody("tryon", `{"personImage":"`+img+`","garmentImage":"`+img+`","sampleCount":9}`), nil, 400, CodeOutOfRange, "inputs.sampleCount"},
		{"webhook bad", "/v1/run?webhook_url=ftp://x", keyAlice, runBody("tryon", tryon), nil, 400, CodeInvalidURL, "webhook_url"},
		{"webhook internal", "/v1/run?webhook_url=http://10.0.0.5/hook", keyAlice, runBody("tryon", tryon), nil, 400, CodeURLRefused, "webhook_url"},
		{"webhook body number", "/v1/run", keyAlice, `{"model_name":"tryon","inputs":` + tryon + `,"webhook_url":5}`, nil, 400, CodeInvalidType, "webhook_url"},
		{"webhook conflict", "/v1/run?webhook_url=https://a.example.com/", keyAlice, `{"model_name":"tryon","inputs":` + tryon + `,"webhook_url":"https://b.example.com/"}`, nil, 400, CodeConflictingFields, "webhook_url"},
		{"webhook twice", "/v1/run?webhook_url=https://a.example.com/&webhook_url=https://b.example.com/", keyAlice, runBody("tryon", tryon), nil, 400, CodeConflictingFields, "webhook_url"},
		{"unknown face model", "/v1/run", keyAlice, runBody("model-create", `{"type":"generate","name":"A","faceModelId":"99999999-9999-4999-8999-999999999999"}`), nil, 400, CodeUnknownFaceModel, "inputs.faceModelId"},
		{"unknown pose model", "/v1/run", keyAlice, runBody("model-create", `{"type":"generate","name":"A","prompt":"p","poseModelId":"99999999-9999-4999-8999-999999999999"}`), nil, 400, CodeUnknownPoseModel, "inputs.poseModelId"},
		{"other owner's face model", "/v1/run", keyBob, runBody("model-create", `{"type":"generate","name":"A","faceModelId":"11111111-1111-4111-8111-111111111111"}`), nil, 400, CodeUnknownFaceModel, "inputs.faceModelId"},
		{"insufficient credits", "/v1/run", keyPoor, runBody("pose-control", `{"modelImage":"`+img+`","poses":[{"type":"custom","text":"a"},{"type":"custom","text":"b"},{"type":"custom","text":"c"}],"quality":"4k"}`), nil, 402, CodeInsufficientCredits, ""},
		{"GET run", "/v1/run", keyAlice, "", nil, 405, CodeMethodNotAllowed, ""},
		{"unknown path", "/v1/nothing", keyAlice, "", nil, 404, CodeNotFound, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			method := "POST"
			if tt.body == "" {
				method = "GET"
			}
			n := len(hs.fake.submitted)
			r := hs.do(method, tt.target, tt.key, tt.body, tt.hdr...)
			r.wantError(t, tt.status, tt.code, tt.field)
			if len(hs.fake.submitted) != n {
				t.Fatal("a rejected request reached Submit")
			}
		})
	}
	if strings.Contains(hs.logs.String(), keyAlice) || strings.Contains(hs.logs.String(), "fk_") {
		t.Error("an API key was logged")
	}
}

func TestRun402Body(t *testing.T) {
	hs := newHarness(t)
	r := hs.do("POST", "/v1/run", keyPoor, runBody("angle-generation", `{"imageUrl":"`+img+`","angleIds":["front","back","left45"],"quality":"4k"}`))
	r.wantError(t, 402, CodeInsufficientCredits, "")
	if r.json["balance"] != float64(2) || r.json["cost"] != float64(15) {
		t.Fatalf("402 body %s", r.body)
	}
	if !strings.Contains(r.err.Error, "costs 15 credits and the balance is 2") {
		t.Errorf("message %q", r.err.Error)
	}
	// A job within the balance still passes.
	if r := hs.do("POST", "/v1/run", keyPoor, runBody("tryon", minimalInputs["tryon"])); r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
}

func TestRunModelUnavailable(t *testing.T) {
	hs := newHarness(t)
	hs.fake.unavailable["image-to-video"] = true
	r := hs.do("POST", "/v1/run", keyAlice, runBody("image-to-video", minimalInputs["image-to-video"]))
	r.wantError(t, 503, CodeModelUnavailable, "")
	if r.err.Error != "no worker currently serves model image-to-video; no credits were charged" {
		t.Errorf("message %q", r.err.Error)
	}
	if r.header.Get("X-Should-Retry") != "false" {
		t.Error("model_unavailable must tell the SDK not to retry")
	}
	if hs.fake.balance["owner-alice"] != 1000 {
		t.Error("credits charged")
	}
	// /v1/models reports it and fills in lifecycle.
	r = hs.do("GET", "/v1/models", keyAlice, "")
	var body struct{ Models []jobs.ModelInfo }
	json.Unmarshal(r.body, &body)
	if len(body.Models) != 7 {
		t.Fatalf("models %s", r.body)
	}
	for _, m := range body.Models {
		wantLC := "stable"
		if m.Name == "image-to-video" {
			wantLC = "experimental"
		}
		if m.Lifecycle != wantLC || m.Served == (m.Name == "image-to-video") {
			t.Errorf("%+v", m)
		}
	}
}

func TestBodyTooLarge(t *testing.T) {
	fake := newFake()
	h := New(Options{Backend: fake, MaxBodyBytes: 1 << 10})
	body := runBody("prompt-tryon", `{"personImage":"`+img+`","prompt":"`+strings.Repeat("x", 2000)+`"}`)
	r := httptest.NewRequest("POST", "/v1/run", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json; charset=UTF-8")
	r.Header.Set("X-Api-Key", keyAlice)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	var e ErrorBody
	json.Unmarshal(w.Body.Bytes(), &e)
	if w.Code != 413 || e.Code != CodeBodyTooLarge || !strings.Contains(e.Error, "larger than 0 MB") && !strings.Contains(e.Error, "larger than") {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	// Under the limit with the same headers (x-api-key, charset): accepted.
	r = httptest.NewRequest("POST", "/v1/run", strings.NewReader(runBody("tryon", minimalInputs["tryon"])))
	r.Header.Set("Content-Type", "application/json; charset=UTF-8")
	r.Header.Set("X-Api-Key", keyAlice)
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != 200 {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
}

func TestStatus(t *testing.T) {
	hs := newHarness(t)
	r := hs.do("POST", "/v1/run", keyAlice, runBody("prompt-tryon", `{"personImage":"`+img+`","prompt":"x","sampleCount":2,"quality":"2k"}`))
	id, _ := r.json["id"].(string)
	if id == "" {
		t.Fatalf("no id: %s", r.body)
	}
	r = hs.do("GET", "/v1/status/"+id, keyAlice, "")
	if r.status != 200 || r.json["status"] != "success" || r.json["id"] != id || r.json["error"] != nil {
		t.Fatalf("%d %s", r.status, r.body)
	}
	out, _ := r.json["output"].([]any)
	if len(out) != 2 || !strings.HasPrefix(out[0].(string), "http://cdn.test/cdn/"+id+"/") {
		t.Fatalf("output %v", r.json["output"])
	}
	if r.json["updated_at"] != "2026-11-21T02:05:09Z" || r.header.Get("X-Fashn-Credits-Used") != "6" {
		t.Errorf("updated_at %v credits header %q", r.json["updated_at"], r.header.Get("X-Fashn-Credits-Used"))
	}
	// x-api-key works as well.
	if r := hs.do("GET", "/v1/status/"+id, "", "", "X-Api-Key", keyAlice); r.status != 200 {
		t.Fatalf("x-api-key: %d", r.status)
	}
	// Another owner and unknown ids: 404.
	hs.do("GET", "/v1/status/"+id, keyBob, "").wantError(t, 404, CodeNotFound, "")
	hs.do("GET", "/v1/status/00000000-0000-0000-0000-000000000000", keyAlice, "").wantError(t, 404, CodeNotFound, "")
	hs.do("GET", "/v1/status/"+strings.Repeat("a", 300), keyAlice, "").wantError(t, 404, CodeNotFound, "")
	hs.do("GET", "/v1/status/"+id, "", "").wantError(t, 401, CodeUnauthorized, "")
	hs.do("DELETE", "/v1/status/"+id, keyAlice, "").wantError(t, 405, CodeMethodNotAllowed, "")

	// A failed job: status error with the reason.
	r = hs.do("POST", "/v1/run", keyAlice, runBody("image-to-video", `{"imageUrl":"`+img+`","prompt":"fail"}`))
	r = hs.do("GET", "/v1/status/"+r.json["id"].(string), keyAlice, "")
	if r.json["status"] != "error" || r.json["error"] != "imageUrl: image could not be loaded" || r.json["output"] != nil {
		t.Fatalf("%s", r.body)
	}
}

func TestSavedModels(t *testing.T) {
	hs := newHarness(t)
	r := hs.do("GET", "/v1/models/saved", keyAlice, "")
	var list struct{ Models []map[string]any }
	json.Unmarshal(r.body, &list)
	if r.status != 200 || len(list.Models) != 2 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	r = hs.do("GET", "/v1/models/saved", keyBob, "")
	if r.status != 200 || string(bytes.TrimSpace(r.body)) != `{"models":[]}` {
		t.Fatalf("bob: %d %s", r.status, r.body)
	}
	r = hs.do("GET", "/v1/models/saved/11111111-1111-4111-8111-111111111111", keyAlice, "")
	if r.status != 200 || r.json["name"] != "Ava" || r.json["width"] != float64(768) {
		t.Fatalf("%d %s", r.status, r.body)
	}
	hs.do("GET", "/v1/models/saved/11111111-1111-4111-8111-111111111111", keyBob, "").wantError(t, 404, CodeNotFound, "")
	hs.do("GET", "/v1/models/saved/nope", keyAlice, "").wantError(t, 404, CodeNotFound, "")
	// A saved face model lets model-create omit the prompt.
	r = hs.do("POST", "/v1/run", keyAlice, runBody("model-create", `{"type":"generate","name":"B","faceModelId":"11111111-1111-4111-8111-111111111111","poseModelId":"22222222-2222-4222-8222-222222222222","quality":"4k","sampleCount":2}`))
	if r.status != 201 || r.header.Get("X-Credits-Used") != "10" {
		t.Fatalf("%d %s", r.status, r.body)
	}
}

func TestHealthAndCDN(t *testing.T) {
	hs := newHarness(t)
	r := hs.do("GET", "/healthz", "", "")
	if r.status != 200 || r.json["version"] != "test-1" {
		t.Fatalf("healthz %d %s", r.status, r.body)
	}
	if r := hs.do("GET", "/readyz", "", ""); r.status != 200 {
		t.Fatalf("readyz %d", r.status)
	}
	hs.fake.readyErr = errRedisDown
	hs.do("GET", "/readyz", "", "").wantError(t, 503, CodeNotReady, "")
	if r := hs.do("GET", "/healthz", "", ""); r.status != 200 {
		t.Fatal("healthz must stay 200")
	}
	if r := hs.do("HEAD", "/healthz", "", ""); r.status != 200 {
		t.Fatal("HEAD healthz")
	}
	r = hs.do("GET", "/cdn/abc/0.png", "", "")
	if r.status != 200 || string(r.body) != "cdn:/cdn/abc/0.png" {
		t.Fatalf("cdn %d %s", r.status, r.body)
	}
	// Without a CDN handler: JSON 404.
	h := New(Options{Backend: newFake()})
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/cdn/x.png", nil))
	if w.Code != 404 || !strings.Contains(w.Body.String(), `"code":"not_found"`) {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
}

// uuidLike is a well-formed job id that no job has.
const uuidLike = "0b0e7a52-3c53-4a5e-9a38-6f0f0c1d2e3f"

func TestBackendFailures(t *testing.T) {
	hs := newHarness(t)
	hs.fake.panicOn = "balance"
	hs.do("GET", "/v1/credits", keyAlice, "").wantError(t, 500, CodeInternal, "")
	if !strings.Contains(hs.logs.String(), "fake balance exploded") {
		t.Errorf("panic not logged: %s", hs.logs)
	}
	hs.fake.panicOn = ""
	hs.fake.failErr = errRedisDown
	hs.do("GET", "/v1/credits", keyAlice, "").wantError(t, 503, CodeBackendUnavailable, "")
	// A status read the job store could not serve: 503 with Retry-After.
	st := hs.do("GET", "/v1/status/"+uuidLike, keyAlice, "")
	st.wantError(t, 503, CodeBackendUnavailable, "")
	if st.header.Get("Retry-After") != "1" {
		t.Errorf("status read failure: Retry-After %q, want 1", st.header.Get("Retry-After"))
	}
	r := hs.do("POST", "/v1/run", keyAlice, runBody("tryon", minimalInputs["tryon"]))
	r.wantError(t, 503, CodeBackendUnavailable, "")
	if r.header.Get("X-Should-Retry") != "false" {
		t.Error("POST failure must ask the SDK not to retry")
	}
	if strings.Contains(hs.logs.String(), keyAlice) {
		t.Error("key logged")
	}
}

func TestWireJobNulls(t *testing.T) {
	j := &jobs.Job{ID: "x", Status: "starting", CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("X", -3600)), Output: []string{}}
	b, _ := json.Marshal(wireJob(j))
	for _, want := range []string{`"error":null`, `"output":null`, `"created_at":"2026-01-02T04:04:05Z"`} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("%s lacks %s", b, want)
		}
	}
	if j.Output == nil {
		t.Error("wireJob modified its argument")
	}
}

// TestNotReplicated: a write the Redis master took but too few replicas
// confirmed is a 503 that says whether a retry is safe: with an
// Idempotency-Key (the job comes back exactly once) or on a GET, yes;
// a POST without one, no.
func TestNotReplicated(t *testing.T) {
	hs := newHarness(t)
	hs.fake.failErr = jobs.ErrNotReplicated
	cases := []struct {
		name, method, target string
		hdr                  []string
		retry                string
		says                 string
	}{
		{"submit with key", "POST", "/v1/run", []string{"Idempotency-Key", "k-1"}, "true", "same Idempotency-Key"},
		{"submit without key", "POST", "/v1/run", nil, "false", "may or may not have taken effect"},
		{"read", "GET", "/v1/credits", nil, "true", "same Idempotency-Key"},
	}
	for _, c := range cases {
		body := ""
		if c.method == "POST" {
			body = runBody("tryon", minimalInputs["tryon"])
		}
		r := hs.do(c.method, c.target, keyAlice, body, c.hdr...)
		r.wantError(t, 503, CodeBackendUnavailable, "")
		if got := r.header.Get("X-Should-Retry"); got != c.retry {
			t.Errorf("%s: X-Should-Retry %q, want %q", c.name, got, c.retry)
		}
		if !strings.Contains(string(r.body), c.says) {
			t.Errorf("%s: body %s lacks %q", c.name, r.body, c.says)
		}
	}
}

// TestReplicasOffline: while the Redis master has fewer online replicas
// than wait_replicas requires, a write is refused before anything is
// written: a 503 that any client may retry (Retry-After: 5) and that
// states the replication, and /readyz answers 200 "degraded" with the
// same numbers (reads still work: a load balancer keeps the instance).
func TestReplicasOffline(t *testing.T) {
	hs := newHarness(t)
	offline := &jobs.ReplicasError{Online: 0, Required: 1, Waited: 3 * time.Second}
	hs.fake.failErr = offline
	cases := []struct {
		name, method, target string
		hdr                  []string
	}{
		{"submit without Idempotency-Key", "POST", "/v1/run", nil},
		{"submit with Idempotency-Key", "POST", "/v1/run", []string{"Idempotency-Key", "k-2"}},
		{"cancel", "POST", "/v1/cancel/abc", nil},
	}
	for _, c := range cases {
		body := ""
		if c.target == "/v1/run" {
			body = runBody("tryon", minimalInputs["tryon"])
		}
		r := hs.do(c.method, c.target, keyAlice, body, c.hdr...)
		r.wantError(t, 503, CodeBackendUnavailable, "")
		if got, ra := r.header.Get("X-Should-Retry"), r.header.Get("Retry-After"); got != "true" || ra != "5" {
			t.Errorf("%s: X-Should-Retry %q Retry-After %q, want true and 5", c.name, got, ra)
		}
		if want := "nothing was written: the job store is degraded, its Redis master has 0 of the 1 online replicas"; !strings.Contains(string(r.body), want) {
			t.Errorf("%s: body %s lacks %q", c.name, r.body, want)
		}
	}
	hs.fake.failErr = nil
	hs.fake.readyErr = fmt.Errorf("wrapped: %w", offline)
	r := hs.do("GET", "/readyz", "", "")
	if r.status != 200 || r.json["status"] != "degraded" || r.json["replicas_online"] != float64(0) || r.json["replicas_required"] != float64(1) ||
		!strings.Contains(fmt.Sprint(r.json["detail"]), "submissions and cancellations are refused") {
		t.Fatalf("readyz while degraded: %d %s", r.status, r.body)
	}
}
