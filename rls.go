package throttled

import (
	"context"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/throttledhq/throttled/limiter/rls"
)

// buildRLS makes the gRPC rate limit service when rls.listen is set.
func (s *Instance) buildRLS(ctx context.Context) error {
	if s.cfg.RLS.Listen == "" {
		return nil
	}
	var err error
	s.rls, err = rls.New(s.enforcer, rls.Settings{Domain: s.cfg.RLS.Domain, Ready: s.ready.Ready,
		Reflection: s.cfg.RLS.Reflection, Workers: s.cfg.RLS.Workers, Requests: s.requests}, s.reg)
	return err
}

// checkHandler is POST /v1/check, behind check.token when one is set.
func (s *Instance) checkHandler() http.Handler {
	h, token := s.enforcer.CheckHandler(s.requests), s.cfg.Check.Token
	if token == "" {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="throttled check"`)
			writeJSON(w, http.StatusUnauthorized, []byte(`{"error":"check: missing or wrong bearer token"}`+"\n"))
			return
		}
		h.ServeHTTP(w, r)
	})
}
