package config

import (
	"net/url"
	"time"

	"github.com/throttledhq/throttled/bulkhead"
	"github.com/throttledhq/throttled/controller"
	"github.com/throttledhq/throttled/policy"
	"github.com/throttledhq/throttled/proxy"
)

// Config is the YAML configuration of `throttled serve`. Zero values mean
// the defaults set in defaults(); every scalar can be overridden by an
// environment variable THROTTLED_<PATH> (for example THROTTLED_REDIS_URL,
// THROTTLED_ADMIN_LISTEN, THROTTLED_CONTROLLER_PERIOD).
type Config struct {
	Listen   string `yaml:"listen"`   // proxy listener (with upstream)
	Upstream string `yaml:"upstream"` // "" = no proxy
	// UpstreamTimeout bounds the wait for the upstream's response headers
	// (a hung upstream answers 504 instead of holding a permit forever).
	UpstreamTimeout policy.Duration  `yaml:"upstream_timeout"`
	Admin           AdminConfig      `yaml:"admin"`
	Redis           RedisConfig      `yaml:"redis"`
	Prometheus      PrometheusConfig `yaml:"prometheus"`
	Controller      ControllerConfig `yaml:"controller"`
	// Concurrency is the inner loop (proxy mode): an adaptive limit on the
	// requests in flight to the upstream.
	Concurrency ConcurrencyConfig   `yaml:"concurrency"`
	Identity    IdentityConfig      `yaml:"identity"`
	Fallback    FallbackConfig      `yaml:"fallback"`
	Bulkheads   map[string]Bulkhead `yaml:"bulkheads"` // per tier, proxy mode
	// RouteBulkheads bound the requests in flight per path prefix (proxy mode).
	RouteBulkheads  map[string]Bulkhead    `yaml:"route_bulkheads"`
	UpstreamBreaker BreakerConfig          `yaml:"upstream_breaker"`
	Log             LogConfig              `yaml:"log"`
	Tiers           map[string]policy.Tier `yaml:"tiers"`
	Rules           []policy.Rule          `yaml:"rules"`
	DefaultTier     string                 `yaml:"default_tier"`
	AnonymousTier   string                 `yaml:"anonymous_tier"`
	UnmatchedTier   string                 `yaml:"unmatched_tier"` // requests no rule matches; "": the lowest priority
	Assignments     map[string]string      `yaml:"assignments"`    // client key → tier
	// Headers is the set of rate-limit headers the rules write (both, the
	// default; ietf; legacy; none), which a rule's own headers overrides.
	Headers string `yaml:"headers"`

	// RLS is Envoy's rate limit service (gRPC), off unless rls.listen is set.
	RLS RLSConfig `yaml:"rls"`
	// Check is POST /v1/check on the admin listener, off unless check.enabled.
	Check CheckConfig `yaml:"check"`
	// ConfigSource (config.source) says whether the store (default) or
	// this file is authoritative for tiers, rules and assignments.
	ConfigSource SourceConfig `yaml:"config"`
	// MaxBodyBytes bounds a proxied request's body: 413 beyond it.
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// ShutdownDelay is how long serve keeps its listeners open after
	// SIGTERM with /readyz failing, so that load balancers stop sending
	// before the drain (a preStop sleep the distroless image cannot run).
	// Zero (the default): close at once.
	ShutdownDelay policy.Duration `yaml:"shutdown_delay"`
	// DryRun (dry_run) makes every throttling refusal observe-only: quota
	// rules, tier caps, multipliers and the gate decide and count
	// (dry_run_<reason>) but refuse nothing. Bulkheads, breakers and
	// max_body_bytes stay on. See DryRunMode.
	DryRun bool `yaml:"dry_run"`
}

// AdminConfig is the admin API listener and its bearer tokens (role →
// token, roles read and write; more in THROTTLED_ADMIN_TOKEN_<NAME>). The
// listener binds off loopback only with TLS or AllowPublic.
type AdminConfig struct {
	Listen string            `yaml:"listen"`
	Tokens map[string]string `yaml:"tokens"`
	TLS    TLSConfig         `yaml:"tls"`
	// AllowPublic lets the listener bind off loopback without TLS (a
	// private network, or a TLS-terminating proxy in front).
	AllowPublic bool `yaml:"allow_public"`
	// Pprof serves net/http/pprof at /debug/pprof/ (off by default).
	Pprof bool `yaml:"pprof"`
}

// TLSConfig serves a listener over HTTPS with a PEM certificate and key.
type TLSConfig struct {
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
}

