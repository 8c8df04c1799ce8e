package instrument

import (
	"context"
	"errors"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/throttledhq/throttled/limiter"
)

// Decision labels of the 503s given after the rules admitted a request
// (the proxy counts them through Metrics.Count). The enforcer's own labels
// beyond limiter.DecisionLabels (shadow_over_quota, shadow_shed, delayed)
// are defined in limiter/enforce.
const (
	DecisionBulkhead    = "bulkhead"     // a full bulkhead (rule: its name)
	DecisionBreakerOpen = "breaker_open" // the upstream's circuit breaker is open (rule: its name)
)

// ErrorKinds are the values of throttled_store_errors_total's kind label,
// all exported at 0 from the start.
var ErrorKinds = [...]string{"timeout", "canceled", "invalid", "redis"}

// Metrics holds the limiter's Prometheus collectors. Make one per registry
// and share it between stores and middleware.
type Metrics struct {
	decisions *prometheus.CounterVec   // throttled_decisions_total{tier,rule,decision}
	latency   *prometheus.HistogramVec // throttled_decision_duration_seconds{store}
	errors    *prometheus.CounterVec   // throttled_store_errors_total{kind}

	// counters is the child counter of every label set counted so far: a
	// map never changed once stored, so that Count reads it without a
	// lock; resolve stores a new one, holding mu.
	counters atomic.Pointer[map[labelKey]prometheus.Counter]
	mu       sync.Mutex
}

type labelKey struct{ tier, rule, decision string }

// NewMetrics registers the limiter's collectors on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "throttled_decisions_total",
			Help: "Decisions as clients saw them, by tier, rule and decision: allowed, over_quota (429), shed (503), " +
				"fallback_*, shadow_over_quota and shadow_shed (a shadow rule would have refused; the request passed), " +
				"delayed (held, then admitted), bulkhead and breaker_open (503 after the rules admitted).",
		}, []string{"tier", "rule", "decision"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "throttled_decision_duration_seconds",
			Help:    "Time to make one decision, by store.",
			Buckets: prometheus.ExponentialBuckets(5e-6, 2.5, 12),
		}, []string{"store"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "throttled_store_errors_total",
			Help: "Store errors by kind (timeout, canceled, invalid, redis).",
		}, []string{"kind"}),
	}
	m.counters.Store(&map[labelKey]prometheus.Counter{})
	for _, k := range ErrorKinds {
		m.errors.WithLabelValues(k)
	}
	for _, c := range []prometheus.Collector{m.decisions, m.latency, m.errors} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Count counts one decision for tier and rule. The first decision of a
// tier and rule among limiter.DecisionLabels also exports the others at 0,
// so that ratios over them exist from the start. It does not allocate for
// labels seen before.
func (m *Metrics) Count(tier, rule, decision string) {
	k := labelKey{tier, rule, decision}
	c := (*m.counters.Load())[k]
	if c == nil {
		c = m.resolve(k)
	}
	c.Inc()
}

// resolve makes the child counter of k (and, for a decision label, of
// its siblings) and stores a new counters map that holds it.
func (m *Metrics) resolve(k labelKey) prometheus.Counter {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur := *m.counters.Load()
	if c := cur[k]; c != nil {
		return c
	}
	next := maps.Clone(cur)
	labels := []string{k.decision}
	if isDecisionLabel(k.decision) {
		labels = limiter.DecisionLabels[:]
	}
	for _, l := range labels {
		if lk := (labelKey{k.tier, k.rule, l}); next[lk] == nil {
			next[lk] = m.decisions.WithLabelValues(k.tier, k.rule, l)
		}
	}
	m.counters.Store(&next)
	return next[k]
}

func isDecisionLabel(s string) bool {
	for _, l := range limiter.DecisionLabels {
		if l == s {
			return true
		}
	}
	return false
}

// CountError counts one store error by its kind.
func (m *Metrics) CountError(err error) { m.errors.WithLabelValues(ErrorKind(err)).Inc() }

// ErrorKind classifies a store error for the kind label.
func ErrorKind(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, limiter.ErrInvalid):
		return "invalid"
	default:
		return "redis"
	}
}

// Store wraps s so that every decision is timed under the store label
// name and every error counted by kind. It does not count decisions: a
// store decision is not what the client saw (a shadow rule's refusal
// passes, a delay rule asks again, a tier cap's refusal is a shed), so the
// enforcer counts them (enforce.Settings.Decisions).
func Store(s limiter.Store, m *Metrics, name string) limiter.Store {
	return &instrumented{s: s, m: m, latency: m.latency.WithLabelValues(name)}
}

type instrumented struct {
	s       limiter.Store
	m       *Metrics
	latency prometheus.Observer
}

// since is the instant decisions are timed from: time.Since of it reads
// the monotonic clock alone, where time.Now reads the wall clock too.
var since = time.Now()

func (i *instrumented) Decide(ctx context.Context, req limiter.Request) (limiter.Decision, error) {
	start := time.Since(since)
	d, err := i.s.Decide(ctx, req)
	i.latency.Observe((time.Since(since) - start).Seconds())
	if err != nil {
		i.m.CountError(err)
	}
	return d, err
}

// CopiesKeys reports whether the store inside copies keys: instrumented
// keeps none (limiter.KeyCopier).
func (i *instrumented) CopiesKeys() bool { return copiesKeys(i.s) }

func copiesKeys(s limiter.Store) bool {
	c, ok := s.(limiter.KeyCopier)
	return ok && c.CopiesKeys()
}
