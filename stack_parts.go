package throttled

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/throttledhq/throttled/admin"
	"github.com/throttledhq/throttled/bulkhead"
	"github.com/throttledhq/throttled/config"
	"github.com/throttledhq/throttled/controller"
	"github.com/throttledhq/throttled/internal/wait"
	"github.com/throttledhq/throttled/limiter/coord"
	"github.com/throttledhq/throttled/limiter/pipeline"
	"github.com/throttledhq/throttled/policy"
	"github.com/throttledhq/throttled/signals"
)

func (s *Instance) buildAdmin(ctx context.Context) error {
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
	status := &multiplierStatus{tiers: s.tierNames, m: s.mults}
	resets := prometheus.NewCounter(prometheus.CounterOpts{Name: "throttled_config_store_resets_total",
		Help: "Times the config store was found reset (lost its data, or re-seeded) by the watcher or a refused admin write; the configuration in force is restored."})
	if err := s.reg.Register(resets); err != nil {
		return err
	}
	as := admin.Settings{Store: st, Tokens: tokens,
		Initial: s.cfg.Policy(), Multipliers: status, Inspector: s.enforcer, Top: topConsumers{s.top},
		Registerer: s.reg, Logger: s.redisLogger(), OnReset: func(error) { resets.Inc() }}
	if s.cfg.Source() == config.SourceFile {
		as.ReadOnly = config.FileOwns
	}
	if err := s.startAdmin(ctx, as); err != nil {
		return err
	}
	if err := s.newConfigSource(st); err != nil {
		return err
	}
	s.startReconcile(ctx)
	s.watcher, err = policy.NewWatcher(st, policy.WatcherSettings{OnChange: s.onStored,
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
func (s *Instance) startAdmin(ctx context.Context, as admin.Settings) error {
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
func (s *Instance) apply(snap policy.Snapshot) {
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
	assign := maps.Clone(snap.Config.Assignments)
	s.tiers.m.Store(&assign)
	s.mults.setPins(maps.Clone(snap.Pins))
	names := slices.Sorted(maps.Keys(snap.Config.Tiers))
	s.tierList.Store(&names)
	if s.loop != nil {
		law, err := controller.NewLaw(config.ControllerSettings(s.cfg, snap.Config.Tiers))
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

func (s *Instance) tierNames() []string {
	if l := s.tierList.Load(); l != nil {
		return *l
	}
	return slices.Sorted(maps.Keys(s.cfg.Tiers))
}

func (s *Instance) buildController(ctx context.Context) error {
	cc := &s.cfg.Controller
	if cc.Disabled {
		return nil
	}
	src, err := s.signalSource()
	if err != nil {
		return err
	}
	targets := map[signals.Kind]float64{signals.Latency: cc.LatencyTarget.D().Seconds(), signals.ErrorRatio: cc.ErrorRatioTarget}
	// Saturation is the inner loops' refused fraction: this instance's own
	// gauge, or the fleet's through Prometheus; a controller-only replica
	// on in-process signals has neither.
	if cc.SaturationTarget > 0 && (s.innerLoop() || s.cfg.Prometheus.URL != "") {
		targets[signals.Saturation] = cc.SaturationTarget
	}
	law, err := controller.NewLaw(config.ControllerSettings(s.cfg, s.cfg.Tiers))
	if err != nil {
		return err
	}
	var pub controller.Publisher
	var lease controller.Lease
	if s.rdb == nil {
		pub, lease = s.mults.src.(*localMultipliers), localLease{}
	} else {
		// The lease fences the publishes: a stalled ex-leader's are refused.
		cs := coord.Settings{Prefix: s.cfg.Redis.Prefix, StaleAfter: s.cfg.Controller.MultiplierStaleAfter.D()}
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
	if s.cfg.SaturationIsRefused() {
		refused = append(refused, signals.Saturation)
	}
	source := controller.FromSignals(src, targets, refused...)
	if s.cfg.Prometheus.URL != "" && s.innerLoop() {
		// The instance's own readings of the last period beside the
		// Prometheus windows: the law prefers them while usable.
		fresh, err := s.inProcessSource()
		if err != nil {
			return err
		}
		source = controller.FromLayered(src, fresh, targets, refused...)
	}
	s.loop, err = controller.NewLoop(law, source, pub, lease, s.reg, controller.WithLogger(s.redisLogger()))
	if err != nil {
		return err
	}
	s.runners = append(s.runners, s.loop.Run)
	return nil
}

func (s *Instance) signalSource() (signals.Source, error) {
	p := &s.cfg.Prometheus
	if p.URL != "" {
		src, err := signals.NewPrometheus(signals.PrometheusSettings{URL: p.URL, Selector: p.Selector,
			LatencyQuery: p.LatencyQuery, ErrorRatioQuery: p.ErrorRatioQuery, SaturationQuery: p.SaturationQuery,
			AdmittedQuery: p.AdmittedQuery, Timeout: p.Timeout.D()}, s.reg)
		if err == nil {
			s.log.Info("signals: prometheus", "url", config.Redact(p.URL), "queries", src.Queries())
		}
		return src, err
	}
	s.log.Info("signals: in-process (no prometheus url configured)", "histogram", admittedLatency)
	return s.inProcessSource()
}

// inProcessSource reads this instance's registry (and the fleet's admitted
// rates through Redis) over each period.
func (s *Instance) inProcessSource() (signals.Source, error) {
	in := signals.InProcessSettings{LatencyHistogram: admittedLatency, RequestsCounter: upstreamRequests}
	if s.innerLoop() {
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
func (s *Instance) admittedGatherer() (prometheus.Gatherer, error) {
	if s.rdb == nil {
		return s.gather, nil
	}
	period := s.cfg.Controller.Period.D()
	t, err := coord.NewTally(s.rdb, coord.TallySettings{ID: s.instanceID(), Prefix: s.cfg.Redis.Prefix,
		Window: max(coord.DefaultTallyWindow, 4*period)})
	if err != nil {
		return nil, err
	}
	// Ten publishes a period: the leader's reads, one a period, see counts
	// at most a tenth of a period old, so a rate's window errs by 10 % at most.
	every := max(period/10, 50*time.Millisecond)
	s.runners = append(s.runners, func(ctx context.Context) error { return publishAdmitted(ctx, s.gather, t, every) })
	s.log.Info("signals: admitted rates of every instance on the redis", "tally", t.Key())
	// A saturation is read from the instances that published within five
	// publishes (at least a second): not from one killed in the overload.
	return fleetGatherer{local: s.gather, tally: t, timeout: period / 2, fresh: max(time.Second, 5*every)}, nil
}

// buildPipeline makes the stages every front runs after the enforcer's
// decision (bulkheads, the inner loop's gate, the upstream breakers) and
// the pipeline of them; a controller-only replica serves no traffic and
// has none.
func (s *Instance) buildPipeline(ctx context.Context) error {
	if s.controllerOnly {
		return nil
	}
	var err error
	if s.answers, err = newAnswerMetrics(s.reg); err != nil {
		return err
	}
	bm, err := bulkhead.NewMetrics(s.reg)
	if err != nil {
		return err
	}
	ps := pipeline.Settings{Enforcer: s.enforcer, Metrics: s.metrics, Refusals: s.refusals, Answers: s.answers, Requests: s.requests,
		BreakerRoutes: s.cfg.UpstreamBreaker.Routes}
	if ps.Bulkheads, err = bulkheadsOf("tier:", s.cfg.Bulkheads, bm); err != nil {
		return err
	}
	if ps.RouteBulkheads, err = bulkheadsOf("route:", s.cfg.RouteBulkheads, bm); err != nil {
		return err
	}
	if ub := &s.cfg.UpstreamBreaker; ub.Enabled {
		ps.Breakers, err = bulkhead.NewBreakerSet(bulkhead.BreakerSettings{ConsecutiveFailures: ub.ConsecutiveFailures,
			OpenTimeout: ub.OpenTimeout.D(), Deadline: ub.Deadline.D()}, bm)
		if err != nil {
			return err
		}
	}
	if ps.Gate, err = s.buildInnerLoop(bm); err != nil {
		return err
	}
	s.pipeline, err = pipeline.New(ps)
	return err
}

// buildInnerLoop makes the priority gate in front of the handler (the
// upstream) and the fast loop that moves its limit; nil with
// concurrency.disabled.
func (s *Instance) buildInnerLoop(bm *bulkhead.Metrics) (*bulkhead.Gate, error) {
	cc := &s.cfg.Concurrency
	if !s.innerLoop() {
		return nil, nil
	}
	gs, err := config.GradientSettings(cc)
	if err != nil {
		return nil, fmt.Errorf("concurrency: %w", err)
	}
	law, err := controller.NewGradient(gs)
	if err != nil {
		return nil, err
	}
	gate, err := bulkhead.NewGate("upstream", bulkhead.GateSettings{Limit: law.Settings().InitialLimit,
		MinLimit: law.Settings().MinLimit, MaxQueue: cc.MaxQueue, MaxWait: cc.MaxWait.D(),
		TopMaxWait: cc.TopMaxWait.D()}, bm) // priority-0 tiers wait TopMaxWait
	if err != nil {
		return nil, err
	}
	loop, err := controller.NewConcurrencyLoop("upstream", law, gate, s.reg, nil, controller.WithLimitLog(s.log))
	if err != nil {
		return nil, err
	}
	s.runners = append(s.runners, loop.Run)
	return gate, nil
}

// innerLoop reports whether this instance runs the inner loop: it serves
// traffic and concurrency.disabled is not set.
func (s *Instance) innerLoop() bool { return !s.controllerOnly && s.cfg.InnerLoop() }

// bulkheadsOf makes one bulkhead per configured name; nil when none.
func bulkheadsOf(prefix string, conf map[string]config.Bulkhead, m *bulkhead.Metrics) (map[string]*bulkhead.Bulkhead, error) {
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
