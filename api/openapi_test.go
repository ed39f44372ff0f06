package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"fashiond/spec"
)

// schemaBlind are the 400 codes whose rule a JSON schema cannot state
// (base64 content, decoded size, address policy, saved-model lookups,
// JSON syntax below the schema); every other refusal of validateCases
// must also be refused by the document.
var schemaBlind = []string{CodeInvalidImage, CodeImageTooLarge, CodeURLRefused, CodeUnknownFaceModel,
	CodeUnknownPoseModel, CodeDuplicateKey, CodeInvalidUTF8, CodeInvalidJSON}

type oasHarness struct {
	*harness
	router routers.Router
	doc    *openapi3.T
}

// newOAS loads the document the handler serves and a router over it.
func newOAS(t *testing.T) *oasHarness {
	hs := newHarness(t)
	r := hs.do("GET", "/openapi.json", "", "")
	if r.status != 200 {
		t.Fatalf("GET /openapi.json: %d %s", r.status, r.body)
	}
	doc, err := openapi3.NewLoader().LoadFromData(r.body)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("the document is not valid OpenAPI: %v", err)
	}
	doc.Servers = openapi3.Servers{{URL: "http://fashiond.test"}}
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return &oasHarness{harness: hs, router: router, doc: doc}
}

var oasOptions = &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: false}

// exchange sends a request to the real handler and checks it, and the
// answer, against the document; reqErr is the request's schema error.
func (o *oasHarness) exchange(t *testing.T, method, target, key, body string, hdr ...string) (resp, error) {
	t.Helper()
	r := o.do(method, target, key, body, hdr...)
	req := httptest.NewRequest(method, "http://fashiond.test"+target, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	route, params, err := o.router.FindRoute(req)
	if err != nil {
		t.Fatalf("%s %s: no route in the document: %v", method, target, err)
	}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: oasOptions}
	reqErr := openapi3filter.ValidateRequest(context.Background(), in)
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: r.status, Header: r.header,
		Body: io.NopCloser(bytes.NewReader(r.body)), Options: &openapi3filter.Options{IncludeResponseStatus: true}}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		t.Errorf("%s %s: the answer %d %s does not match the document: %v", method, target, r.status, clip(string(r.body), 300), err)
	}
	return r, reqErr
}

// TestOpenAPIRequests sends every case of the validator's table through
// the real handler: valid inputs are accepted by the document too, and
// every refusal the schema can express is refused by it; every answer
// (200/201 jobs, 400 errors) matches the document.
func TestOpenAPIRequests(t *testing.T) {
	o := newOAS(t)
	for _, tc := range validateCases {
		if tc.inputs == "" || tc.model == "" || tc.code == CodeUnknownModel {
			continue // no body of a model: see TestOpenAPIBodies
		}
		t.Run(tc.name, func(t *testing.T) {
			r, reqErr := o.exchange(t, "POST", "/v1/run", keyAlice, runBody(tc.model, tc.inputs))
			switch {
			case tc.code == "" && (r.status != spec.SubmitStatus(tc.model) || reqErr != nil):
				t.Fatalf("valid request: API %d %s, document: %v", r.status, clip(string(r.body), 200), reqErr)
			case tc.code != "" && r.err.Code != tc.code:
				t.Fatalf("API answered %d %s, want %s", r.status, r.err.Code, tc.code)
			case tc.code != "" && reqErr == nil && !slices.Contains(schemaBlind, tc.code):
				t.Fatalf("the API refuses it (%s %s) but the document accepts it", tc.code, tc.field)
			}
		})
	}
}

