package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/throttledhq/throttled/config"
	"github.com/throttledhq/throttled/internal/overload"
)

// overloadParts are the real parts an overload run may use instead of the
// embedded defaults.
type overloadParts struct {
	redisURL      string // "": in-memory store (one instance only)
	prometheusURL string // "": in-process signals
	adminListen   string // "": a free loopback port per instance
}

// overloadConfig is the serve configuration of one instance for a
// scenario and a mode: the scenario's tiers and assignments, one rule per
// API key; controller mode runs both loops, static only the quotas, off
// no limiting at all.
func overloadConfig(spec overload.StackSpec, parts overloadParts, admin string) (*config.Config, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "listen: 127.0.0.1:0\nupstream: %s\nadmin:\n  listen: %s\n  tokens:\n    write: overload-bench-token\n",
		spec.Backend, admin)
	fmt.Fprintf(&b, "redis:\n  url: %q\n", parts.redisURL)
	if parts.prometheusURL != "" {
		fmt.Fprintf(&b, "prometheus:\n  url: %q\n%s", parts.prometheusURL, overloadQueries)
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

// overloadQueries read the stack's own upstream metrics and admitted
// rates over short windows, so the controller follows a run of seconds
// (the defaults' 1m windows would size a tier's cap from the minute
// before the surge).
const overloadQueries = `  latency_query: histogram_quantile(0.99, sum by (le) (rate(throttled_admitted_request_duration_seconds_bucket[10s])))
  error_ratio_query: (sum(rate(throttled_upstream_requests_total{code=~"5.."}[10s])) or vector(0)) / sum(rate(throttled_upstream_requests_total[10s]))
  admitted_query: sum by (tier) (rate(throttled_decisions_total{decision=~"allowed|delayed"}[5s]))
`

// overloadStack is the real serve stack, spec.Scenario.Instances of it,
// in front of the backend: an overload.Stack.
type overloadStack struct {
	urls   []string
	admins []string
	stop   context.CancelFunc
	done   []chan error
}

// startOverloadStack starts the instances and waits until each listens.
func startOverloadStack(ctx context.Context, spec overload.StackSpec, parts overloadParts) (*overloadStack, error) {
	n := max(1, spec.Scenario.Instances)
	if n > 1 && parts.redisURL == "" {
		return nil, fmt.Errorf("bench overload: scenario %q runs %d instances: they share limits only through Redis, give --redis-url", spec.Scenario.Name, n)
	}
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	st := &overloadStack{stop: stop}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for i := range n {
		admin, err := adminAddr(parts.adminListen, i)
		if err != nil {
			st.Close()
			return nil, err
		}
		cfg, err := overloadConfig(spec, parts, admin)
		if err != nil {
			st.Close()
			return nil, err
		}
		started, done := make(chan map[string]string, 1), make(chan error, 1)
		st.done = append(st.done, done)
		go func() { done <- runServe(runCtx, cfg, log, started) }()
		select {
		case addrs := <-started:
			st.urls = append(st.urls, "http://"+addrs["proxy"])
			st.admins = append(st.admins, "http://"+addrs["admin"])
		case err := <-done:
			st.done = st.done[:len(st.done)-1]
			st.Close()
			return nil, fmt.Errorf("bench overload: instance %d: %w", i, err)
		}
	}
	return st, nil
}

// adminAddr is instance i's admin listener: a free loopback port, or
// base's port + i so that a Prometheus can be pointed at every instance
// (free ports on base's host when its port is 0).
func adminAddr(base string, i int) (string, error) {
	if base == "" {
		return "127.0.0.1:0", nil
	}
	return addrPlus("bench overload: --admin-listen", base, i)
}

// errPortsPast reports a base port whose +i runs past 65535.
var errPortsPast = errors.New("the ports run past 65535")

// addrPlus is the i-th of consecutive listen addresses from base: base's
// host and port + i, or base itself when its port is 0 (a free port for
// each). flag names base in errors.
func addrPlus(flag, base string, i int) (string, error) {
	host, port, err := net.SplitHostPort(base)
	if err != nil {
		return "", fmt.Errorf("%s %q: want host:port: %w", flag, base, err)
	}
	p, err := strconv.Atoi(port)
	switch {
	case err != nil || p < 0 || p > 65535:
		return "", fmt.Errorf("%s %q: port %q: want 0 to 65535", flag, base, port)
	case p == 0:
		return base, nil
	case p+i > 65535:
		return "", fmt.Errorf("%s %q: %w", flag, base, errPortsPast)
	}
	return net.JoinHostPort(host, strconv.Itoa(p+i)), nil
}

// URLs are the instances' proxy URLs.
func (s *overloadStack) URLs() []string { return s.urls }

// Multipliers are the tier multipliers the leader exports on /metrics
// (non-leaders export none).
func (s *overloadStack) Multipliers() map[string]float64 {
	out := map[string]float64{}
	for _, a := range s.admins {
		maps.Copy(out, scrapeMultipliers(a))
	}
	return out
}

// Close stops every instance and waits for them.
func (s *overloadStack) Close() error {
	s.stop()
	var errs []error
	for _, d := range s.done {
		if err := <-d; err != nil && !errors.Is(err, context.Canceled) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

var scrapeClient = &http.Client{Timeout: 500 * time.Millisecond}

// scrapeMultipliers reads throttled_tier_multiplier from an admin
// listener's /metrics; empty when it cannot.
func scrapeMultipliers(admin string) map[string]float64 {
	out := map[string]float64{}
	resp, err := scrapeClient.Get(admin + "/metrics")
	if err != nil {
		return out
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return out
	}
	for _, m := range families["throttled_tier_multiplier"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "tier" {
				out[l.GetValue()] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

var _ overload.Stack = (*overloadStack)(nil)
