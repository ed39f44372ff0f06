package api

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"fashiond/fetch"
	"fashiond/jobs"
	"fashiond/spec"
)

// The OpenAPI 3.1 document of the service, served at GET /openapi.json.
// Every input schema is generated from the input rules of package spec
// (spec/rules.go), the table the validator interprets; nothing here
// restates an input rule.

// OpenAPIVersion is the OpenAPI version of the document.
const OpenAPIVersion = "3.1.0"

// Patterns of image references (case-insensitive schemes as the
// validator reads them; ECMA-262 syntax without flags).
const (
	urlPattern     = `^[hH][tT][tT][pP][sS]?://`
	dataURIPattern = `^[dD][aA][tT][aA]:`
	idPattern      = `^[A-Za-z0-9_-]*$`
	nonBlank       = `\S`
	idemPattern    = `^[!-~]+$`
)

type obj = map[string]any

// OpenAPI returns the service's OpenAPI 3.1 document for a handler built
// with o (its data URI limit sets the image strings' maxLength).
func OpenAPI(o Options) map[string]any {
	maxImage := o.FetchPolicy.MaxBytes
	if maxImage <= 0 {
		maxImage = fetch.DefaultMaxBytes
	}
	g := &gen{maxString: maxStringLen(maxImage)}
	schemas := obj{
		"Error":         errorSchema(),
		"Job":           jobSchema(),
		"RunRequest":    g.runRequest(),
		"ModelInfo":     modelInfoSchema(),
		"SavedModel":    savedModelSchema(),
		"ModelName":     obj{"type": "string", "enum": spec.ModelNames},
		"Health":        healthSchema(),
		"CreditBalance": obj{"type": "object", "required": []string{"credits"}, "properties": obj{"credits": obj{"type": "integer"}}},
	}
	for _, m := range spec.ModelNames {
		schemas[inputsName(m)] = g.inputs(m)
		schemas[runName(m)] = g.runVariant(m)
	}
	return obj{
		"openapi":           OpenAPIVersion,
		"jsonSchemaDialect": "https://spec.openapis.org/oas/3.1/dialect/base",
		"info": obj{
			"title":       "fashiond",
			"version":     versionOr(o.Version),
			"description": "Fashion image and video jobs: submit with POST /v1/run, follow with GET /v1/status/{id}. Every 4xx/5xx body is an Error.",
		},
		"security": []any{obj{"bearer": []string{}}, obj{"apiKey": []string{}}},
		"paths":    paths(),
		"components": obj{
			"schemas": schemas,
			"securitySchemes": obj{
				"bearer": obj{"type": "http", "scheme": "bearer", "description": "Authorization: Bearer <API_KEY>"},
				"apiKey": obj{"type": "apiKey", "in": "header", "name": "x-api-key"},
			},
			"headers":    headers(),
			"parameters": obj{"JobID": obj{"name": "id", "in": "path", "required": true, "schema": obj{"type": "string", "minLength": 1}}},
		},
	}
}

func versionOr(v string) string {
	if v == "" {
		return "dev"
	}
	return v
}

func inputsName(model string) string { return "Inputs_" + model }
func runName(model string) string    { return "Run_" + model }
func ref(name string) obj            { return obj{"$ref": "#/components/schemas/" + name} }

// gen builds input schemas from the rules.
type gen struct{ maxString int64 }

// runRequest is the POST /v1/run body: one variant per model_name.
func (g *gen) runRequest() obj {
	var one []any
	mapping := obj{}
	for _, m := range spec.ModelNames {
		one = append(one, ref(runName(m)))
		mapping[m] = "#/components/schemas/" + runName(m)
	}
	return obj{"oneOf": one, "discriminator": obj{"propertyName": "model_name", "mapping": mapping}}
}

