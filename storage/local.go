package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"fashiond/internal/ctxio"
)

// Local is a Store in a local directory. Its files are served by Handler
// under the base URL given to NewLocal.
type Local struct {
	dir     string
	baseURL string
}

// NewLocal returns a store rooted at dir (created when missing, mode 0750)
// whose public URLs are baseURL + "/" + key (baseURL is {cdn_url}, e.g.
// "http://127.0.0.1:8080/cdn").
func NewLocal(dir, baseURL string) (*Local, error) {
	if dir == "" {
		return nil, errors.New("storage: empty directory")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	if err := os.MkdirAll(abs, 0o750); err != nil {
		return nil, fmt.Errorf("storage: create %s: %w", abs, err)
	}
	return &Local{dir: abs, baseURL: strings.TrimRight(baseURL, "/")}, nil
}

// Dir is the root directory.
func (l *Local) Dir() string { return l.dir }

func (l *Local) file(key string) string {
	return filepath.Join(l.dir, filepath.FromSlash(key))
}

// Put writes the blob through a temporary file and a rename, so a reader
// never sees a partial file.
func (l *Local) Put(ctx context.Context, key, contentType string, r io.Reader) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	if want := ContentTypeOf(key); contentType != want {
		return fmt.Errorf("storage: content type %q does not match key %q (%s)", contentType, key, want)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	name := l.file(key)
	if err := os.MkdirAll(filepath.Dir(name), 0o750); err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(name), ".tmp-*")
	if err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	_, err = io.Copy(tmp, ctxio.Reader(ctx, r))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o640)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), name)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("storage: put %s: %w", key, err)
	}
	return nil
}

// Open opens a blob; ErrNotFound when it is absent.
func (l *Local) Open(ctx context.Context, key string) (io.ReadCloser, string, error) {
	if err := CheckKey(key); err != nil {
		return nil, "", fmt.Errorf("%w: %v", ErrNotFound, err)
	}
	f, err := os.Open(l.file(key))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", ErrNotFound
	}
	if err != nil {
		return nil, "", fmt.Errorf("storage: %w", err)
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, "", ErrNotFound
	}
	return f, ContentTypeOf(key), nil
}

// DeletePrefix removes the blobs under prefix: a whole folder for "a/b/",
// else the files of the prefix's folder whose names start with its last
// segment.
func (l *Local) DeletePrefix(ctx context.Context, prefix string) error {
	folder := strings.HasSuffix(prefix, "/")
	p := strings.TrimSuffix(prefix, "/")
	if err := checkPath(p); err != nil {
		return err
	}
	if folder {
		if err := os.RemoveAll(l.file(p)); err != nil {
			return fmt.Errorf("storage: %w", err)
		}
		return nil
	}
	dir, base := filepath.Split(l.file(p))
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), base) {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return fmt.Errorf("storage: %w", err)
			}
		}
	}
	return nil
}

// URL is baseURL + "/" + key with each segment escaped.
func (l *Local) URL(key string) string { return joinURL(l.baseURL, key) }

// Handler serves the store's public blobs over HTTP (see serveBlobs).
func (l *Local) Handler() http.Handler {
	return serveBlobs(func(ctx context.Context, key string) (blob, error) {
		rc, ct, err := l.Open(ctx, key)
		if err != nil {
			return blob{}, err
		}
		f := rc.(*os.File)
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return blob{}, ErrNotFound
		}
		return blob{content: f, closer: f, contentType: ct, modTime: st.ModTime()}, nil
	})
}
