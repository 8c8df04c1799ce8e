package throttled

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"
	"github.com/throttledhq/throttled/limiter/echolimit"
	"github.com/throttledhq/throttled/limiter/identity"
	"github.com/throttledhq/throttled/limiter/pipeline"
	"github.com/throttledhq/throttled/limiter/rls"
	"github.com/throttledhq/throttled/proxy"
	"go.opentelemetry.io/otel/propagation"
)

// ErrControllerOnly is returned by the fronts of an instance made with
// Options.ControllerOnly, which serves no traffic.
var ErrControllerOnly = errors.New("throttled: a controller-only instance serves no traffic")

// Middleware returns next behind the whole request pipeline (net/http):
// quota rules, tier admission, multipliers, bulkheads, the inner loop's
// gate, the route's breaker, then next; refusals are answered with 429 or
// 503 and a JSON body, admitted answers carry the rate-limit headers. It
// panics on a controller-only instance.
func (s *Instance) Middleware(next http.Handler) http.Handler {
	return s.mustPipeline().Handler(next)
}

// Echo is Middleware for Echo v4: e.Use(t.Echo()). The client IP comes
// from identity.trusted_proxies, never from Echo's RealIP.
func (s *Instance) Echo() echo.MiddlewareFunc {
	return echolimit.Middleware(s.mustPipeline())
}

func (s *Instance) mustPipeline() *pipeline.Pipeline {
	if s.pipeline == nil {
		panic(ErrControllerOnly)
	}
	return s.pipeline
}

// Proxy is the sidecar's reverse proxy to the configured upstream, the
// whole request pipeline in front of it; nil when the configuration has
// no upstream.
func (s *Instance) Proxy() (http.Handler, error) {
	if s.cfg.Upstream == "" {
		return nil, nil
	}
	if s.pipeline == nil {
		return nil, ErrControllerOnly
	}
	u, err := url.Parse(s.cfg.Upstream)
	if err != nil {
		return nil, fmt.Errorf("throttled: upstream: %w", err)
	}
	ps := proxy.Settings{Upstream: u, Pipeline: s.pipeline, Timeout: s.cfg.UpstreamTimeout.D(),
		MaxBodyBytes: s.cfg.MaxBodyBytes, Logger: s.log}
	if ps.Trusted, err = s.trustedProxies(); err != nil {
		return nil, err
	}
	if s.tracer != nil { // the upstream's spans continue ours
		ps.Inject = func(ctx context.Context, h http.Header) { traceContext.Inject(ctx, propagation.HeaderCarrier(h)) }
	}
	p, err := proxy.New(ps)
	if err != nil {
		return nil, err
	}
	return s.traced("throttled proxy", p), nil
}

// trustedProxies is identity.trusted_proxies as a resolver.
func (s *Instance) trustedProxies() (*identity.IPResolver, error) {
	id := &s.cfg.Identity
	pfx, err := prefixesOf(id.TrustedProxies)
	if err != nil {
		return nil, err
	}
	return identity.NewIPResolver(pfx, id.IPv6Prefix)
}

// RLS is Envoy's rate limit service (gRPC) when rls.listen is set, else
// nil: serve it with its Serve method on a listener of your own.
func (s *Instance) RLS() *rls.Server { return s.rls }
