// Package storage is the blob store that holds job outputs and studio
// images: an interface, and a local-directory implementation that also serves
// the files over HTTP under {cdn_url}.
package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"strings"
)

// Store holds blobs under slash-separated keys such as
// "3f2c.../0.jpg". Keys are relative (no leading slash), have no empty, "."
// or ".." segments, use only [A-Za-z0-9._-] per segment, and end in an
// extension whose content type is known (see ContentTypeOf).
type Store interface {
	// Put stores r under key, replacing any blob there. contentType must be
	// the type of key's extension.
	Put(ctx context.Context, key, contentType string, r io.Reader) error
	// Open returns the blob and its content type; ErrNotFound when absent.
	Open(ctx context.Context, key string) (io.ReadCloser, string, error)
	// DeletePrefix removes every blob whose key starts with prefix. A prefix
	// ending in "/" removes a whole folder. Removing nothing is no error.
	DeletePrefix(ctx context.Context, prefix string) error
	// URL is the public URL of key under the store's base URL.
	URL(key string) string
}

// ErrNotFound is returned by Open for a missing key.
var ErrNotFound = errors.New("storage: not found")

// contentTypes maps the extensions blobs may carry to their content types.
var contentTypes = map[string]string{
	".jpg":  "image/jpeg",
	".jpeg": "image/jpeg",
	".png":  "image/png",
	".webp": "image/webp",
	".gif":  "image/gif",
	".mp4":  "video/mp4",
	".json": "application/json",
	".bin":  "application/octet-stream",
}

// PrivatePrefix starts the keys that Handler never serves (job inputs).
const PrivatePrefix = "private/"

// ContentTypeOf returns the content type of key's extension, or "" when the
// extension is not one the store accepts.
func ContentTypeOf(key string) string {
	return contentTypes[strings.ToLower(path.Ext(key))]
}

// CheckKey reports whether key is a valid blob key (see Store).
func CheckKey(key string) error {
	if err := checkPath(key); err != nil {
		return err
	}
	if ContentTypeOf(key) == "" {
		return fmt.Errorf("storage: key %q has no known extension (.jpg .png .webp .gif .mp4 .json)", key)
	}
	return nil
}

// checkPath validates the segments of a key or prefix (without the
// extension rule).
func checkPath(p string) error {
	if p == "" {
		return errors.New("storage: empty key")
	}
	if len(p) > 512 {
		return errors.New("storage: key longer than 512 bytes")
	}
	if strings.HasPrefix(p, "/") {
		return fmt.Errorf("storage: key %q starts with /", p)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("storage: key %q has an empty, . or .. segment", p)
		}
		for _, c := range seg {
			ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
			if !ok {
				return fmt.Errorf("storage: key %q has a character outside [A-Za-z0-9._-]", p)
			}
		}
	}
	return nil
}

// joinURL is base + "/" + key with each segment of key escaped.
func joinURL(base, key string) string {
	segs := strings.Split(key, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return base + "/" + strings.Join(segs, "/")
}
