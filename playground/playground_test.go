package playground

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// notFound stands in for the API's JSON 404 in these tests.
var notFound = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	http.Error(w, "not found here", http.StatusTeapot)
})

func get(h http.Handler, path string) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
	return w
}

// TestPage: the page references exactly its two files, by relative URLs
// (so it works behind a path prefix), and nothing from another origin.
func TestPage(t *testing.T) {
	w := get(http.HandlerFunc(ServePage), "/")
	if w.Code != 200 || w.Header().Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("GET /: %d %q", w.Code, w.Header().Get("Content-Type"))
	}
	body := w.Body.String()
	refs := regexp.MustCompile(`<(?:script|link)[^>]+(?:src|href)="([^"]+)"`).FindAllStringSubmatch(body, -1)
	want := []string{"playground/style.css", "playground/app.js"}
	if len(refs) != len(want) {
		t.Fatalf("page loads %v, want %v", refs, want)
	}
	for i, m := range refs {
		if m[1] != want[i] {
			t.Errorf("reference %d is %q, want %q", i, m[1], want[i])
		}
	}
	for _, id := range []string{`id="api-key"`, `id="model"`, `id="fields"`, `id="submit"`, `id="cancel"`, `id="outputs"`, `href="docs"`} {
		if !strings.Contains(body, id) {
			t.Errorf("page lacks %s", id)
		}
	}
	for _, h := range []string{"Content-Security-Policy", "X-Content-Type-Options", "Cache-Control", "Referrer-Policy"} {
		if w.Header().Get(h) == "" {
			t.Errorf("page without %s", h)
		}
	}
}

// TestAssets: each file with its type; anything else under the prefix
// goes to notFound (no listing, no other embedded file).
func TestAssets(t *testing.T) {
	h := Assets(notFound)
	for _, tc := range []struct {
		path, ctype, contains string
		status                int
	}{
		{"/playground/app.js", "text/javascript; charset=utf-8", "function imageWidget", 200},
		{"/playground/style.css", "text/css; charset=utf-8", ".field-error", 200},
		{"/playground/", "", "not found here", http.StatusTeapot},
		{"/playground/index.html", "", "not found here", http.StatusTeapot},
		{"/playground/static/app.js", "", "not found here", http.StatusTeapot},
		{"/app.js", "", "not found here", http.StatusTeapot},
	} {
		w := get(h, tc.path)
		if w.Code != tc.status || (tc.ctype != "" && w.Header().Get("Content-Type") != tc.ctype) || !strings.Contains(w.Body.String(), tc.contains) {
			t.Errorf("GET %s: %d %q, want %d %q containing %q", tc.path, w.Code, w.Header().Get("Content-Type"), tc.status, tc.ctype, tc.contains)
		}
	}
}

// TestNoOtherOrigin: no embedded file names another origin; the page must
// work with no internet (the links to /docs are relative too).
func TestNoOtherOrigin(t *testing.T) {
	for _, name := range []string{"static/index.html", "static/app.js", "static/style.css"} {
		b, err := files.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`(?:https?:)?//[A-Za-z0-9.-]+\.[a-z]{2,}`).FindAllString(string(b), -1) {
			t.Errorf("%s names another origin: %s", name, m)
		}
	}
}

// FuzzAssets: whatever the path, the answer is one of the two files or
// notFound; never another embedded file, never a panic.
func FuzzAssets(f *testing.F) {
	for _, s := range []string{"/playground/app.js", "/playground/../static/index.html", "/playground/", "/playground/style.css%00", "/x"} {
		f.Add(s)
	}
	h := Assets(notFound)
	app, _ := files.ReadFile("static/app.js")
	css, _ := files.ReadFile("static/style.css")
	f.Fuzz(func(t *testing.T, p string) {
		r := httptest.NewRequest("GET", "/", nil)
		r.URL.Path = p
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		switch {
		case w.Code == http.StatusTeapot:
		case p == "/playground/app.js" && w.Body.String() == string(app):
		case p == "/playground/style.css" && w.Body.String() == string(css):
		default:
			t.Fatalf("path %q: %d, %d bytes", p, w.Code, w.Body.Len())
		}
	})
}
