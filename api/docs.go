package api

import (
	"embed"
	"io/fs"
	"net/http"
)

// The reference page: api/docs/index.html with the vendored
// swagger-ui-dist files, embedded so /docs works without the internet.
//
//go:embed docs/index.html docs/init.js docs/swagger-ui/swagger-ui-bundle.js docs/swagger-ui/swagger-ui.css docs/swagger-ui/LICENSE docs/swagger-ui/NOTICE
var docsFS embed.FS

// docsCache is the Cache-Control of the viewer's files (pinned version).
const docsCache = "public, max-age=86400"

// serveDocs is GET /docs: the page that renders /openapi.json.
func serveDocs(w http.ResponseWriter, r *http.Request) {
	b, err := docsFS.ReadFile("docs/index.html")
	if err != nil {
		writeError(w, http.StatusInternalServerError, CodeInternal, "", "the reference page is missing from this build")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	w.Write(b)
}

// docsAssets serves /docs/assets/<file>: the viewer and its licence.
func docsAssets() http.Handler {
	sub, err := fs.Sub(docsFS, "docs/swagger-ui")
	if err != nil {
		panic(err)
	}
	files := http.FileServerFS(sub)
	return http.StripPrefix("/docs/assets/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "init.js" {
			b, _ := docsFS.ReadFile("docs/init.js")
			w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
			w.Write(b)
			return
		}
		if r.URL.Path == "" {
			writeError(w, http.StatusNotFound, CodeNotFound, "", "no such file")
			return
		}
		w.Header().Set("Cache-Control", docsCache)
		w.Header().Set("X-Content-Type-Options", "nosniff")
		files.ServeHTTP(w, r)
	}))
}
