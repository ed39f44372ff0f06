package storage

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Served is a Store that also serves its public blobs over HTTP: the
// handler behind the API's /cdn/ route.
type Served interface {
	Store
	// Handler serves GET and HEAD of "/" + key (see serveBlobs).
	Handler() http.Handler
}

// publicCacheControl is the Cache-Control of served blobs (outputs are
// immutable under their key until they are deleted).
const publicCacheControl = "public, max-age=3600"

// blob is an opened blob as serveBlobs needs it: seekable content (for
// Range requests), its type and modification time, and what to close.
type blob struct {
	content     io.ReadSeeker
	closer      io.Closer
	contentType string
	modTime     time.Time
}

// serveBlobs serves blobs for GET and HEAD at "/" + key (mount it with
// http.StripPrefix of the CDN path). It sets the content type of the key's
// extension and nosniff, supports Range requests, answers 404 for missing
// blobs, folders, private keys and invalid keys (so ".." and listings never
// resolve), and 405 for other methods.
func serveBlobs(open func(ctx context.Context, key string) (blob, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			jsonError(w, http.StatusMethodNotAllowed, "method_not_allowed", r.Method+" is not supported; use GET or HEAD")
			return
		}
		key := strings.TrimPrefix(r.URL.Path, "/")
		if strings.HasPrefix(key, PrivatePrefix) {
			jsonError(w, http.StatusNotFound, "not_found", "no such file")
			return
		}
		b, err := open(r.Context(), key)
		if err != nil {
			jsonError(w, http.StatusNotFound, "not_found", "no such file")
			return
		}
		defer b.closer.Close()
		h := w.Header()
		h.Set("Content-Type", b.contentType)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", publicCacheControl)
		http.ServeContent(w, r, "", b.modTime, b.content)
	})
}

// jsonError answers with the API's error body (the CDN's errors are JSON
// like every other answer of the service).
func jsonError(w http.ResponseWriter, status int, code, msg string) {
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	fmt.Fprintf(w, "{\"error\":%q,\"code\":%q,\"message\":%q}\n", msg, code, msg)
}
