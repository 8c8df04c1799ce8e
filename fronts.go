package throttled

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/throttledhq/throttled/limiter/rls"
)

// Proxy is the sidecar's reverse proxy to the configured upstream, the
// whole request pipeline in front of it; nil when the configuration has
// no upstream.
func (s *Instance) Proxy() (http.Handler, error) {
	if s.cfg.Upstream == "" {
		return nil, nil
	}
	u, err := url.Parse(s.cfg.Upstream)
	if err != nil {
		return nil, fmt.Errorf("throttled: upstream: %w", err)
	}
	return s.traced("throttled proxy", s.proxyHandler(u)), nil
}

// RLS is Envoy's rate limit service (gRPC) when rls.listen is set, else
// nil: serve it with its Serve method on a listener of your own.
func (s *Instance) RLS() *rls.Server { return s.rls }
