// Package playground is the browser page served at "/": paste an API key,
// pick a model, fill a form generated from /openapi.json, submit to
// POST /v1/run, follow the job live (the status event stream, or polling)
// and see its outputs with their notes and self-checks. The page is plain
// HTML, CSS and JavaScript embedded in the binary: no build step, and
// nothing is fetched from another origin.
package playground

import (
	"embed"
	"net/http"
	"strings"
)

// AssetsPrefix is the path under which the page's script and style sheet
// are served (the page itself is served at "/").
const AssetsPrefix = "/playground/"

// Cache-Control values: the page is revalidated on every load, so a new
// binary's page and its assets (whose URLs carry no version) arrive
// together; the assets are cached for a short while.
const (
	pageCache  = "no-cache"
	assetCache = "public, max-age=300"
)

// contentSecurityPolicy lets the page run only its own script and style
// and talk only to its own origin; images and video may come from any
// http(s) origin (results behind a CDN prefix or presigned S3 URLs), from
// data: URIs (inline results, previews of uploads) and blob: URLs.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
	"img-src 'self' data: blob: http: https:; media-src 'self' data: blob: http: https:; " +
	"base-uri 'self'; form-action 'none'; frame-ancestors 'none'"

//go:embed static/index.html static/app.js static/style.css
var files embed.FS

// assets maps a file name under AssetsPrefix to its embedded path and
// Content-Type.
var assets = map[string]struct{ path, ctype string }{
	"app.js":    {"static/app.js", "text/javascript; charset=utf-8"},
	"style.css": {"static/style.css", "text/css; charset=utf-8"},
}

// ServePage is GET /: the playground page.
func ServePage(w http.ResponseWriter, r *http.Request) {
	serveFile(w, "static/index.html", "text/html; charset=utf-8", pageCache)
}

// Assets serves AssetsPrefix + name for the page's files; any other path
// under the prefix is answered by notFound (the API's JSON 404).
func Assets(notFound http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, ok := assets[strings.TrimPrefix(r.URL.Path, AssetsPrefix)]
		if !ok || !strings.HasPrefix(r.URL.Path, AssetsPrefix) {
			notFound.ServeHTTP(w, r)
			return
		}
		serveFile(w, a.path, a.ctype, assetCache)
	})
}

// serveFile writes one embedded file with its headers.
func serveFile(w http.ResponseWriter, path, ctype, cache string) {
	b, err := files.ReadFile(path)
	if err != nil { // only if the embed list and the handlers disagree
		http.Error(w, "the playground is missing from this build", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Cache-Control", cache)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("Referrer-Policy", "no-referrer")
	w.Write(b)
}
