package throttled

import (
	"net/http"
	"net/http/pprof"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/throttledhq/throttled/limiter/enforce"
)

// AdminHandler serves the admin listener: the REST admin API, /metrics,
// /healthz, /readyz, POST /v1/check when check.enabled, and
// /debug/pprof/ when admin.pprof. Bearer tokens guard the admin API; bind
// it where only operators reach it.
func (s *Instance) AdminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(s.gather, promhttp.HandlerOpts{Registry: s.reg}))
	mux.Handle("/healthz", enforce.HealthHandler())
	mux.Handle("/readyz", s.readiness())
	if s.cfg.Check.Enabled {
		mux.Handle("/v1/check", s.checkHandler())
	}
	if s.cfg.Admin.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if srv := s.admin.Load(); srv != nil {
			srv.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Retry-After", "2")
		writeJSON(w, http.StatusServiceUnavailable, []byte(`{"error":"admin store unavailable, retrying"}`+"\n"))
	}))
	return mux
}

func writeJSON(w http.ResponseWriter, code int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(body)
}
