package bench

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/throttledhq/throttled"
	"github.com/throttledhq/throttled/config"
	"github.com/throttledhq/throttled/internal/overload"
)

// errFront reports a front a stack cannot serve.
var errFront = errors.New("bench overload: unknown front")

// frontHandler is what an instance serves on its front listener: the
// sidecar proxy to the backend's listener, or the backend's own handler
// behind the net/http middleware or an Echo server with the Echo
// middleware, the same pipeline in each.
func frontHandler(t *throttled.Instance, spec overload.StackSpec) (http.Handler, error) {
	switch spec.Front {
	case overload.Proxy:
		return t.Proxy()
	case overload.Middleware:
		return t.Middleware(spec.Handler), nil
	case overload.Echo:
		e := echo.New()
		e.Use(t.Echo())
		e.Any("/*", echo.WrapHandler(spec.Handler))
		return e, nil
	}
	return nil, fmt.Errorf("%w %s", errFront, spec.Front)
}

// AdminToken is the write token of the admin API of every instance the
// bench and the demo start (loopback only).
const AdminToken = "overload-bench-token"

// stackConfig is the serve configuration of one instance for a scenario
// and a mode: the scenario's tiers and assignments, one rule per API key;
// controller mode runs both loops, static only the quotas, off no limiting
// at all. Only the proxy front has an upstream (the backend's listener).
func stackConfig(spec overload.StackSpec, parts Parts, admin string) (*config.Config, error) {
	var b strings.Builder
	upstream := ""
	if spec.Front == overload.Proxy {
		upstream = spec.Backend
	}
	fmt.Fprintf(&b, "listen: 127.0.0.1:0\nupstream: %q\nadmin:\n  listen: %s\n  tokens:\n    write: %s\n",
		upstream, admin, AdminToken)
	fmt.Fprintf(&b, "redis:\n  url: %q\n", parts.RedisURL)
	if parts.PrometheusURL != "" {
		fmt.Fprintf(&b, "prometheus:\n  url: %q\n%s", parts.PrometheusURL, stackQueries)
	}
	b.WriteString("tiers:\n")
	for _, t := range spec.Scenario.Tiers {
		fmt.Fprintf(&b, "  %s: { rate: %d, period: 1s, burst: %d, priority: %d }\n", t.Name, t.Quota, t.Burst, t.Priority)
	}
	fmt.Fprintf(&b, "default_tier: %s\n", spec.Scenario.DefaultTier)
	b.WriteString("assignments:\n")
	assign := spec.Scenario.Assignments()
	for _, k := range slices.Sorted(maps.Keys(assign)) {
		fmt.Fprintf(&b, "  %q: %s\n", k, assign[k])
	}
	if spec.Mode == overload.Off {
		b.WriteString("rules: []\n")
	} else {
		b.WriteString("rules:\n  - name: per-key\n    match: { path: / }\n    key: header:X-API-Key\n")
	}
	target := spec.Target
	if target <= 0 {
		target = 250 * time.Millisecond
	}
	fmt.Fprintf(&b, "controller:\n  disabled: %v\n  period: 1s\n  latency_target: %v\n  headroom: 0.3\n  hold_timeout: 10s\n",
		spec.Mode != overload.Controller, target)
	fmt.Fprintf(&b, "concurrency:\n  disabled: %v\n", spec.Mode != overload.Controller)
	return config.Parse([]byte(b.String()), nil)
}

// stackQueries read the stack's own upstream metrics and admitted rates
// over short windows, so the controller follows a run of seconds (the
// defaults' 1m windows would size a tier's cap from the minute before the
// surge).
const stackQueries = `  latency_query: histogram_quantile(0.99, sum by (le) (rate(throttled_admitted_request_duration_seconds_bucket[10s])))
  error_ratio_query: (sum(rate(throttled_upstream_requests_total{code=~"5.."}[10s])) or vector(0)) / sum(rate(throttled_upstream_requests_total[10s]))
  admitted_query: sum by (tier) (rate(throttled_decisions_total{decision=~"allowed|delayed"}[5s]))
`
