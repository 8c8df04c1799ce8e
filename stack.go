package throttled

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"os"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/admin"
	"github.com/throttledhq/throttled/bulkhead"
	"github.com/throttledhq/throttled/config"
	"github.com/throttledhq/throttled/controller"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/coord"
	"github.com/throttledhq/throttled/limiter/enforce"
	"github.com/throttledhq/throttled/limiter/fallback"
	"github.com/throttledhq/throttled/limiter/identity"
	"github.com/throttledhq/throttled/limiter/instrument"
	"github.com/throttledhq/throttled/limiter/pipeline"
	"github.com/throttledhq/throttled/limiter/redisstore"
	"github.com/throttledhq/throttled/limiter/rls"
	"github.com/throttledhq/throttled/policy"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// Instance is a whole throttled built from a config.Config: the store,
// the enforcer, the admin API, the controller, the inner loop, the rate
// limit service. New builds one, Run runs its loops, and its handlers
// (Middleware, Echo, AdminHandler, Proxy) serve it; Close releases it.
type Instance struct {
	cfg            *config.Config
	log            *slog.Logger
	reg            prometheus.Registerer
	gather         prometheus.Gatherer
	rdb            redis.UniversalClient // nil: embedded
	ownRedis       bool                  // rdb was opened from the configuration: Close closes it
	store          limiter.Store
	leases         *leases // the rules in lease mode; nil: the embedded store
	ready          *enforce.Readiness
	enforcer       *enforce.Enforcer
	top            *instrument.TopK // the clients refused most, for /metrics and GET /v1/top
	metrics        *instrument.Metrics
	requests       *instrument.Requests   // throttled_requests_total, of every front
	refusals       *instrument.RefusalLog // the sampled info line per refusal
	configVersion  prometheus.Gauge       // throttled_config_version
	tracer         oteltrace.Tracer       // nil: no tracing (see startTracing)
	stopTracing    func(context.Context) error
	mults          *pinned
	tiers          *tierTable
	admin          atomic.Pointer[admin.Server] // nil while the admin store is unreachable
	watcher        *policy.Watcher
	loop           *controller.Loop
	controllerOnly bool
	answers        *answerMetrics     // the handler's (the upstream's) answers; nil: controller only
	pipeline       *pipeline.Pipeline // every front's stages; nil: controller only
	rls            *rls.Server        // Envoy's rate limit service; nil: off
	runners        []func(context.Context) error
	tierList       atomic.Pointer[[]string]
	redisWatch     *redisWatch        // nil: no Redis (redislog.go)
	redisLog       *slog.Logger       // folds the Redis users' warnings while it is down
	memPolicy      *memoryPolicyWatch // nil: no Redis (memory_policy.go)
	src            *configSource      // config.source and reloads (configsource.go)
	stopping       atomic.Bool        // shutdown has begun: /readyz fails (shutdown.go)
	fleetID        string             // this instance's id in the tally and the multipliers (fleet_scope.go)
}

func (s *Instance) buildStore(ctx context.Context) error {
	m, err := instrument.NewMetrics(s.reg)
	if err != nil {
		return err
	}
	s.metrics, s.refusals = m, instrument.NewRefusalLog(s.log, 0, nil)
	if err := s.registerInfo(); err != nil {
		return err
	}
	near, err := instrument.NewNearLimit(s.reg)
	if err != nil {
		return err
	}
	if s.rdb == nil && !s.cfg.Redis.Configured() {
		mem := limiter.NewMemory()
		s.store = near.Store(instrument.Store(mem, m, "memory"))
		s.log.Info("store: embedded in-memory (no redis configured)")
		return s.buildReadiness(enforce.ReadinessSettings{Shared: mem.Ready})
	}
	if s.rdb == nil {
		if s.rdb, err = OpenRedis(&s.cfg.Redis); err != nil {
			return err
		}
		s.ownRedis = true
	}
	s.watchRedis(ctx)
	if err := s.watchMemoryPolicy(ctx); err != nil {
		return err
	}
	// A batch slower than the decision's deadline runs on (up to the Redis
	// timeout) rather than being cut, which would cost its connection; the
	// decision falls back at its deadline meanwhile, on its own goroutine.
	shared, err := redisstore.NewWithSettings(s.rdb, redisstore.Settings{CallTimeout: s.cfg.Redis.Timeout.D()},
		limiter.WithPrefix(s.cfg.Redis.Prefix))
	if err != nil {
		return err
	}
	bm, err := bulkhead.NewMetrics(s.reg)
	if err != nil {
		return err
	}
	guard, err := bulkhead.NewBreaker("redis", bulkhead.BreakerSettings{Deadline: s.cfg.Fallback.Deadline.D(),
		ConsecutiveFailures: s.cfg.Fallback.ConsecutiveFailures, OpenTimeout: s.cfg.Fallback.OpenTimeout.D()}, bm)
	if err != nil {
		return err
	}
	fs := fallback.Settings{Guard: guard, Instances: s.cfg.Fallback.Instances, Errors: m, Logger: s.redisLogger()}
	if fs.Instances == 0 && !s.controllerOnly {
		hb, err := coord.NewHeartbeat(s.rdb, coord.HeartbeatSettings{Prefix: s.cfg.Redis.Prefix})
		if err != nil {
			return err
		}
		fs.Counter = hb
		s.runners = append(s.runners, func(ctx context.Context) error {
			err := hb.Run(ctx)
			stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			defer cancel()
			_ = hb.Stop(stopCtx)
			return err
		})
	}
	fb, err := fallback.New(shared, fs, s.reg)
	if err != nil {
		return err
	}
	if s.leases, err = newLeases(fb, s.reg); err != nil {
		return err
	}
	if err := s.leases.set(s.cfg.Rules); err != nil {
		return err
	}
	s.store = near.Store(instrument.Store(s.leases, m, "redis"))
	s.log.Info("store: " + s.cfg.Redis.Where())
	return s.buildReadiness(enforce.ReadinessSettings{Shared: shared.Ready, Fallback: true})
}

