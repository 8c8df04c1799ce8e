package throttled

import "net/http"

// BeginShutdown makes /readyz fail (503) from now on, so that load
// balancers stop sending new requests while the listeners still serve
// (serve calls it on SIGTERM, then waits shutdown_delay, then drains).
func (s *Instance) BeginShutdown() { s.stopping.Store(true) }

// readiness is /readyz: the store's readiness, failing once shutdown has
// begun.
func (s *Instance) readiness() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.stopping.Load() {
			writeJSON(w, http.StatusServiceUnavailable, []byte(`{"status":"shutting down"}`+"\n"))
			return
		}
		s.ready.ServeHTTP(w, r)
	})
}
