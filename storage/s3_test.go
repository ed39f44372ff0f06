package storage_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fashiond/internal/s3test"
	"fashiond/storage"
)

// The tests of this file run against a real S3 server process (versitygw,
// see s3test), not a fake.

const testBucket = "fashiond-test"

// newS3 starts a server with testBucket and opens a store on it.
func newS3(t *testing.T, prefix string, presign time.Duration) (*storage.S3, *s3test.Server) {
	t.Helper()
	srv := s3test.Start(t)
	srv.MakeBucket(t, testBucket)
	return openS3(t, srv, prefix, presign), srv
}

func openS3(t *testing.T, srv *s3test.Server, prefix string, presign time.Duration) *storage.S3 {
	t.Helper()
	s, err := storage.NewS3(context.Background(), storage.S3Options{
		Bucket: testBucket, Prefix: prefix, Endpoint: srv.Endpoint, Region: srv.Region,
		AccessKey: srv.AccessKey, SecretKey: srv.SecretKey, Lookup: storage.LookupPath,
		BaseURL: "http://cdn.example/cdn/", Presign: presign,
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestS3PutOpen(t *testing.T) {
	ctx := context.Background()
	s, srv := newS3(t, "tenant/a", 0)
	tests := []struct {
		key, ct string
		ok      bool
	}{
		{"job1/0.jpg", "image/jpeg", true},
		{"job1/1.png", "image/png", true},
		{"job2/0.mp4", "video/mp4", true},
		{"studio/abcd/x.PNG", "image/png", true},
		{"private/inputs/job1/ab.png", "image/png", true},
		{"job1/0.jpg", "image/png", false},
		{"job1/0.txt", "text/plain", false},
		{"../x.png", "image/png", false},
		{"/abs.png", "image/png", false},
		{"a//b.png", "image/png", false},
		{"a b.png", "image/png", false},
		{"", "image/png", false},
	}
	for _, tc := range tests {
		body := []byte("data of " + tc.key)
		err := s.Put(ctx, tc.key, tc.ct, bytes.NewReader(body))
		if (err == nil) != tc.ok {
			t.Errorf("Put(%q, %q) err = %v, want ok=%v", tc.key, tc.ct, err, tc.ok)
			continue
		}
		if !tc.ok {
			continue
		}
		rc, ct, err := s.Open(ctx, tc.key)
		if err != nil {
			t.Fatalf("Open(%q): %v", tc.key, err)
		}
		got, _ := io.ReadAll(rc)
		rc.Close()
		if ct != tc.ct || !bytes.Equal(got, body) {
			t.Errorf("Open(%q) = %q, %q; want %q, %q", tc.key, got, ct, body, tc.ct)
		}
	}
	if _, _, err := s.Open(ctx, "nope/0.png"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Open missing: err = %v, want ErrNotFound", err)
	}
	if _, _, err := s.Open(ctx, "../0.png"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Open invalid key: err = %v, want ErrNotFound", err)
	}
	// The objects are under the prefix in the bucket (the POSIX backend
	// keeps one file per object).
	if _, err := os.Stat(filepath.Join(srv.Dir, testBucket, "tenant", "a", "job1", "0.jpg")); err != nil {
		t.Errorf("object not under the prefix: %v", err)
	}
	if got, want := s.URL("job1/0.jpg"), "http://cdn.example/cdn/job1/0.jpg"; got != want {
		t.Errorf("URL = %q, want %q", got, want)
	}
}

// TestS3StreamedPut: an input of unknown length larger than one part is
// uploaded in parts and read back byte for byte; a replaced blob reads new.
func TestS3StreamedPut(t *testing.T) {
	ctx := context.Background()
	s, _ := newS3(t, "", 0)
	const size = 17 << 20 // more than one 16 MiB part
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i*7 + i>>11)
	}
	onlyReader := struct{ io.Reader }{bytes.NewReader(data)} // hides Len
	if err := s.Put(ctx, "private/inputs/j/big.png", "image/png", onlyReader); err != nil {
		t.Fatal(err)
	}
	rc, _, err := s.Open(ctx, "private/inputs/j/big.png")
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	n, err := io.Copy(h, rc)
	rc.Close()
	if err != nil || n != size || !bytes.Equal(h.Sum(nil), sha256Of(data)) {
		t.Fatalf("read back %d bytes (err %v), want %d identical bytes", n, err, size)
	}
	if err := s.Put(ctx, "private/inputs/j/big.png", "image/png", strings.NewReader("small")); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, s, "private/inputs/j/big.png"); got != "small" {
		t.Fatalf("replaced blob reads %d bytes, want \"small\"", len(got))
	}
}

func sha256Of(b []byte) []byte { h := sha256.Sum256(b); return h[:] }