// PrometheusConfig selects the signal source; no URL means in-process
// signals from the proxy's own upstream metrics.
type PrometheusConfig struct {
	URL string `yaml:"url"`
	// Selector (label matchers, e.g. job="checkout") picks the protected
	// service's series in the default latency and error-ratio queries;
	// required while either default is in use.
	Selector        string          `yaml:"selector"`
	LatencyQuery    string          `yaml:"latency_query"`
	ErrorRatioQuery string          `yaml:"error_ratio_query"`
	SaturationQuery string          `yaml:"saturation_query"`
	AdmittedQuery   string          `yaml:"admitted_query"` // admitted req/s by tier, for the tier rate caps
	Timeout         policy.Duration `yaml:"timeout"`
}

// ControllerConfig is the control loop.
type ControllerConfig struct {
	Disabled         bool            `yaml:"disabled"`
	Period           policy.Duration `yaml:"period"`
	LatencyTarget    policy.Duration `yaml:"latency_target"`
	ErrorRatioTarget float64         `yaml:"error_ratio_target"`
	SaturationTarget float64         `yaml:"saturation_target"`
	Headroom         *float64        `yaml:"headroom"` // nil: the law's default; an explicit 0 is an error, not the default
	Cooldown         policy.Duration `yaml:"cooldown"` // least time between two cuts; ≥ scrape interval + rate window with PromQL
	HoldTimeout      policy.Duration `yaml:"hold_timeout"`
	ProbeAfter       policy.Duration `yaml:"probe_after"` // a capped tier at its last cut level holds this long before probing past it
	LeaseTTL         policy.Duration `yaml:"lease_ttl"`
	// MultiplierStaleAfter (stale_after): the enforcers treat multipliers
	// published longer ago as 1. It is the enforcers' setting, the
	// coordination's staleness (coord.Settings.StaleAfter).
	MultiplierStaleAfter policy.Duration `yaml:"stale_after"`
	// SignalStaleAfter: the controller ignores a signal sample older than
	// this (controller.Settings.SignalStaleAfter); 0: three periods.
	SignalStaleAfter policy.Duration `yaml:"signal_stale_after"`
	// DryRun (controller.dry_run) makes the load shedding observe-only:
	// multipliers, tier caps and the gate refuse nothing, the quota still
	// does. The controller computes and exports its multipliers as ever.
	DryRun bool `yaml:"dry_run"`
	// Scope (controller.scope) is whose overload a cut answers: "fleet"
	// (the default: one multiplier per tier for every instance, for
	// instances that share a backend) or "instance" (a sidecar per pod,
	// each with its own backend: the leader also steps each instance on its
	// own saturation and publishes its factors; see controller.Scope).
	Scope string `yaml:"scope"`
}

// ConcurrencyConfig is the inner, fast loop of every enforcing sidecar: a
// limit on the requests in flight to the upstream that follows the
// upstream's own latency (gradient against a no-load baseline) every
// interval, and that refuses the lowest-priority tier first (503 shed). Zero
// values mean the defaults of controller.GradientSettings and
// bulkhead.GateSettings; target defaults to controller.latency_target.
type ConcurrencyConfig struct {
	Disabled     bool            `yaml:"disabled"`
	Interval     policy.Duration `yaml:"interval"`
	Target       policy.Duration `yaml:"target"` // latency above this always cuts the limit
	Tolerance    float64         `yaml:"tolerance"`
	MinLimit     int             `yaml:"min_limit"`
	MaxLimit     int             `yaml:"max_limit"`
	InitialLimit int             `yaml:"initial_limit"`
	MaxQueue     int             `yaml:"max_queue"` // waiters at the limit, most important first
	MaxWait      policy.Duration `yaml:"max_wait"`  // longest wait at the limit; default target / 4
	// TopMaxWait is the longest wait of the requests of priority-0 tiers
	// (default 2 × max_wait): refused only when nothing else is left, they
	// queue rather than shed while they alone fill the upstream.
	TopMaxWait policy.Duration `yaml:"top_max_wait"`
}

// IdentityConfig says how clients are identified.
type IdentityConfig struct {
	APIKeyHeader   string    `yaml:"api_key_header"`
	TrustedProxies []string  `yaml:"trusted_proxies"`
	IPv6Prefix     int       `yaml:"ipv6_prefix"`
	JWT            JWTConfig `yaml:"jwt"`
	// UnassignedKeys: "anonymous" (default: a key without an assignment is
	// not believed, the client is its IP) or "default_tier" (keys are
	// verified upstream: every key is a client of the default tier).
	UnassignedKeys string `yaml:"unassigned_keys"`
}

// JWTConfig verifies bearer tokens: a secret (HS256) or a public key file
// (RS256, ES256). Neither: JWT subjects are not used.
type JWTConfig struct {
	Secret        string          `yaml:"secret"`
	PublicKeyFile string          `yaml:"public_key_file"`
	Issuer        string          `yaml:"issuer"`
	Audience      string          `yaml:"audience"`
	Leeway        policy.Duration `yaml:"leeway"`
}

