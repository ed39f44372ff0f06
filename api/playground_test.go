package api

import (
	"strings"
	"testing"
)

// TestPlaygroundMount: "/" exactly is the playground page with its two
// files under /playground/; every other unknown path is still the JSON
// 404 it was, and other methods on "/" are a 405 like every route's.
func TestPlaygroundMount(t *testing.T) {
	hs := newHarness(t)
	for _, tc := range []struct {
		method, path string
		status       int
		ctype        string
		contains     string
	}{
		{"GET", "/", 200, "text/html", `<script src="playground/app.js"`},
		{"HEAD", "/", 200, "text/html", ""},
		{"GET", "/playground/app.js", 200, "text/javascript", "openapi.json"},
		{"GET", "/playground/style.css", 200, "text/css", ".field"},
		{"POST", "/", 405, "application/json", `"code":"method_not_allowed"`},
		{"GET", "/index.html", 404, "application/json", `"no endpoint GET /index.html"`},
		{"GET", "/v1", 404, "application/json", `"code":"not_found"`},
		{"GET", "/playground/", 404, "application/json", `"code":"not_found"`},
		{"GET", "/playground/index.html", 404, "application/json", `"code":"not_found"`},
		{"GET", "/playground/../openapi.json", 307, "text/html", `href="/openapi.json"`}, // the mux cleans the path
		{"POST", "/playground/app.js", 404, "application/json", `"code":"not_found"`},
		{"GET", "/nope/", 404, "application/json", `"no endpoint GET /nope/"`},
	} {
		r := hs.do(tc.method, tc.path, "", "")
		if r.status != tc.status || !strings.HasPrefix(r.header.Get("Content-Type"), tc.ctype) || !strings.Contains(string(r.body), tc.contains) {
			t.Errorf("%s %s: %d %q %.120q, want %d %s containing %q", tc.method, tc.path, r.status, r.header.Get("Content-Type"), r.body, tc.status, tc.ctype, tc.contains)
		}
	}
	if r := hs.do("GET", "/", "", ""); r.header.Get("Content-Security-Policy") == "" {
		t.Error("the page has no Content-Security-Policy")
	}
}
