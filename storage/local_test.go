package storage

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func newLocal(t *testing.T) *Local {
	t.Helper()
	l, err := NewLocal(t.TempDir(), "http://cdn.example/cdn/")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestPutOpen(t *testing.T) {
	ctx := context.Background()
	l := newLocal(t)
	tests := []struct {
		key, ct string
		ok      bool
	}{
		{"job1/0.jpg", "image/jpeg", true},
		{"job1/1.png", "image/png", true},
		{"job2/0.mp4", "video/mp4", true},
		{"studio/abcd/x.PNG", "image/png", true},
		{"job1/0.jpg", "image/png", false}, // type does not match extension
		{"job1/0.txt", "text/plain", false},
		{"../x.png", "image/png", false},
		{"/abs.png", "image/png", false},
		{"a//b.png", "image/png", false},
		{"a/./b.png", "image/png", false},
		{"a b.png", "image/png", false},
		{"", "image/png", false},
	}
	for _, tc := range tests {
		body := []byte("data of " + tc.key)
		err := l.Put(ctx, tc.key, tc.ct, bytes.NewReader(body))
		if (err == nil) != tc.ok {
			t.Errorf("Put(%q, %q) err = %v, want ok=%v", tc.key, tc.ct, err, tc.ok)
			continue
		}
		if !tc.ok {
			continue
		}
		rc, ct, err := l.Open(ctx, tc.key)
		if err != nil {
			t.Fatalf("Open(%q): %v", tc.key, err)
		}
		got, _ := io.ReadAll(rc)
		rc.Close()
		if ct != tc.ct || !bytes.Equal(got, body) {
			t.Errorf("Open(%q) = %q, %q; want %q, %q", tc.key, got, ct, body, tc.ct)
		}
	}
	if _, _, err := l.Open(ctx, "nope/0.png"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Open missing: err = %v, want ErrNotFound", err)
	}
	if got, want := l.URL("job1/0.jpg"), "http://cdn.example/cdn/job1/0.jpg"; got != want {
		t.Errorf("URL = %q, want %q", got, want)
	}
	// No temporary files are left behind.
	ents, _ := os.ReadDir(filepath.Join(l.Dir(), "job1"))
	if len(ents) != 2 {
		t.Errorf("job1 holds %d entries, want 2", len(ents))
	}
}

func TestDeletePrefix(t *testing.T) {
	ctx := context.Background()
	l := newLocal(t)
	for _, k := range []string{"a/0.png", "a/1.jpg", "ab/0.png", "b/x0.png", "b/x1.png", "b/y0.png"} {
		if err := l.Put(ctx, k, ContentTypeOf(k), strings.NewReader("x")); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		prefix     string
		gone, kept []string
	}{
		{"a/", []string{"a/0.png", "a/1.jpg"}, []string{"ab/0.png"}},
		{"b/x", []string{"b/x0.png", "b/x1.png"}, []string{"b/y0.png"}},
		{"missing/", nil, []string{"ab/0.png", "b/y0.png"}},
	}
	for _, tc := range tests {
		if err := l.DeletePrefix(ctx, tc.prefix); err != nil {
			t.Fatalf("DeletePrefix(%q): %v", tc.prefix, err)
		}
		for _, k := range tc.gone {
			if _, _, err := l.Open(ctx, k); !errors.Is(err, ErrNotFound) {
				t.Errorf("after DeletePrefix(%q) %s: err = %v, want ErrNotFound", tc.prefix, k, err)
			}
		}
		for _, k := range tc.kept {
			rc, _, err := l.Open(ctx, k)
			if err != nil {
				t.Errorf("after DeletePrefix(%q) %s is gone: %v", tc.prefix, k, err)
				continue
			}
			rc.Close()
		}
	}
	if err := l.DeletePrefix(ctx, "../"); err == nil {
		t.Error("DeletePrefix(../) succeeded")
	}
}

func TestHandler(t *testing.T) {
	ctx := context.Background()
	l := newLocal(t)
	jpg := bytes.Repeat([]byte{0xff, 0xd8, 1, 2}, 100)
	if err := l.Put(ctx, "j/0.jpg", "image/jpeg", bytes.NewReader(jpg)); err != nil {
		t.Fatal(err)
	}
	if err := l.Put(ctx, "j/1.mp4", "video/mp4", strings.NewReader("mp4data")); err != nil {
		t.Fatal(err)
	}
	// A job input: stored, never served.
	if err := l.Put(ctx, "private/inputs/j/0.png", "image/png", strings.NewReader("secret input")); err != nil {
		t.Fatal(err)
	}
	// A file outside the root that traversal would reach.
	if err := os.WriteFile(filepath.Join(filepath.Dir(l.Dir()), "secret.png"), []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.StripPrefix("/cdn", l.Handler()))
	defer srv.Close()
	tests := []struct {
		method, path string
		code         int
		ct, body     string
	}{
		{"GET", "/cdn/j/0.jpg", 200, "image/jpeg", string(jpg)},
		{"HEAD", "/cdn/j/0.jpg", 200, "image/jpeg", ""},
		{"GET", "/cdn/j/1.mp4", 200, "video/mp4", "mp4data"},
		{"GET", "/cdn/j/2.jpg", 404, "", ""},
		{"GET", "/cdn/j", 404, "", ""},
		{"GET", "/cdn/j/", 404, "", ""},
		{"GET", "/cdn/", 404, "", ""},
		{"GET", "/cdn/../secret.png", 404, "", ""},
		{"GET", "/cdn/%2e%2e/secret.png", 404, "", ""},
		{"GET", "/cdn/j/..%2f..%2fsecret.png", 404, "", ""},
		{"POST", "/cdn/j/0.jpg", 405, "", ""},
		{"GET", "/cdn/private/inputs/j/0.png", 404, "", ""},
	}
	for _, tc := range tests {
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, nil)
		req.URL.Opaque = tc.path // keep dot segments and escapes as written
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("%s %s: %d, want %d", tc.method, tc.path, resp.StatusCode, tc.code)
			continue
		}
		if tc.code != 200 {
			if strings.Contains(string(b), "secret") {
				t.Errorf("%s %s leaked the file outside the root", tc.method, tc.path)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") || !strings.Contains(string(b), `"code":"`) {
				t.Errorf("%s %s: error answer %q (%s), want the JSON error body", tc.method, tc.path, b, ct)
			}
			continue
		}
		if got := resp.Header.Get("Content-Type"); got != tc.ct {
			t.Errorf("%s %s: Content-Type %q, want %q", tc.method, tc.path, got, tc.ct)
		}
		if string(b) != tc.body {
			t.Errorf("%s %s: body %d bytes, want %d", tc.method, tc.path, len(b), len(tc.body))
		}
	}
	// Range requests work (video players rely on them).
	req, _ := http.NewRequest("GET", srv.URL+"/cdn/j/1.mp4", nil)
	req.Header.Set("Range", "bytes=0-2")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusPartialContent || string(b) != "mp4" {
		t.Errorf("Range: %d %q, want 206 \"mp4\"", resp.StatusCode, b)
	}
}

// FuzzCheckKey: any key CheckKey accepts stays inside the root.
func FuzzCheckKey(f *testing.F) {
	for _, s := range []string{"a/0.png", "../x.png", "a/../../b.jpg", "..", "a\\..\\b.png", "x.mp4", "%2e%2e/a.png"} {
		f.Add(s)
	}
	root := filepath.FromSlash("/srv/blobs")
	f.Fuzz(func(t *testing.T, key string) {
		if CheckKey(key) != nil {
			return
		}
		p := filepath.Join(root, filepath.FromSlash(key))
		if !strings.HasPrefix(p, root+string(filepath.Separator)) {
			t.Fatalf("key %q escapes the root: %s", key, p)
		}
		if ContentTypeOf(key) == "" {
			t.Fatalf("accepted key %q has no content type", key)
		}
	})
}