// FallbackConfig is the behaviour while Redis fails.
type FallbackConfig struct {
	Instances int             `yaml:"instances"` // 0: count live instances through Redis heartbeats
	Deadline  policy.Duration `yaml:"deadline"`  // per decision
	// ConsecutiveFailures of Redis calls open the store's breaker, which
	// stays open OpenTimeout before a probe.
	ConsecutiveFailures int             `yaml:"consecutive_failures"`
	OpenTimeout         policy.Duration `yaml:"open_timeout"`
}

// Bulkhead bounds the requests of one tier in flight to the upstream.
type Bulkhead struct {
	Limit   int             `yaml:"limit"`
	Queue   int             `yaml:"queue"`
	MaxWait policy.Duration `yaml:"max_wait"`
}

// BreakerConfig trips a circuit breaker per upstream route (path prefix in
// Routes; other paths share the "default" breaker) on 5xx answers and on
// answers slower than Deadline; while open, requests get a fast 503.
type BreakerConfig struct {
	Enabled             bool            `yaml:"enabled"`
	Routes              []string        `yaml:"routes"`
	ConsecutiveFailures int             `yaml:"consecutive_failures"`
	OpenTimeout         policy.Duration `yaml:"open_timeout"`
	Deadline            policy.Duration `yaml:"deadline"`
}

// LogConfig sets the log level: debug, info, warn or error.
type LogConfig struct {
	Level string `yaml:"level"`
}

// defaults fills zero values. It is the one place defaults are set.
func (c *Config) defaults() {
	setDefault(&c.Admin.Listen, "127.0.0.1:9090")
	setDefault(&c.Listen, "127.0.0.1:8080")
	setDefault(&c.Redis.Prefix, "throttled:")
	setDefault(&c.Redis.Timeout, policy.Duration(time.Second))
	setDefault(&c.Controller.Period, policy.Duration(5*time.Second))
	setDefault(&c.Controller.LatencyTarget, policy.Duration(500*time.Millisecond))
	setDefault(&c.Controller.ErrorRatioTarget, 0.05)
	setDefault(&c.Controller.LeaseTTL, policy.Duration(3*time.Duration(c.Controller.Period)))
	// Multipliers must outlive a leader change: a leader that dies right
	// after publishing leaves them unrenewed until its lease expires and a
	// follower's next tick (up to a jittered period later) publishes again.
	setDefault(&c.Controller.MultiplierStaleAfter, policy.Duration(minStaleAfter(&c.Controller)))
	setDefault(&c.Concurrency.Target, c.Controller.LatencyTarget)
	if c.InnerLoop() {
		// The outer loop reads the inner loop's saturation, so that a cut
		// the inner loop holds moves to the multipliers (cascade).
		setDefault(&c.Controller.SaturationTarget, 0.05)
		setDefault(&c.Prometheus.SaturationQuery, defaultSaturationQuery)
	}
	setDefault(&c.Concurrency.MaxWait, c.Concurrency.Target/4) // queueing at the limit stays well within the target
	setDefault(&c.Concurrency.TopMaxWait, 2*c.Concurrency.MaxWait)
	setDefault(&c.Fallback.Deadline, policy.Duration(50*time.Millisecond))
	setDefault(&c.Fallback.ConsecutiveFailures, bulkhead.DefaultConsecutiveFailures)
	setDefault(&c.Fallback.OpenTimeout, policy.Duration(500*time.Millisecond))
	setDefault(&c.Log.Level, "info")
	setDefault(&c.ConfigSource.Source, SourceStore.String())
	setDefault(&c.UpstreamBreaker.Deadline, policy.Duration(10*time.Second))
	setDefault(&c.UpstreamTimeout, policy.Duration(proxy.DefaultTimeout))
	setDefault(&c.MaxBodyBytes, proxy.DefaultMaxBodyBytes)
}

// minStaleAfter is the least controller.stale_after that survives a leader
// failover: lease_ttl + 2 × period (the lease running out, then a follower's
// jittered tick, with a period to spare).
func minStaleAfter(cc *ControllerConfig) time.Duration {
	return cc.LeaseTTL.D() + 2*cc.Period.D()
}

// InnerLoop reports whether an instance that serves traffic (the proxy,
// or the middleware of a program that embeds throttled) runs the inner,
// concurrency loop: unless concurrency.disabled. A controller-only
// replica runs none whatever this says.
func (c *Config) InnerLoop() bool { return !c.Concurrency.Disabled }

// defaultSaturationQuery reads the inner loops' refused fractions.
const defaultSaturationQuery = "max(" + controller.SaturationMetric + ")"

// saturationIsRefused reports whether the saturation signal is the inner
// loop's refused fraction (its own gauge, or the default query of it), which
// tells the law how much load to keep.
func (c *Config) SaturationIsRefused() bool {
	return c.InnerLoop() && (c.Prometheus.URL == "" || c.Prometheus.SaturationQuery == defaultSaturationQuery)
}

func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// Redact hides a password in a URL for logs.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable)"
	}
	return u.Redacted()
}
