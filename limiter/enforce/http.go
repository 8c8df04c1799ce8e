package enforce

import "net/http"

// Middleware enforces e on every request before next (net/http adapter).
func (e *Enforcer) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res := e.Check(r.Context(), r)
		res.WriteHeaders(w.Header())
		if !res.Allowed {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(res.Status)
			_, _ = w.Write(res.Body())
			return
		}
		next.ServeHTTP(w, r)
	})
}
