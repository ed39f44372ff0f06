package api

import (
	"regexp"
	"strings"
	"testing"
)

// TestDocsPage: /docs is a page that loads the embedded viewer from
// /docs/assets/ and points it at openapi.json, with nothing from the
// internet.
func TestDocsPage(t *testing.T) {
	hs := newHarness(t)
	page := hs.do("GET", "/docs", "", "")
	if page.status != 200 || !strings.HasPrefix(page.header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /docs: %d %q", page.status, page.header.Get("Content-Type"))
	}
	refs := regexp.MustCompile(`(?:src|href)="([^"]+)"`).FindAllStringSubmatch(string(page.body), -1)
	want := []string{"docs/assets/swagger-ui.css", "docs/assets/swagger-ui-bundle.js", "docs/assets/init.js"}
	if len(refs) != len(want) {
		t.Fatalf("page references %v, want %v", refs, want)
	}
	for i, m := range refs {
		if m[1] != want[i] {
			t.Errorf("reference %d: %s, want %s", i, m[1], want[i])
		}
	}
	for _, tc := range []struct {
		path, ctype, contains string
		minSize               int
	}{
		{"/docs/assets/swagger-ui-bundle.js", "text/javascript", "SwaggerUIBundle", 1 << 20},
		{"/docs/assets/swagger-ui.css", "text/css", ".swagger-ui", 100 << 10},
		{"/docs/assets/init.js", "text/javascript", `new URL("openapi.json", document.baseURI)`, 50},
		{"/docs/assets/LICENSE", "text/plain", "Apache License", 10 << 10},
	} {
		r := hs.do("GET", tc.path, "", "")
		if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), tc.ctype) || len(r.body) < tc.minSize || !strings.Contains(string(r.body), tc.contains) {
			t.Errorf("GET %s: %d %q, %d bytes", tc.path, r.status, r.header.Get("Content-Type"), len(r.body))
		}
	}
	if r := hs.do("GET", "/docs/assets/", "", ""); r.status != 404 {
		t.Errorf("GET /docs/assets/: %d, want 404 (no listing)", r.status)
	}
	if r := hs.do("GET", "/docs/assets/nope.js", "", ""); r.status != 404 {
		t.Errorf("GET /docs/assets/nope.js: %d, want 404", r.status)
	}
	if strings.Contains(string(page.body), "://") {
		t.Error("the page loads something from another origin")
	}
	if r := hs.do("GET", "/openapi.json", "", ""); r.status != 200 || r.json["openapi"] != OpenAPIVersion {
		t.Errorf("GET /openapi.json (what the page renders): %d", r.status)
	}
}
