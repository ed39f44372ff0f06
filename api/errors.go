package api

import "net/http"

// Error codes of non-400 responses.
const (
	CodeUnauthorized         = "unauthorized"           // 401
	CodeInsufficientCredits  = "insufficient_credits"   // 402
	CodeNotFound             = "not_found"              // 404
	CodeMethodNotAllowed     = "method_not_allowed"     // 405
	CodeBodyTooLarge         = "body_too_large"         // 413
	CodeUnsupportedMediaType = "unsupported_media_type" // 415
	CodeInputQuota           = "input_quota_exceeded"   // 429
	CodeInternal             = "internal_error"         // 500
	CodeModelUnavailable     = "model_unavailable"      // 503
	CodeBackendUnavailable   = "backend_unavailable"    // 503
	CodeNotReady             = "not_ready"              // 503 (readyz)
)

// ErrorBody is the JSON body of every error response. Message repeats
// Error so that clients that read a "message" field (the fashn SDK builds
// its exception text from it) show the sentence.
type ErrorBody struct {
	Error   string `json:"error"`
	Code    string `json:"code"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
	// 402 only.
	Balance *int64 `json:"balance,omitempty"`
	Cost    *int   `json:"cost,omitempty"`
	// 503 model_unavailable only.
	Model string `json:"model,omitempty"`
	// 409 not_cancelable only: the job's final status.
	Status string `json:"status,omitempty"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":"the response could not be encoded","code":"internal_error","message":"the response could not be encoded"}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(b)
	w.Write([]byte("\n"))
}

func writeError(w http.ResponseWriter, status int, code, field, msg string) {
	writeJSON(w, status, ErrorBody{Error: msg, Code: code, Field: field, Message: msg})
}

func writeValidation(w http.ResponseWriter, e *ValidationError) {
	writeError(w, http.StatusBadRequest, e.Code, e.Field, e.Msg)
}
