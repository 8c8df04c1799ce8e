package main

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/throttledhq/throttled/limiter/rls"
)

// RLSConfig is Envoy's rate limit service (gRPC, limiter/rls), served by
// `throttled serve` when Listen is set.
type RLSConfig struct {
	Listen     string `yaml:"listen"`     // "" = off
	Domain     string `yaml:"domain"`     // "" = rls.DefaultDomain ("throttled")
	Reflection bool   `yaml:"reflection"` // gRPC server reflection, for grpcurl
}

// CheckConfig is POST /v1/check (enforce.CheckHandler) on the admin
// listener, for gateways that ask over HTTP.
type CheckConfig struct {
	Enabled bool `yaml:"enabled"`
	// Token, when set, is required as "Authorization: Bearer <token>".
	Token string `yaml:"token"`
}

func (c *Config) validateRLS() []fieldErr {
	var errs []fieldErr
	if c.RLS.Listen != "" {
		if _, _, err := net.SplitHostPort(c.RLS.Listen); err != nil {
			errs = append(errs, fieldErr{"rls.listen", "want host:port: " + err.Error()})
		}
	}
	if c.Check.Token != "" && !c.Check.Enabled {
		errs = append(errs, fieldErr{"check.token", "set, but check.enabled is false"})
	}
	return errs
}

// buildRLS makes the gRPC rate limit service when rls.listen is set.
func (s *stack) buildRLS(ctx context.Context) error {
	if s.cfg.RLS.Listen == "" {
		return nil
	}
	var err error
	s.rls, err = rls.New(s.enforcer, rls.Settings{Domain: s.cfg.RLS.Domain, Ready: s.ready.Ready,
		Reflection: s.cfg.RLS.Reflection}, s.reg)
	return err
}

// bindRLS binds rls.listen; nil when the service is off.
func (s *stack) bindRLS(addrs map[string]string) (server, error) {
	if s.rls == nil {
		return nil, nil
	}
	ln, err := net.Listen("tcp", s.cfg.RLS.Listen)
	if err != nil {
		return nil, fmt.Errorf("rls: %w", err)
	}
	addrs["rls"] = ln.Addr().String()
	return grpcServer{srv: s.rls, ln: ln}, nil
}

// grpcServer is the rate limit service on its listener.
type grpcServer struct {
	srv *rls.Server
	ln  net.Listener
}

func (g grpcServer) serve() error                       { return g.srv.Serve(g.ln) }
func (g grpcServer) shutdown(ctx context.Context) error { return g.srv.Shutdown(ctx) }
func (g grpcServer) close() error                       { return g.ln.Close() }

// checkHandler is POST /v1/check, behind check.token when one is set.
func (s *stack) checkHandler() http.Handler {
	h, token := s.enforcer.CheckHandler(), s.cfg.Check.Token
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
