package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"slices"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/throttledhq/throttled/admin"
	"github.com/throttledhq/throttled/bulkhead"
	"github.com/throttledhq/throttled/controller"
	"github.com/throttledhq/throttled/internal/wait"
	"github.com/throttledhq/throttled/limiter/coord"
	"github.com/throttledhq/throttled/limiter/enforce"
	"github.com/throttledhq/throttled/policy"
	"github.com/throttledhq/throttled/signals"
)

func (s *stack) buildAdmin(ctx context.Context) error {
	tokens, err := admin.TokensFromEnv(os.Environ())
	if err != nil {
		return err
	}
	for role, tok := range s.cfg.Admin.Tokens {
		r, err := admin.ParseRole(role)
		if err != nil {
			return err
		}
		tokens[role] = admin.Token{Token: tok, Role: r}
	}
	var st policy.Store
	if s.rdb != nil {
		st, err = policy.NewRedisStore(s.rdb, policy.StoreSettings{Prefix: s.cfg.Redis.Prefix})
	} else {
		st, err = policy.NewMemoryStore(policy.StoreSettings{})
	}
	if err != nil {
		return err
	}
	status := &multiplierStatus{tiers: s.tierNames, src: s.mults}
	status.sub, _ = s.mults.src.(*coord.Subscriber)
	resets := prometheus.NewCounter(prometheus.CounterOpts{Name: "throttled_config_store_resets_total",
		Help: "Times the config store was found reset (lost its data, or re-seeded) by the watcher or a refused admin write; the configuration in force is restored."})
	if err := s.reg.Register(resets); err != nil {
		return err
	}
	as := admin.Settings{Store: st, Tokens: tokens,
		Initial: s.cfg.apiConfig(), Multipliers: status, Inspector: bucketInspector{s.enforcer}, Top: topConsumers{s.top},
		Registerer: s.reg, Logger: s.redisLogger(), OnReset: func(error) { resets.Inc() }}
	if s.cfg.source() == sourceFile {
		as.ReadOnly = fileOwns
	}
	if err := s.startAdmin(ctx, as); err != nil {
		return err
	}
	s.startReconcile(ctx, st)
	s.watcher, err = policy.NewWatcher(st, policy.WatcherSettings{OnChange: s.apply,
		OnError: func(err error) {
			if errors.Is(err, policy.ErrStoreReset) {
				resets.Inc()
				s.log.Error("admin config store was reset: the configuration in force stays and is restored", "err", err)
				return
			}
			s.redisLogger().Warn("admin config", "err", err)
		}})
	if err != nil {
		return err
	}
	s.runners = append(s.runners, s.watcher.Run)
	return nil
}

// startAdmin starts the admin API. When its store (Redis) cannot be read,
// the instance still starts, enforcing the file's configuration: the admin
// API answers 503 and is retried until the store is back, and the watcher
// then delivers the stored configuration. A configuration error is fatal.
func (s *stack) startAdmin(ctx context.Context, as admin.Settings) error {
	srv, err := admin.New(ctx, as)
	switch {
	case err == nil:
		s.admin.Store(srv)
		return nil
	case errors.Is(err, policy.ErrInvalid):
		return err
	}
	s.redisLogger().Error("admin store unavailable: enforcing the file's configuration, admin API answers 503 until it is back", "err", err)
	s.runners = append(s.runners, func(ctx context.Context) error {
		return wait.Until(ctx, 2*time.Second, func(ctx context.Context) bool {
			srv, err := admin.New(ctx, as)
			if err == nil {
				s.admin.Store(srv)
				s.log.Info("admin store is back: admin API serving")
			}
			return err == nil
		})
	})
	return nil
}