// buildReadiness makes /readyz (ready while the instance decides, degraded
// on the fallback) and the throttled_degraded gauge, checked in the
// background too so that the gauge is current without probes.
func (s *Instance) buildReadiness(rs enforce.ReadinessSettings) error {
	var err error
	if s.ready, err = enforce.NewReadiness(rs); err != nil {
		return err
	}
	s.runners = append(s.runners, s.ready.Run)
	return s.reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "throttled_degraded",
		Help: "1 while the last readiness check found the shared store (Redis) failing and decisions come from the fallback, else 0.",
	}, func() float64 {
		if s.ready.Degraded() {
			return 1
		}
		return 0
	}))
}

func (s *Instance) buildMultipliers(ctx context.Context) error {
	s.mults = &pinned{now: time.Now}
	if s.rdb == nil {
		s.mults.src = &localMultipliers{}
		return nil
	}
	sub, err := coord.NewSubscriber(s.rdb, coord.Settings{Prefix: s.cfg.Redis.Prefix, Instance: s.instanceID(),
		StaleAfter: s.cfg.Controller.MultiplierStaleAfter.D(), Logger: s.redisLogger()}, s.reg)
	if err != nil {
		return err
	}
	s.mults.src = sub
	s.runners = append(s.runners, sub.Run)
	return nil
}

func (s *Instance) buildEnforcer(ctx context.Context) error {
	untrusted, err := s.watchForwards()
	if err != nil {
		return err
	}
	id, err := identifierOf(&s.cfg.Identity, untrusted)
	if err != nil {
		return err
	}
	pol, err := policy.Compile(s.cfg.Policy())
	if err != nil {
		return err
	}
	// The file's assignments are in force with its tiers and rules until
	// the watcher delivers the stored configuration (apply).
	assign := maps.Clone(s.cfg.Assignments)
	s.tiers.m.Store(&assign)
	s.top = instrument.NewTopK(20, 0, nil)
	if err := s.reg.Register(s.top); err != nil {
		return err
	}
	s.enforcer, err = enforce.New(s.store, pol, enforce.Settings{
		Identifier: id, Tiers: s.tiers, Multipliers: s.mults, Rates: s.mults, Refusals: s.top,
		Decisions: s.metrics, RefusalLog: s.refusals, UnassignedKeys: config.UnassignedKeysOf(&s.cfg.Identity),
		DryRun: s.cfg.DryRunMode()})
	return err
}

func identifierOf(c *config.IdentityConfig, untrusted *identity.UntrustedForwards) (identity.Identifier, error) {
	is := identity.Settings{APIKeyHeader: c.APIKeyHeader, IPv6Prefix: c.IPv6Prefix, Untrusted: untrusted}
	var err error
	if is.TrustedProxies, err = prefixesOf(c.TrustedProxies); err != nil {
		return nil, err
	}
	jc := identity.JWTConfig{Issuer: c.JWT.Issuer, Audience: c.JWT.Audience, Leeway: c.JWT.Leeway.D()}
	switch {
	case c.JWT.Secret != "":
		jc.Secret = []byte(c.JWT.Secret)
	case c.JWT.PublicKeyFile != "":
		pem, err := os.ReadFile(c.JWT.PublicKeyFile)
		if err != nil {
			return nil, fmt.Errorf("identity.jwt.public_key_file: %w", err)
		}
		jc.PublicKeyPEM = pem
	default:
		return identity.New(is)
	}
	v, err := identity.NewJWTVerifier(jc)
	if err != nil {
		return nil, fmt.Errorf("identity.jwt: %w", err)
	}
	is.JWT = v
	return identity.New(is)
}

// prefixesOf reads identity.trusted_proxies.
func prefixesOf(list []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(list))
	for _, p := range list {
		pfx, err := identity.ParsePrefix(p)
		if err != nil {
			return nil, fmt.Errorf("identity.trusted_proxies: %q: %w", p, err)
		}
		out = append(out, pfx)
	}
	return out, nil
}
