package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// demoFlags are the flags of `throttled demo`.
type demoFlags struct {
	duration      time.Duration
	redisURL      string
	prometheusURL string
	adminListen   string
	refresh       time.Duration
	plain         bool
}

// demo runs a simulated backend with limited capacity, a load generator
// with free and premium clients that drives it into overload, and the real
// enforcement (sidecar proxy) and controller in between, on embedded
// defaults unless --redis-url / --prometheus-url name real parts.
func demo(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(w)
	var f demoFlags
	fs.DurationVar(&f.duration, "duration", 60*time.Second, "how long to run")
	fs.StringVar(&f.redisURL, "redis-url", "", "use this Redis instead of the in-memory store")
	fs.StringVar(&f.prometheusURL, "prometheus-url", "", "read signals from this Prometheus; it must scrape the demo's /metrics at --admin-listen")
	fs.StringVar(&f.adminListen, "admin-listen", "127.0.0.1:0", "admin API and /metrics address")
	fs.DurationVar(&f.refresh, "refresh", time.Second, "table refresh interval")
	fs.BoolVar(&f.plain, "plain", false, "print rows instead of redrawing the table")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if f.duration < 3*time.Second || f.duration > 24*time.Hour {
		return fmt.Errorf("demo: --duration %v must be in 3s..24h", f.duration)
	}
	if f.refresh < 100*time.Millisecond {
		return errors.New("demo: --refresh must be at least 100ms")
	}
	sig, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(sig, f.duration) // Ctrl-C ends it early, with the summary
	defer cancel()
	_, err := runDemo(ctx, f, w)
	return err
}

// demoConfig is the demo's configuration: two tiers, one rule per API key,
// a fast controller with a 250 ms p99 target.
func demoConfig(f demoFlags, upstream string) (*Config, error) {
	src := fmt.Sprintf(`listen: 127.0.0.1:0
upstream: %s
admin:
  listen: %s
  tokens:
    write: demo-token-not-for-production
redis:
  url: %q
prometheus:
  url: %q
  # The demo's own upstream metrics, over a short window to follow the run.
  latency_query: histogram_quantile(0.99, sum by (le) (rate(throttled_upstream_request_duration_seconds_bucket[10s])))
  error_ratio_query: (sum(rate(throttled_upstream_requests_total{code=~"5.."}[10s])) or vector(0)) / sum(rate(throttled_upstream_requests_total[10s]))
tiers:
  free:    { rate: 20,  period: 1s, burst: 20,  priority: 1, beta: 0.5, alpha: 0.1 }
  premium: { rate: 400, period: 1s, burst: 400, priority: 0, beta: 0.8, alpha: 0.2 }
default_tier: free
assignments: { premium-0: premium, premium-1: premium, premium-2: premium, premium-3: premium, premium-4: premium }
rules:
  - name: per-key
    match: { path: / }
    key: header:X-API-Key
controller:
  period: 1s
  latency_target: 250ms
  headroom: 0.3
  hold_timeout: 10s
`, upstream, f.adminListen, f.redisURL, f.prometheusURL)
	return parseConfig([]byte(src), nil)
}

// runDemo runs the demo until ctx ends and returns what the view saw.
func runDemo(ctx context.Context, f demoFlags, w io.Writer) (*demoView, error) {
	backend, err := startBackend(8, 20*time.Millisecond)
	if err != nil {
		return nil, err
	}
	defer backend.close()
	cfg, err := demoConfig(f, backend.url)
	if err != nil {
		return nil, err
	}
	started := make(chan map[string]string, 1)
	done := make(chan error, 1)
	serveCtx, stopServe := context.WithCancel(context.WithoutCancel(ctx))
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	go func() { done <- runServe(serveCtx, cfg, log, started) }()
	var addrs map[string]string
	select {
	case addrs = <-started:
	case err := <-done:
		stopServe()
		return nil, err
	}
	gen := newLoadGen("http://"+addrs["proxy"], f.duration)
	view := newDemoView(w, f.plain, gen, backend, limiterReader{admin: "http://" + addrs["admin"]})
	fmt.Fprintf(w, "throttled demo: backend capacity ≈ %d req/s, proxy %s, metrics http://%s/metrics, for %v\n",
		backend.capacity(), addrs["proxy"], addrs["admin"], f.duration)
	genDone := make(chan struct{})
	go func() { gen.run(ctx); close(genDone) }()
	view.loop(ctx, f.refresh)
	<-genDone
	stopServe()
	err = <-done
	view.summary()
	return view, err
}