// TestOpenAPIBodies covers the top level of the body and the headers.
func TestOpenAPIBodies(t *testing.T) {
	o := newOAS(t)
	tryon := minimalInputs[spec.ModelTryOn]
	for _, tc := range []struct {
		name, body string
		hdr        []string
		status     int
		schemaOK   bool
	}{
		{"unknown model", runBody("virtual-tryon", tryon), nil, 400, false},
		{"no model", `{"inputs":` + tryon + `}`, nil, 400, false},
		{"no inputs", `{"model_name":"tryon"}`, nil, 400, false},
		{"unknown top field", `{"model_name":"tryon","inputs":` + tryon + `,"extra":1}`, nil, 400, false},
		{"sdk poll keys", `{"model_name":"tryon","inputs":` + tryon + `,"pollInterval":1000,"timeout":60000}`, nil, 200, true},
		{"webhook", `{"model_name":"tryon","inputs":` + tryon + `,"webhook_url":"https://hooks.example.com/x"}`, nil, 200, true},
		{"webhook not a URL", `{"model_name":"tryon","inputs":` + tryon + `,"webhook_url":"hooks"}`, nil, 400, false},
		{"idempotency key", runBody(spec.ModelTryOn, tryon), []string{HeaderIdempotencyKey, "key-1"}, 200, true},
		{"idempotency key with space", runBody(spec.ModelTryOn, tryon), []string{HeaderIdempotencyKey, "key 1"}, 400, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, reqErr := o.exchange(t, "POST", "/v1/run", keyAlice, tc.body, tc.hdr...)
			if r.status != tc.status || (reqErr == nil) != tc.schemaOK {
				t.Fatalf("API %d (want %d), document error %v (want accepted=%v)", r.status, tc.status, reqErr, tc.schemaOK)
			}
		})
	}
}

// TestOpenAPIResponses checks the answers of every other endpoint.
func TestOpenAPIResponses(t *testing.T) {
	o := newOAS(t)
	var ids []string
	for _, m := range spec.ModelNames {
		r, err := o.exchange(t, "POST", "/v1/run", keyAlice, runBody(m, minimalInputs[m]))
		if err != nil || r.status != spec.SubmitStatus(m) {
			t.Fatalf("%s: %d %v", m, r.status, err)
		}
		ids = append(ids, r.json["id"].(string))
	}
	for _, tc := range []struct {
		method, target, key string
		status              int
	}{
		{"GET", "/v1/status/" + ids[0], keyAlice, 200},
		{"GET", "/v1/status/" + ids[1], keyAlice, 200},
		{"GET", "/v1/status/nope", keyAlice, 404},
		{"GET", "/v1/status/" + ids[1], "", 401},
		{"GET", "/v1/status/" + ids[1], "wrong-key", 401},
		{"POST", "/v1/cancel/" + ids[2], keyAlice, 200},
		{"POST", "/v1/cancel/" + ids[2], keyAlice, 409},
		{"GET", "/v1/jobs?limit=2", keyAlice, 200},
		{"GET", "/v1/jobs?limit=0", keyAlice, 400},
		{"DELETE", "/v1/jobs/" + ids[2], keyAlice, 200},
		{"GET", "/v1/credits", keyAlice, 200},
		{"GET", "/v1/models", keyAlice, 200},
		{"GET", "/v1/models/saved", keyAlice, 200},
		{"GET", "/v1/models/saved/11111111-1111-4111-8111-111111111111", keyAlice, 200},
		{"GET", "/healthz", "", 200},
		{"GET", "/readyz", "", 200},
	} {
		r, err := o.exchange(t, tc.method, tc.target, tc.key, "")
		if r.status != tc.status {
			t.Errorf("%s %s: %d, want %d: %s", tc.method, tc.target, r.status, tc.status, r.body)
		}
		if err != nil && tc.status < 400 {
			t.Errorf("%s %s: the document refuses the request: %v", tc.method, tc.target, err)
		}
	}
}

