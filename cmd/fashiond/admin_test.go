package main

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestRequireToken(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
	h := requireToken("s3cret-admin-token", ok)
	cases := []struct {
		name string
		set  func(*http.Request)
		want int
	}{
		{"none", func(*http.Request) {}, http.StatusUnauthorized},
		{"basic", func(r *http.Request) { r.SetBasicAuth("admin", "s3cret-admin-token") }, http.StatusTeapot},
		{"basic, any user", func(r *http.Request) { r.SetBasicAuth("", "s3cret-admin-token") }, http.StatusTeapot},
		{"basic, wrong", func(r *http.Request) { r.SetBasicAuth("admin", "s3cret-admin-tokeN") }, http.StatusUnauthorized},
		{"bearer", func(r *http.Request) { r.Header.Set("Authorization", "Bearer s3cret-admin-token") }, http.StatusTeapot},
		{"bearer, prefix only", func(r *http.Request) { r.Header.Set("Authorization", "Bearer s3cret") }, http.StatusUnauthorized},
		{"an API key header", func(r *http.Request) { r.Header.Set("x-api-key", "s3cret-admin-token") }, http.StatusUnauthorized},
	}
	for _, c := range cases {
		r := httptest.NewRequest("GET", "/admin/queues/", nil)
		c.set(r)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != c.want {
			t.Errorf("%s: %d, want %d", c.name, w.Code, c.want)
		}
		if c.want == http.StatusUnauthorized && w.Header().Get("WWW-Authenticate") == "" {
			t.Errorf("%s: no WWW-Authenticate", c.name)
		}
	}
	if got := withAdmin(ok, "", nil); got == nil {
		t.Fatal("no handler without a token")
	}
	w := httptest.NewRecorder()
	withAdmin(ok, "", nil).ServeHTTP(w, httptest.NewRequest("GET", "/admin/queues/", nil))
	if w.Code != http.StatusTeapot {
		t.Fatalf("without a token the path must be the API's own (got %d)", w.Code)
	}
}
