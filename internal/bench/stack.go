package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/throttledhq/throttled"
	"github.com/throttledhq/throttled/config"
	"github.com/throttledhq/throttled/internal/overload"
)

// Parts are the real parts an overload run may use instead of the
// embedded defaults.
type Parts struct {
	RedisURL      string // "": in-memory store (one instance only)
	PrometheusURL string // "": in-process signals
	AdminListen   string // "": a free loopback port per instance
	// RedisCluster: the fleet scenario starts a 3-master Redis Cluster of
	// its own (RedisURL must be empty).
	RedisCluster bool
	// PerInstance: in the fleet scenario each instance has a backend of
	// its own of capacity C ÷ N (a sidecar per pod) instead of one shared.
	PerInstance bool
	// FleetIdle is how long the fleet scenario counts its Redis traffic
	// with no clients, after as long again for the instances to settle,
	// before the run; 0 means 4 s, negative none.
	FleetIdle time.Duration
	// Prometheus, without a PrometheusURL, starts a prometheus of the
	// bench's own scraping every instance each second (see prom.go).
	Prometheus bool
}

// Start is StartStack as an overload.StackFunc.
func (p Parts) Start(ctx context.Context, spec overload.StackSpec) (overload.Stack, error) {
	if p.Prometheus && p.PrometheusURL != "" {
		return nil, errors.New("bench overload: give --prometheus (start one) or --prometheus-url (use this one), not both")
	}
	if spec.Scenario.Name == "fleet" {
		if p.Prometheus {
			return nil, errors.New("bench overload: --prometheus does not run with --scenario fleet: its instances join and leave during the run; give --prometheus-url of a prometheus that discovers them")
		}
		return StartFleet(ctx, spec, p)
	}
	if p.Prometheus && p.PrometheusURL == "" {
		return p.startWithPrometheus(ctx, spec)
	}
	st, err := StartStack(ctx, spec, p)
	if err != nil {
		return nil, err
	}
	return st, nil
}

// Stack is the real throttled, spec.Scenario.Instances of it, in front of
// the backend: an overload.Stack. Each instance is a throttled.Instance
// with its admin listener (AdminHandler) and its front listener (the
// proxy, or the backend's handler behind the middleware or Echo).
type Stack struct {
	insts []*instance
}

// instance is one throttled of a Stack, its listeners and its loops.
type instance struct {
	t     *throttled.Instance
	srvs  []*http.Server
	admin string        // base URL of the admin listener
	url   string        // base URL of the front
	stop  func()        // ends Run; nil before Run started
	ran   chan struct{} // closed when Run has returned
	errc  chan error    // a listener's Serve that failed
}

// drainTimeout bounds an instance's graceful shutdown, as serve's.
const drainTimeout = 15 * time.Second

// StartStack starts the instances and returns once each listens.
func StartStack(ctx context.Context, spec overload.StackSpec, parts Parts) (*Stack, error) {
	n := max(1, spec.Scenario.Instances)
	if n > 1 && parts.RedisURL == "" {
		return nil, fmt.Errorf("bench overload: scenario %q runs %d instances: they share limits only through Redis, give --redis-url", spec.Scenario.Name, n)
	}
	st := &Stack{}
	for i := range n {
		admin, err := adminAddr(parts.AdminListen, i)
		if err != nil {
			_ = st.Close()
			return nil, err
		}
		cfg, err := stackConfig(spec, parts, admin)
		if err != nil {
			_ = st.Close()
			return nil, fmt.Errorf("bench overload: instance %d: config: %w", i, err)
		}
		in, err := startInstance(context.WithoutCancel(ctx), cfg, spec, throttled.Options{Logger: quietLog})
		if err != nil {
			_ = st.Close()
			return nil, fmt.Errorf("bench overload: instance %d: %w", i, err)
		}
		st.insts = append(st.insts, in)
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
	return AddrPlus("bench overload: --admin-listen", base, i)
}

// quietLog discards the instances' logs.
var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// startInstance builds a throttled from cfg, binds its admin listener and
// its front (cfg.Listen), serves both and runs its loops until close.
func startInstance(ctx context.Context, cfg *config.Config, spec overload.StackSpec, o throttled.Options) (*instance, error) {
	t, err := throttled.New(ctx, cfg, o)
	if err != nil {
		return nil, err
	}
	in := &instance{t: t, errc: make(chan error, 2)}
	front, err := frontHandler(t, spec)
	if err == nil {
		in.admin, err = in.serve("admin", cfg.Admin.Listen, t.AdminHandler())
	}
	if err == nil {
		in.url, err = in.serve("front", cfg.Listen, front)
	}
	if err != nil {
		_ = in.close()
		return nil, err
	}
	runCtx, stop := context.WithCancel(ctx)
	in.stop, in.ran = stop, make(chan struct{})
	go func() { defer close(in.ran); _ = t.Run(runCtx) }()
	return in, nil
}

// serve binds addr and serves h there; it returns the base URL.
func (in *instance) serve(name, addr string, h http.Handler) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 64 << 10}
	in.srvs = append(in.srvs, srv)
	go func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			in.errc <- fmt.Errorf("%s: %w", name, err)
		}
	}()
	return "http://" + ln.Addr().String(), nil
}

// close drains the listeners, stops the loops (a leading controller
// releases its lease) and closes the throttled; it returns a listener's
// failure, if any.
func (in *instance) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	for _, srv := range in.srvs {
		_ = srv.Shutdown(ctx)
	}
	if in.stop != nil {
		in.stop()
		<-in.ran
	}
	errs := []error{in.t.Close()}
	for range len(in.errc) {
		errs = append(errs, <-in.errc)
	}
	return errors.Join(errs...)
}

// URLs are the instances' front URLs.
func (s *Stack) URLs() []string { return s.collect(func(in *instance) string { return in.url }) }

// Admins are the instances' admin and /metrics base URLs.
func (s *Stack) Admins() []string { return s.collect(func(in *instance) string { return in.admin }) }

func (s *Stack) collect(f func(*instance) string) []string {
	out := make([]string, len(s.insts))
	for i, in := range s.insts {
		out[i] = f(in)
	}
	return out
}

// Multipliers are the tier multipliers the leader exports on /metrics
// (non-leaders export none).
func (s *Stack) Multipliers() map[string]float64 {
	out := map[string]float64{}
	for _, in := range s.insts {
		maps.Copy(out, scrapeMultipliers(in.admin))
	}
	return out
}

// Close stops every instance, all at once, and waits for them.
func (s *Stack) Close() error {
	errs := make([]error, len(s.insts))
	var wg sync.WaitGroup
	for i, in := range s.insts {
		wg.Go(func() { errs[i] = in.close() })
	}
	wg.Wait()
	s.insts = nil
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

var _ overload.Stack = (*Stack)(nil)