// TestOpenAPIFromRules checks concrete values that come from the rule
// table, and that every route of the handler is in the document.
func TestOpenAPIFromRules(t *testing.T) {
	o := newOAS(t)
	s := o.doc.Components.Schemas
	to := s[inputsName(spec.ModelTryOn)].Value
	if sc := to.Properties["sampleCount"].Value; *sc.Max != spec.MaxSampleCount || *sc.Min != 1 || sc.Default != float64(1) {
		t.Errorf("tryon sampleCount: min %v max %v default %v", *sc.Min, *sc.Max, sc.Default)
	}
	if got := to.Properties["accuracy"].Value.Enum; len(got) != 4 || got[0] != "standard" || got[3] != nil {
		t.Errorf("tryon accuracy enum %v, want standard, high, hyper, null", got)
	}
	if !slices.Equal(to.Required, []string{"personImage", "garmentImage"}) {
		t.Errorf("tryon required %v", to.Required)
	}
	if got := s[inputsName(spec.ModelImageToVideo)].Value.Properties["duration"].Value.Enum; len(got) != 4 || got[0] != float64(4) || got[2] != float64(8) {
		t.Errorf("duration enum %v", got)
	}
	if p := s[inputsName(spec.ModelPromptTryOn)].Value.Properties["prompt"].Value; *p.MaxLength != spec.MaxPromptChars || p.Pattern != nonBlank {
		t.Errorf("prompt maxLength %d pattern %q", *p.MaxLength, p.Pattern)
	}
	mc := s[inputsName(spec.ModelModelCreate)].Value.OneOf
	if len(mc) != 2 || *mc[1].Value.Properties["sampleCount"].Value.Max != 1 || *mc[0].Value.Properties["sampleCount"].Value.Max != spec.MaxSampleCount {
		t.Fatalf("model-create variants: %d", len(mc))
	}
	if ag := s[inputsName(spec.ModelAngleGeneration)].Value.Properties["angleIds"].Value; !ag.UniqueItems || *ag.MaxItems != spec.MaxAngles {
		t.Errorf("angleIds: unique %v maxItems %d", ag.UniqueItems, *ag.MaxItems)
	}
	for _, p := range []string{"/v1/run", "/v1/status/{id}", "/v1/cancel/{id}", "/v1/jobs", "/v1/jobs/{id}", "/v1/credits", "/v1/models",
		"/v1/models/saved", "/v1/models/saved/{id}", "/healthz", "/readyz"} {
		if o.doc.Paths.Find(p) == nil {
			t.Errorf("path %s is missing", p)
		}
	}
	st := o.doc.Paths.Find("/v1/status/{id}").Get.Responses.Status(200).Value.Content
	if st.Get("text/event-stream") == nil {
		t.Error("GET /v1/status/{id} lacks the event-stream answer")
	}
	if len(o.doc.Components.SecuritySchemes) != 2 || o.doc.Components.SecuritySchemes["apiKey"].Value.Name != "x-api-key" {
		t.Error("security schemes: want bearer and x-api-key")
	}
	raw, _ := json.Marshal(o.doc.Paths.Find("/v1/run").Post.Responses.Status(400).Value)
	for _, c := range []string{CodeMissingField, CodeFieldNotAllowed, CodeInvalidIdempotencyKey} {
		if !bytes.Contains(raw, []byte(c)) {
			t.Errorf("400 response does not list %s", c)
		}
	}
	if r := o.do("GET", "/openapi.json", "", ""); r.header.Get("Content-Type") != "application/json; charset=utf-8" {
		t.Errorf("content type %q", r.header.Get("Content-Type"))
	}
	_ = http.StatusOK
}

// FuzzOpenAPIAgrees: inputs the validator accepts are accepted by the
// model's inputs schema in the document.
func FuzzOpenAPIAgrees(f *testing.F) {
	for _, tc := range validateCases {
		if slices.Contains(spec.ModelNames, tc.model) {
			f.Add(uint8(slices.Index(spec.ModelNames, tc.model)), tc.inputs)
		}
	}
	doc, err := openapi3.NewLoader().LoadFromData(mustJSON(f, OpenAPI(Options{})))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, m uint8, inputs string) {
		model := spec.ModelNames[int(m)%len(spec.ModelNames)]
		if _, _, ve := Validate(model, json.RawMessage(inputs)); ve != nil {
			return
		}
		var v any
		if err := json.Unmarshal([]byte(inputs), &v); err != nil {
			t.Fatalf("valid inputs are not JSON: %v", err)
		}
		s := doc.Components.Schemas[inputsName(model)].Value
		if err := s.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
			t.Fatalf("%s accepts %s but the document refuses it: %v", model, clip(inputs, 300), err)
		}
	})
}

func mustJSON(t testing.TB, v any) []byte {
	b, err := marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
