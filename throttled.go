package throttled

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/config"
)

// Version is the build's version, set at build time with
// -ldflags "-X github.com/throttledhq/throttled.Version=…".
var Version = "dev"

// Options are what an embedding program hands to New beside the
// configuration. Every field's zero value means the embedded default.
type Options struct {
	// Logger receives throttled's structured log. Zero: slog.Default().
	Logger *slog.Logger
	// Registerer takes throttled's metrics. Zero: a new registry with the
	// Go and process collectors, served by AdminHandler's /metrics.
	Registerer prometheus.Registerer
	// Gatherer reads the metrics back: for /metrics, the in-process
	// signals and the fleet tally. Zero: the Registerer, which must then
	// be a prometheus.Gatherer too (a *prometheus.Registry is both).
	Gatherer prometheus.Gatherer
	// Redis is the shared store's client. Zero: the client that
	// redis.url, redis.cluster_addrs or redis.sentinel configure
	// (OpenRedis), or the embedded in-memory store when they are empty. A client given here is not
	// closed by Close.
	Redis redis.UniversalClient
	// ControllerOnly makes an instance that serves no traffic: it runs
	// the controller and the admin API only, so it has no inner loop and
	// does not count itself among the instances that share a quota while
	// Redis is down. `throttled serve` sets it when the configuration has
	// no upstream. Zero: the instance enforces (its Middleware, Echo or
	// Proxy serve traffic).
	ControllerOnly bool
}

// ErrNoGatherer is returned by New when Options.Registerer is set but is
// not a prometheus.Gatherer and Options.Gatherer is empty.
var ErrNoGatherer = errors.New("throttled: Options.Registerer is not a prometheus.Gatherer: set Options.Gatherer")

// New builds a whole throttled from cfg (see config.Load; a Config built
// in code gets its defaults filled and is validated here): it connects
// the store, compiles the policy, and makes the admin API, the controller
// and the inner loop. Nothing runs until Run. ctx bounds the building only.
func New(ctx context.Context, cfg *config.Config, o Options) (*Instance, error) {
	if cfg == nil {
		return nil, errors.New("throttled: New: nil config")
	}
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("throttled: config: %w", err)
	}
	s := &Instance{cfg: cfg, log: o.Logger, reg: o.Registerer, gather: o.Gatherer, rdb: o.Redis, tiers: &tierTable{},
		controllerOnly: o.ControllerOnly}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.reg == nil {
		reg := prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		s.reg = reg
	}
	if s.gather == nil {
		g, ok := s.reg.(prometheus.Gatherer)
		if !ok {
			return nil, ErrNoGatherer
		}
		s.gather = g
	}
	steps := []func(context.Context) error{s.buildStore, s.buildMultipliers, s.buildEnforcer,
		s.buildAdmin, s.buildController, s.buildPipeline, s.buildRLS}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			_ = s.Close()
			return nil, err
		}
	}
	stop, err := s.startTracing(ctx)
	if err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("throttled: tracing: %w", err)
	}
	s.stopTracing = stop
	return s, nil
}

// Run runs the instance's loops until ctx ends: the controller, the
// inner loop, the configuration watcher, heartbeats, reconciles and
// readiness checks. It returns when every loop has stopped (a controller
// that leads releases its lease on the way out).
func (s *Instance) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, run := range s.runners {
		wg.Add(1)
		go func() { defer wg.Done(); _ = run(ctx) }()
	}
	wg.Wait()
	return ctx.Err()
}

// Close releases what New opened (the Redis client it made). Call it
// after Run has returned.
func (s *Instance) Close() error {
	if s.stopTracing != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = s.stopTracing(ctx) // flushes the spans still buffered
		cancel()
	}
	if s.rdb != nil && s.ownRedis {
		return s.rdb.Close()
	}
	return nil
}

// Config is the configuration the instance was built from.
func (s *Instance) Config() *config.Config { return s.cfg }