// apply puts a new admin configuration in force on this instance.
func (s *stack) apply(snap policy.Snapshot) {
	p, err := policy.Compile(snap.Config)
	if err == nil {
		err = s.enforcer.SetPolicy(p)
	}
	if err == nil && s.leases != nil {
		err = s.leases.set(snap.Config.Rules)
	}
	if err != nil {
		s.log.Error("config not applied; the last good one stays", "version", snap.Version, "err", err)
		return
	}
	assign := make(map[string]string, len(snap.Config.Assignments))
	for k, v := range snap.Config.Assignments {
		assign[k] = v
	}
	s.tiers.m.Store(&assign)
	pins := make(map[string]policy.Pin, len(snap.Pins))
	for k, v := range snap.Pins {
		pins[k] = v
	}
	s.mults.setPins(pins)
	names := make([]string, 0, len(snap.Config.Tiers))
	for n := range snap.Config.Tiers {
		names = append(names, n)
	}
	sort.Strings(names)
	s.tierList.Store(&names)
	if s.loop != nil {
		law, err := controller.NewLaw(controllerSettings(s.cfg, snap.Config.Tiers))
		if err == nil {
			err = s.loop.SetLaw(law)
		}
		if err != nil {
			s.log.Error("controller keeps its previous tiers", "version", snap.Version, "err", err)
		}
	}
	s.configVersion.Set(float64(snap.Version))
	s.log.Info("config applied", "version", snap.Version, "tiers", len(names), "rules", len(p.Rules))
}

func (s *stack) tierNames() []string {
	if l := s.tierList.Load(); l != nil {
		return *l
	}
	return policy.SortedTiers(s.cfg.Tiers)
}

func (s *stack) buildController(ctx context.Context) error {
	cc := &s.cfg.Controller
	if cc.Disabled {
		return nil
	}
	src, err := s.signalSource()
	if err != nil {
		return err
	}
	targets := map[signals.Kind]float64{signals.Latency: cc.LatencyTarget.D().Seconds(), signals.ErrorRatio: cc.ErrorRatioTarget}
	if cc.SaturationTarget > 0 {
		targets[signals.Saturation] = cc.SaturationTarget
	}
	law, err := controller.NewLaw(controllerSettings(s.cfg, s.cfg.Tiers))
	if err != nil {
		return err
	}
	var pub controller.Publisher
	var lease controller.Lease
	if s.rdb == nil {
		pub, lease = s.mults.src.(*localMultipliers), localLease{}
	} else {
		// The lease fences the publishes: a stalled ex-leader's are refused.
		cs := coord.Settings{Prefix: s.cfg.Redis.Prefix}
		l, err := coord.NewLease(s.rdb, cs.LeaseKey(), cc.LeaseTTL.D())
		if err != nil {
			return err
		}
		cs.Lease = l
		mp, err := coord.NewPublisher(s.rdb, cs)
		if err != nil {
			return err
		}
		pub, lease = mp, l
	}
	var refused []signals.Kind
	if s.cfg.saturationIsRefused() {
		refused = append(refused, signals.Saturation)
	}
	s.loop, err = controller.NewLoop(law, controller.FromSignals(src, targets, refused...), pub, lease, s.reg, controller.WithLogger(s.redisLogger()))
	if err != nil {
		return err
	}
	s.runners = append(s.runners, s.loop.Run)
	return nil
}

// Upstream metric names: the in-process signal source reads the latency
// admitted requests see (gate wait included) and the upstream's answers.
const (
	upstreamLatency  = "throttled_upstream_request_duration_seconds"
	admittedLatency  = "throttled_admitted_request_duration_seconds"
	upstreamRequests = "throttled_upstream_requests_total"
)

func (s *stack) signalSource() (signals.Source, error) {
	p := &s.cfg.Prometheus
	if p.URL != "" {
		src, err := signals.NewPrometheus(signals.PrometheusSettings{URL: p.URL, Selector: p.Selector,
			LatencyQuery: p.LatencyQuery, ErrorRatioQuery: p.ErrorRatioQuery, SaturationQuery: p.SaturationQuery,
			AdmittedQuery: p.AdmittedQuery, Timeout: p.Timeout.D()}, s.reg)
		if err == nil {
			s.log.Info("signals: prometheus", "url", redactURL(p.URL), "queries", src.Queries())
		}
		return src, err
	}
	s.log.Info("signals: in-process (no prometheus url configured)", "histogram", admittedLatency)
	in := signals.InProcessSettings{LatencyHistogram: admittedLatency, RequestsCounter: upstreamRequests}
	if s.cfg.innerLoop() {
		in.SaturationGauge = controller.SaturationMetric
	}
	g, err := s.admittedGatherer()
	if err != nil {
		return nil, err
	}
	return signals.NewInProcess(g, in, s.reg)
}