func (g *gen) runVariant(model string) obj {
	props := obj{
		"model_name":  obj{"type": "string", "const": model},
		"inputs":      ref(inputsName(model)),
		"webhook_url": obj{"type": []string{"string", "null"}, "pattern": urlPattern, "maxLength": fetch.MaxURLLength, "description": "POSTed the job when it ends (also accepted as a query parameter)."},
	}
	for _, k := range sdkPollKeys {
		props[k] = obj{"description": "Accepted and ignored (the fashn SDK's polling option)."}
	}
	return obj{"type": "object", "required": []string{"model_name", "inputs"}, "properties": props, "additionalProperties": false,
		"description": fmt.Sprintf("%s (%s); accepted with HTTP %d.", model, spec.Lifecycle(model), spec.SubmitStatus(model))}
}

// inputs is the inputs schema of a model: an object of its fields, or one
// object per variant (model-create's type).
func (g *gen) inputs(model string) obj {
	m := spec.InputRules(model)
	if m.Variant == "" {
		return g.object(m, "")
	}
	var one []any
	for _, v := range m.Variants() {
		one = append(one, g.object(m, v))
	}
	return obj{"oneOf": one}
}

// object is the schema of m's fields in variant ("" no variants): the
// other variants' fields are accepted only empty or null.
func (g *gen) object(m *spec.Object, variant string) obj {
	props := obj{}
	var required []string
	var all []any
	for _, f := range m.Fields {
		switch {
		case f.Name == m.Variant && variant != "":
			props[f.Name] = obj{"type": "string", "const": variant, "description": f.Doc}
			required = append(required, f.Name)
			continue
		case f.When != "" && f.When != variant:
			props[f.Name] = obj{"enum": []any{"", nil}, "description": fmt.Sprintf("Only with %s %s.", m.Variant, f.When)}
			continue
		}
		props[f.Name] = g.field(f, variant)
		if f.Required && f.RequiredUnless == "" {
			required = append(required, f.Name)
		}
		if f.RequiredUnless != "" {
			all = append(all, requiredUnless(f))
		}
		if f.ConflictsWith != "" {
			all = append(all, obj{"not": obj{"required": []string{f.Name, f.ConflictsWith}, "properties": obj{
				f.Name: obj{"type": "string", "minLength": 1}, f.ConflictsWith: obj{"type": "string", "minLength": 1}}}})
		}
	}
	s := obj{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	if len(all) > 0 {
		s["allOf"] = all
	}
	return s
}

// requiredUnless: f is required (non-blank) unless its other field is a
// non-empty string.
func requiredUnless(f spec.Field) obj {
	return obj{"anyOf": []any{
		obj{"required": []string{f.Name}, "properties": obj{f.Name: obj{"type": "string", "pattern": nonBlank}}},
		obj{"required": []string{f.RequiredUnless}, "properties": obj{f.RequiredUnless: obj{"type": "string", "minLength": 1}}},
	}}
}

// field is the schema of one field; an optional field also takes null.
func (g *gen) field(f spec.Field, variant string) obj {
	s := g.value(f, variant)
	if f.Doc != "" {
		s["description"] = f.Doc
	}
	if f.Default != nil {
		s["default"] = f.Default
	}
	if f.Required {
		return s
	}
	if t, ok := s["type"].(string); ok {
		s["type"] = []string{t, "null"}
	}
	if e, ok := s["enum"].([]any); ok {
		s["enum"] = append(e, nil)
	}
	if one, ok := s["anyOf"].([]any); ok {
		s["anyOf"] = append(one, obj{"type": "null"})
	}
	return s
}

// value is the schema of a field's (non-null) value.
func (g *gen) value(f spec.Field, variant string) obj {
	switch f.Kind {
	case spec.KindImage, spec.KindDataImage:
		return g.image(f)
	case spec.KindText:
		s := obj{"type": "string", "maxLength": f.MaxChars}
		if f.Required && f.RequiredUnless == "" {
			s["pattern"] = nonBlank
		}
		return s
	case spec.KindEnum, spec.KindEnumOrEmpty:
		e := anys(f.Enum)
		if f.Kind == spec.KindEnumOrEmpty {
			e = append(e, "")
		}
		return obj{"type": "string", "enum": e}
	case spec.KindInt:
		hi := f.Max
		if mx, ok := f.MaxWhen[variant]; ok {
			hi = mx
		}
		s := obj{"type": "integer", "minimum": f.Min, "maximum": hi}
		if len(f.Ints) > 0 {
			s["enum"] = anys(f.Ints)
		}
		return s
	case spec.KindBool:
		return obj{"type": "boolean"}
	case spec.KindID:
		return obj{"type": "string", "maxLength": spec.MaxIDChars, "pattern": idPattern}
	case spec.KindAngles:
		return obj{"type": "array", "minItems": f.Min, "maxItems": f.Max, "uniqueItems": true, "items": obj{"type": "string", "enum": anys(f.Enum)}}
	case spec.KindPoses:
		var one []any
		for _, v := range f.Items.Variants() {
			one = append(one, g.poseObject(f.Items, v))
		}
		return obj{"type": "array", "minItems": f.Min, "maxItems": f.Max, "items": obj{"oneOf": one}}
	}
	panic("api: no schema for input " + f.Name)
}

// poseObject is one pose variant: only its own fields are accepted.
func (g *gen) poseObject(m *spec.Object, variant string) obj {
	sub := &spec.Object{Variant: m.Variant}
	for _, f := range m.Fields {
		if f.When == "" || f.When == variant {
			sub.Fields = append(sub.Fields, f)
		}
	}
	return g.object(sub, variant)
}

// image: an http(s) URL or a data URI (data URI only for spec.KindDataImage);
// an optional image may be "".
func (g *gen) image(f spec.Field) obj {
	data := obj{"type": "string", "pattern": dataURIPattern, "maxLength": g.maxString, "description": "data:image/<jpeg|png|webp>;base64,<data>"}
	var one []any
	if f.Kind == spec.KindImage {
		one = append(one, obj{"type": "string", "pattern": urlPattern, "maxLength": fetch.MaxURLLength, "description": "http(s) URL"})
	}
	one = append(one, data)
	if !f.Required {
		one = append(one, obj{"type": "string", "maxLength": 0})
	}
	return obj{"anyOf": one}
}

func anys[T any](xs []T) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// ---- response schemas ----

func errorSchema() obj {
	return obj{"type": "object", "required": []string{"error", "code", "message"}, "properties": obj{
		"error":   obj{"type": "string", "description": "A sentence naming the field and the rule."},
		"code":    obj{"type": "string", "description": "Stable machine-readable code (see each response)."},
		"field":   obj{"type": "string", "description": "JSON path of the offending value, e.g. inputs.poses[1].cdnUrl."},
		"message": obj{"type": "string", "description": "Repeats error."},
		"balance": obj{"type": "integer", "description": "402 only."},
		"cost":    obj{"type": "integer", "description": "402 only."},
		"model":   obj{"type": "string", "description": "503 model_unavailable only."},
		"status":  obj{"type": "string", "description": "409 not_cancelable only: the job's final status."},
	}}
}

func jobSchema() obj {
	statuses := anys(spec.StatusWords)
	return obj{"type": "object", "required": []string{"id", "model_name", "status", "created_at", "error", "output", "credits_used"}, "properties": obj{
		"id":               obj{"type": "string"},
		"model_name":       ref("ModelName"),
		"status":           obj{"type": "string", "enum": statuses, "description": "success (prompt-tryon) or succeeded (the others) when done."},
		"created_at":       obj{"type": "string", "format": "date-time"},
		"updated_at":       obj{"type": "string", "format": "date-time"},
		"error":            obj{"type": []string{"string", "null"}},
		"output":           obj{"type": []string{"array", "null"}, "items": obj{"type": "string"}, "description": "Result URLs (or data URIs); null while there is none."},
		"progress":         obj{"type": "object", "required": []string{"stage", "fraction"}, "properties": obj{"stage": obj{"type": "string"}, "fraction": obj{"type": "number", "minimum": 0, "maximum": 1}, "detail": obj{"type": "string"}, "attempt": obj{"type": "integer"}}},
		"outputs_info":     obj{"type": "array", "items": obj{"type": "object", "required": []string{"path"}, "properties": obj{"path": obj{"type": "string"}, "method": obj{"type": "string"}, "notes": obj{"type": "array", "items": obj{"type": "string"}}, "checks": obj{"type": "array"}}}},
		"credits_used":     obj{"type": "integer", "minimum": 0, "description": "What the job finally cost (0 once refunded)."},
		"credits_refunded": obj{"type": "integer", "minimum": 0},
		"queue":            obj{"type": "object", "required": []string{"position", "ahead", "eta_seconds"}, "properties": obj{"position": obj{"type": "integer", "minimum": 1}, "ahead": obj{"type": "integer", "minimum": 0}, "eta_seconds": obj{"type": []string{"number", "null"}}, "held": obj{"type": "boolean"}}},
	}}
}

func modelInfoSchema() obj {
	return obj{"type": "object", "required": []string{"name", "lifecycle", "served", "workers", "stages", "generative_models"}, "properties": obj{
		"name": ref("ModelName"), "lifecycle": obj{"type": "string", "enum": spec.LifecycleLabels},
		"served": obj{"type": "boolean"}, "workers": obj{"type": "integer", "minimum": 0}, "stages": obj{"type": "string", "description": "generative or reference (a live worker's stages; empty when unknown)."},
		"generative_models": obj{"type": []string{"array", "null"}, "items": obj{"type": "string"}},
	}}
}

func savedModelSchema() obj {
	nums := obj{"type": "array", "items": obj{"type": "number"}}
	return obj{"type": "object", "required": []string{"id", "name", "source", "image_url", "width", "height", "created_at"}, "properties": obj{
		"id": obj{"type": "string"}, "name": obj{"type": "string"}, "source": obj{"type": "string", "enum": spec.ModelCreateTypes},
		"image_url": obj{"type": "string"}, "width": obj{"type": "integer"}, "height": obj{"type": "integer"},
		"face_box": nums, "face_landmarks": nums, "keypoints": nums, "created_at": obj{"type": "string", "format": "date-time"},
	}}
}

// ---- paths ----

func headers() obj {
	str := func(d string) obj { return obj{"schema": obj{"type": "string"}, "description": d} }
	return obj{
		HeaderCreditsUsed:        obj{"schema": obj{"type": "integer"}, "description": "What the job finally cost."},
		HeaderFashnCreditsUsed:   obj{"schema": obj{"type": "integer"}, "description": "Same as X-Credits-Used (read by the fashn SDK)."},
		HeaderIdempotentReplayed: str("true when the answer is the job of an earlier request with the same Idempotency-Key."),
		HeaderRateLimit:          str(`The key's remaining requests: "per-key";r=<remaining>;t=<seconds to reset>.`),
		HeaderRateLimitPolicy:    str(`The key's limit: "per-key";q=<burst>;w=<window seconds>.`),
		"Retry-After":            obj{"schema": obj{"type": "integer"}, "description": "Seconds to wait before retrying."},
		"X-Should-Retry":         str("false: the request must not be retried as is; true: a retry is safe (a write not yet confirmed by the Redis replicas, retried with the same Idempotency-Key)."),
	}
}

func hdrs(names ...string) obj {
	out := obj{}
	for _, n := range names {
		out[n] = obj{"$ref": "#/components/headers/" + n}
	}
	return out
}

// errorCodes lists the codes of each error status (validate.go, errors.go, client.go).
var errorCodes = map[int][]string{
	http.StatusBadRequest: {CodeInvalidJSON, CodeMissingField, CodeInvalidType, CodeInvalidValue, CodeOutOfRange, CodeTooLong,
		CodeEmptyValue, CodeDuplicateValue, CodeUnknownField, CodeUnknownModel, CodeFieldNotAllowed, CodeConflictingFields,
		CodeInvalidImage, CodeMissingDataURIPrefix, CodeImageTooLarge, CodeInvalidURL, CodeURLRefused, CodeUnknownFaceModel,
		CodeUnknownPoseModel, CodeDuplicateKey, CodeInvalidUTF8, CodeInvalidIdempotencyKey, CodeInvalidParameter},
	http.StatusUnauthorized:          {CodeUnauthorized},
	http.StatusPaymentRequired:       {CodeInsufficientCredits},
	http.StatusNotFound:              {CodeNotFound},
	http.StatusMethodNotAllowed:      {CodeMethodNotAllowed},
	http.StatusRequestTimeout:        {CodeRequestTimeout},
	http.StatusConflict:              {CodeIdempotencyInProgress, CodeNotCancelable, CodeJobUnfinished},
	http.StatusRequestEntityTooLarge: {CodeBodyTooLarge},
	http.StatusUnsupportedMediaType:  {CodeUnsupportedMediaType},
	http.StatusUnprocessableEntity:   {CodeIdempotencyReused},
	http.StatusTooManyRequests:       {CodeRateLimited, CodeTooManyJobs, CodeInputQuota},
	http.StatusInternalServerError:   {CodeInternal},
	http.StatusServiceUnavailable:    {CodeBackendUnavailable, CodeModelUnavailable, CodeBusy, CodeNotReady},
}

// errResp is an error response of status with its codes.
func errResp(status int) obj {
	codes := errorCodes[status]
	schema := obj{"allOf": []any{ref("Error"), obj{"properties": obj{"code": obj{"enum": codes}}}}}
	return obj{"description": fmt.Sprintf("%s; code is one of: %v", http.StatusText(status), codes),
		"headers": hdrs("Retry-After", "X-Should-Retry"),
		"content": obj{"application/json": obj{"schema": schema}}}
}

func jsonResp(desc string, schema obj, headerNames ...string) obj {
	r := obj{"description": desc, "content": obj{"application/json": obj{"schema": schema}}}
	if len(headerNames) > 0 {
		r["headers"] = hdrs(headerNames...)
	}
	return r
}

// op is an authenticated operation answering ok with the error statuses
// every authenticated call can give plus extra.
func op(summary string, ok obj, okStatus int, extra ...int) obj {
	resp := obj{strconv.Itoa(okStatus): ok}
	for _, s := range append([]int{401, 429, 503}, extra...) {
		resp[strconv.Itoa(s)] = errResp(s)
	}
	return obj{"summary": summary, "responses": resp}
}

func paths() obj {
	jobHdr := []string{HeaderCreditsUsed, HeaderFashnCreditsUsed, HeaderRateLimit, HeaderRateLimitPolicy}
	run := op("Submit a job", jsonResp("Accepted (201; 200 for prompt-tryon, tryon and image-to-video).", ref("Job"), append(slices.Clone(jobHdr), HeaderIdempotentReplayed)...), 201, 400, 402, 409, 413, 415, 422, 408, 500)
	run["responses"].(obj)["200"] = jsonResp("Accepted (prompt-tryon, tryon, image-to-video).", ref("Job"), append(slices.Clone(jobHdr), HeaderIdempotentReplayed)...)
	run["requestBody"] = obj{"required": true, "content": obj{"application/json": obj{"schema": ref("RunRequest")}}}
	run["parameters"] = []any{
		obj{"name": HeaderIdempotencyKey, "in": "header", "schema": obj{"type": "string", "minLength": 1, "maxLength": jobs.MaxIdempotencyKeyLen, "pattern": idemPattern}, "description": "Repeat a request safely: the same key and body within 24 hours answer the same job."},
		obj{"name": "webhook_url", "in": "query", "schema": obj{"type": "string", "pattern": urlPattern}},
	}
	status := op("A job's status", obj{"description": "The job; with Accept: text/event-stream, a stream of status events (the job as data) ending with the terminal one.",
		"headers": hdrs(jobHdr...),
		"content": obj{"application/json": obj{"schema": ref("Job")}, "text/event-stream": obj{"schema": obj{"type": "string"}}}}, 200, 404)
	status["parameters"] = []any{obj{"$ref": "#/components/parameters/JobID"}}
	cancel := op("Cancel a queued or running job (refunded)", jsonResp("The cancelled job.", ref("Job"), jobHdr...), 200, 404, 409)
	cancel["parameters"] = status["parameters"]
	list := op("Job history, newest first", jsonResp("A page of jobs.", obj{"type": "object", "required": []string{"jobs", "next_cursor"}, "properties": obj{
		"jobs": obj{"type": "array", "items": ref("Job")}, "next_cursor": obj{"type": []string{"string", "null"}}}}), 200, 400)
	list["parameters"] = []any{
		obj{"name": "limit", "in": "query", "schema": obj{"type": "integer", "minimum": 1, "maximum": jobs.MaxListLimit}},
		obj{"name": "cursor", "in": "query", "schema": obj{"type": "string"}},
		obj{"name": "model_name", "in": "query", "schema": ref("ModelName")},
		obj{"name": "status", "in": "query", "schema": obj{"type": "string", "enum": jobStatuses}},
	}
	del := op("Delete an ended job and its outputs", jsonResp("Deleted.", obj{"type": "object", "required": []string{"id", "deleted"}, "properties": obj{"id": obj{"type": "string"}, "deleted": obj{"const": true}}}), 200, 404, 409)
	del["parameters"] = status["parameters"]
	saved := op("A saved model", jsonResp("The saved model.", ref("SavedModel")), 200, 404)
	saved["parameters"] = status["parameters"]
	public := func(summary string, s obj, extra ...int) obj {
		resp := obj{"200": jsonResp("OK", s)}
		for _, c := range extra {
			resp[strconv.Itoa(c)] = errResp(c)
		}
		return obj{"summary": summary, "security": []any{}, "responses": resp}
	}
	return obj{
		"/v1/run":               obj{"post": run},
		"/v1/status/{id}":       obj{"get": status},
		"/v1/cancel/{id}":       obj{"post": cancel},
		"/v1/jobs":              obj{"get": list},
		"/v1/jobs/{id}":         obj{"delete": del},
		"/v1/credits":           obj{"get": op("The key's credit balance", jsonResp("The balance.", ref("CreditBalance")), 200)},
		"/v1/models":            obj{"get": op("The models and whether a worker serves them", jsonResp("The models.", obj{"type": "object", "required": []string{"models"}, "properties": obj{"models": obj{"type": "array", "items": ref("ModelInfo")}}}), 200)},
		"/v1/models/saved":      obj{"get": op("The key's saved models (model-create)", jsonResp("The saved models.", obj{"type": "object", "required": []string{"models"}, "properties": obj{"models": obj{"type": "array", "items": ref("SavedModel")}}}), 200)},
		"/v1/models/saved/{id}": obj{"get": saved},
		"/healthz":              obj{"get": public("Liveness", ref("Health"))},
		"/readyz":               obj{"get": public("Readiness (the job store answers)", ref("Health"), 503)},
		"/openapi.json":         obj{"get": public("This document", obj{"type": "object"})},
	}
}

// healthSchema is the body of /healthz and of a 200 /readyz.
func healthSchema() obj {
	return obj{"type": "object", "required": []string{"status", "version"}, "properties": obj{
		"status": obj{"type": "string", "enum": []string{"ok", "ready", "degraded"},
			"description": "ok (healthz); ready, or degraded while submissions are refused for want of online Redis replicas (readyz, with wait_replicas)"},
		"version":           obj{"type": "string"},
		"detail":            obj{"type": "string"},
		"replicas_online":   obj{"type": "integer"},
		"replicas_required": obj{"type": "integer"},
	}}
}

// openapi serves the document of o, encoded once.
func (s *server) openapi(o Options) http.HandlerFunc {
	doc, err := marshal(OpenAPI(o))
	return func(w http.ResponseWriter, r *http.Request) {
		if err != nil {
			writeError(w, http.StatusInternalServerError, CodeInternal, "", "the OpenAPI document could not be encoded")
			return
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		w.Write(doc)
	}
}
