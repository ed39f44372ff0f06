package main

import (
	"crypto/subtle"
	"net/http"

	"github.com/hibiken/asynqmon"

	"fashiond/jobs"
)

// adminRoot is where the queue dashboard is mounted.
const adminRoot = "/admin/queues"

// withAdmin mounts the read-only asynqmon queue dashboard at /admin/queues
// behind FASHIOND_ADMIN_TOKEN; with no token nothing is mounted and the
// path is the API's 404.
func withAdmin(h http.Handler, token string, svc *jobs.Service) http.Handler {
	if token == "" {
		return h
	}
	mon := asynqmon.New(asynqmon.Options{RootPath: adminRoot, RedisConnOpt: svc.RedisConn(), ReadOnly: true})
	mux := http.NewServeMux()
	mux.Handle(adminRoot+"/", requireToken(token, mon))
	mux.Handle(adminRoot, requireToken(token, mon))
	mux.Handle("/", h)
	return mux
}

// requireToken admits requests that carry the token as HTTP Basic auth's
// password (any user name: a browser asks for it) or as a Bearer token.
func requireToken(token string, h http.Handler) http.Handler {
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, pw, basic := r.BasicAuth()
		okBasic := basic && subtle.ConstantTimeCompare([]byte(pw), []byte(token)) == 1
		okBearer := subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) == 1
		if !okBasic && !okBearer {
			w.Header().Set("WWW-Authenticate", `Basic realm="fashiond admin", charset="UTF-8"`)
			http.Error(w, "the queue dashboard needs FASHIOND_ADMIN_TOKEN (as the Basic auth password or a Bearer token)", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}