func readAll(t *testing.T, s storage.Store, key string) string {
	t.Helper()
	rc, _, err := s.Open(context.Background(), key)
	if err != nil {
		t.Fatalf("Open(%s): %v", key, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestS3DeletePrefix(t *testing.T) {
	ctx := context.Background()
	s, srv := newS3(t, "p", 0)
	other := openS3(t, srv, "q", 0) // another deployment's prefix in the same bucket
	keys := []string{"a/0.png", "a/1.jpg", "a/sub/2.png", "ab/0.png", "b/x0.png", "b/x1.png", "b/y0.png"}
	for _, k := range keys {
		for _, st := range []*storage.S3{s, other} {
			if err := st.Put(ctx, k, storage.ContentTypeOf(k), strings.NewReader("x")); err != nil {
				t.Fatal(err)
			}
		}
	}
	tests := []struct {
		prefix     string
		gone, kept []string
	}{
		{"a/", []string{"a/0.png", "a/1.jpg", "a/sub/2.png"}, []string{"ab/0.png"}},
		{"b/x", []string{"b/x0.png", "b/x1.png"}, []string{"b/y0.png"}},
		{"missing/", nil, []string{"ab/0.png", "b/y0.png"}},
	}
	for _, tc := range tests {
		if err := s.DeletePrefix(ctx, tc.prefix); err != nil {
			t.Fatalf("DeletePrefix(%q): %v", tc.prefix, err)
		}
		for _, k := range tc.gone {
			if _, _, err := s.Open(ctx, k); !errors.Is(err, storage.ErrNotFound) {
				t.Errorf("after DeletePrefix(%q) %s: err = %v, want ErrNotFound", tc.prefix, k, err)
			}
		}
		for _, k := range tc.kept {
			if got := readAll(t, s, k); got != "x" {
				t.Errorf("after DeletePrefix(%q) %s reads %q", tc.prefix, k, got)
			}
		}
	}
	// The other prefix lost nothing.
	for _, k := range keys {
		if got := readAll(t, other, k); got != "x" {
			t.Errorf("other prefix's %s reads %q", k, got)
		}
	}
	for _, bad := range []string{"../", "", "/a/"} {
		if err := s.DeletePrefix(ctx, bad); err == nil {
			t.Errorf("DeletePrefix(%q) succeeded", bad)
		}
	}
}

// TestS3Handler: the /cdn/ route in front of a private bucket.
func TestS3Handler(t *testing.T) {
	ctx := context.Background()
	s, _ := newS3(t, "", 0)
	jpg := bytes.Repeat([]byte{0xff, 0xd8, 1, 2}, 100)
	puts := map[string]string{"j/0.jpg": string(jpg), "j/1.mp4": "mp4data", "private/inputs/j/0.png": "secret input"}
	for k, v := range puts {
		if err := s.Put(ctx, k, storage.ContentTypeOf(k), strings.NewReader(v)); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(http.StripPrefix("/cdn", s.Handler()))
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
		{"GET", "/cdn/../j/0.jpg", 404, "", ""},
		{"POST", "/cdn/j/0.jpg", 405, "", ""},
		{"GET", "/cdn/private/inputs/j/0.png", 404, "", ""},
	}
	for _, tc := range tests {
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, nil)
		req.URL.Opaque = tc.path
		code, ct, body := do(t, req)
		if code != tc.code {
			t.Errorf("%s %s: %d, want %d", tc.method, tc.path, code, tc.code)
			continue
		}
		if tc.code != 200 {
			if strings.Contains(body, "secret") || !strings.HasPrefix(ct, "application/json") {
				t.Errorf("%s %s: error answer %q (%s), want the JSON error body", tc.method, tc.path, body, ct)
			}
			continue
		}
		if ct != tc.ct || body != tc.body {
			t.Errorf("%s %s: %s, %d bytes; want %s, %d bytes", tc.method, tc.path, ct, len(body), tc.ct, len(tc.body))
		}
	}
	req, _ := http.NewRequest("GET", srv.URL+"/cdn/j/1.mp4", nil)
	req.Header.Set("Range", "bytes=2-4")
	if code, _, body := do(t, req); code != http.StatusPartialContent || body != "4da" {
		t.Errorf("Range: %d %q, want 206 \"4da\"", code, body)
	}
}

func do(t *testing.T, req *http.Request) (code int, ct, body string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
}

// TestS3Presign: presigned URLs fetch the blob from the server itself with
// no credentials, and stop working once they expire.
func TestS3Presign(t *testing.T) {
	ctx := context.Background()
	const validity = 2 * time.Second
	s, srv := newS3(t, "pre", validity)
	if err := s.Put(ctx, "j/0.png", "image/png", strings.NewReader("png bytes")); err != nil {
		t.Fatal(err)
	}
	u := s.URL("j/0.png")
	if !strings.HasPrefix(u, srv.Endpoint+"/"+testBucket+"/pre/j/0.png?") || !strings.Contains(u, "X-Amz-Expires=2") {
		t.Fatalf("presigned URL %q is not a 2 s GET URL of the object", u)
	}
	if strings.Contains(u, srv.SecretKey) {
		t.Fatal("the presigned URL carries the secret key")
	}
	req, _ := http.NewRequest("GET", u, nil)
	if code, _, body := do(t, req); code != 200 || body != "png bytes" {
		t.Fatalf("GET presigned: %d %q, want 200 \"png bytes\"", code, body)
	}
	// An unsigned GET of the same object is refused: the bucket is private.
	req, _ = http.NewRequest("GET", srv.Endpoint+"/"+testBucket+"/pre/j/0.png", nil)
	if code, _, _ := do(t, req); code != http.StatusForbidden {
		t.Fatalf("unsigned GET: %d, want 403", code)
	}
	time.Sleep(validity + time.Second)
	req, _ = http.NewRequest("GET", u, nil)
	if code, _, _ := do(t, req); code != http.StatusForbidden {
		t.Fatalf("GET expired presigned URL: %d, want 403", code)
	}
}

// TestS3SharedBucket: an API node and two workers, each with its own data
// directory but one bucket, see each other's blobs (the split deployment).
func TestS3SharedBucket(t *testing.T) {
	ctx := context.Background()
	api, srv := newS3(t, "prod", 0)
	w1, w2 := openS3(t, srv, "prod", 0), openS3(t, srv, "prod", 0)
	// The API spools an input; worker 1 reads it and writes the output;
	// worker 2's janitor pass deletes the job; the API serves nothing.
	if err := api.Put(ctx, "private/inputs/j1/in.png", "image/png", strings.NewReader("input")); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, w1, "private/inputs/j1/in.png"); got != "input" {
		t.Fatalf("worker reads %q", got)
	}
	if err := w1.Put(ctx, "j1/0.jpg", "image/jpeg", strings.NewReader("output")); err != nil {
		t.Fatal(err)
	}
	cdn := httptest.NewServer(http.StripPrefix("/cdn", api.Handler()))
	defer cdn.Close()
	req, _ := http.NewRequest("GET", cdn.URL+"/cdn/j1/0.jpg", nil)
	if code, _, body := do(t, req); code != 200 || body != "output" {
		t.Fatalf("API serves %d %q, want worker 1's output", code, body)
	}
	for _, p := range []string{"j1/", "private/inputs/j1/"} {
		if err := w2.DeletePrefix(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"j1/0.jpg", "private/inputs/j1/in.png"} {
		if _, _, err := api.Open(ctx, k); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("%s after the janitor: %v, want ErrNotFound", k, err)
		}
	}
}

// TestNewS3Errors: a wrong bucket, secret or endpoint is an error at start,
// and no error message carries the secret key.
func TestNewS3Errors(t *testing.T) {
	srv := s3test.Start(t)
	srv.MakeBucket(t, testBucket)
	base := storage.S3Options{Bucket: testBucket, Endpoint: srv.Endpoint, Region: srv.Region,
		AccessKey: srv.AccessKey, SecretKey: srv.SecretKey, Lookup: storage.LookupPath}
	tests := []struct {
		name string
		edit func(*storage.S3Options)
		want string
	}{
		{"missing bucket", func(o *storage.S3Options) { o.Bucket = "no-such-bucket" }, "does not exist"},
		{"wrong secret", func(o *storage.S3Options) { o.SecretKey = "wrong-secret-0123456789" }, "fashiond-test"},
		{"no server", func(o *storage.S3Options) { o.Endpoint = "http://127.0.0.1:1" }, "127.0.0.1:1"},
		{"bad bucket name", func(o *storage.S3Options) { o.Bucket = "Bad_Bucket" }, "bucket name"},
		{"bad prefix", func(o *storage.S3Options) { o.Prefix = "a/../b" }, "prefix"},
		{"no keys", func(o *storage.S3Options) { o.AccessKey = "" }, "access key"},
		{"presign too long", func(o *storage.S3Options) { o.Presign = 8 * 24 * time.Hour }, "presigned"},
		{"bad lookup", func(o *storage.S3Options) { o.Lookup = "dns" }, "lookup"},
		{"bad endpoint", func(o *storage.S3Options) { o.Endpoint = "ftp://x" }, "endpoint"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := base
			tc.edit(&o)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := storage.NewS3(ctx, o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
			for _, secret := range []string{o.SecretKey, srv.SecretKey} {
				if secret != "" && strings.Contains(err.Error(), secret) {
					t.Fatalf("error message carries the secret key: %v", err)
				}
			}
		})
	}
}