// admittedGatherer is what the in-process signals gather: the registry,
// and with Redis the fleet's admitted requests in place of this instance's
// (see fleetGatherer), which every instance publishes ten times a period.
func (s *stack) admittedGatherer() (prometheus.Gatherer, error) {
	if s.rdb == nil {
		return s.reg, nil
	}
	period := s.cfg.Controller.Period.D()
	t, err := coord.NewTally(s.rdb, coord.TallySettings{Prefix: s.cfg.Redis.Prefix, Window: max(coord.DefaultTallyWindow, 4*period)})
	if err != nil {
		return nil, err
	}
	// Ten publishes a period: the leader's reads, one a period, see counts
	// at most a tenth of a period old, so a rate's window errs by 10 % at most.
	every := max(period/10, 50*time.Millisecond)
	s.runners = append(s.runners, func(ctx context.Context) error { return publishAdmitted(ctx, s.reg, t, every) })
	s.log.Info("signals: admitted rates of every instance on the redis", "tally", t.Key())
	return fleetGatherer{local: s.reg, tally: t, timeout: period / 2}, nil
}

func (s *stack) buildProxyParts(ctx context.Context) error {
	var err error
	if s.upstream, err = newUpstreamMetrics(s.reg); err != nil {
		return err
	}
	bm, err := bulkhead.NewMetrics(s.reg)
	if err != nil {
		return err
	}
	if s.bulk, err = bulkheadsOf("tier:", s.cfg.Bulkheads, bm); err != nil {
		return err
	}
	if s.routeBulk, err = bulkheadsOf("route:", s.cfg.RouteBulkheads, bm); err != nil {
		return err
	}
	s.routes = enforce.NewRoutes(slices.Sorted(maps.Keys(s.cfg.RouteBulkheads)))
	s.breakerRoutes = enforce.NewRoutes(s.cfg.UpstreamBreaker.Routes)
	if ub := &s.cfg.UpstreamBreaker; ub.Enabled {
		s.breakers, err = bulkhead.NewBreakerSet(bulkhead.BreakerSettings{ConsecutiveFailures: ub.ConsecutiveFailures,
			OpenTimeout: ub.OpenTimeout.D(), Deadline: ub.Deadline.D()}, bm)
		if err != nil {
			return err
		}
	}
	return s.buildInnerLoop(bm)
}

// buildInnerLoop makes the priority gate in front of the upstream and the
// fast loop that moves its limit (proxy mode, unless concurrency.disabled).
func (s *stack) buildInnerLoop(bm *bulkhead.Metrics) error {
	cc := &s.cfg.Concurrency
	if !s.cfg.innerLoop() {
		return nil
	}
	gs, err := gradientSettings(cc)
	if err != nil {
		return fmt.Errorf("concurrency: %w", err)
	}
	law, err := controller.NewGradient(gs)
	if err != nil {
		return err
	}
	if s.gate, err = bulkhead.NewGate("upstream", bulkhead.GateSettings{Limit: law.Settings().InitialLimit,
		MinLimit: law.Settings().MinLimit, MaxQueue: cc.MaxQueue, MaxWait: cc.MaxWait.D(),
		TopMaxWait: cc.TopMaxWait.D()}, bm); err != nil { // priority-0 tiers wait TopMaxWait
		return err
	}
	loop, err := controller.NewConcurrencyLoop("upstream", law, s.gate, s.reg, nil)
	if err != nil {
		return err
	}
	s.runners = append(s.runners, loop.Run)
	return nil
}

// bulkheadsOf makes one bulkhead per configured name; nil when none.
func bulkheadsOf(prefix string, conf map[string]Bulkhead, m *bulkhead.Metrics) (map[string]*bulkhead.Bulkhead, error) {
	if len(conf) == 0 {
		return nil, nil
	}
	out := make(map[string]*bulkhead.Bulkhead, len(conf))
	for name, b := range conf {
		bh, err := bulkhead.New(prefix+name, bulkhead.Settings{Limit: b.Limit, MaxQueue: b.Queue, MaxWait: b.MaxWait.D()}, m)
		if err != nil {
			return nil, err
		}
		out[name] = bh
	}
	return out, nil
}

// redactURL hides a password in a URL for logs.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable)"
	}
	return u.Redacted()
}
