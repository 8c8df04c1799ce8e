package instrument

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/throttledhq/throttled/limiter"
)

// Metrics holds the limiter's Prometheus collectors. Make one per registry
// and share it between stores and middleware.
type Metrics struct {
	decisions *prometheus.CounterVec   // throttled_decisions_total{tier,rule,decision}
	latency   *prometheus.HistogramVec // throttled_decision_duration_seconds{store}
	errors    *prometheus.CounterVec   // throttled_store_errors_total{kind}

	mu       sync.RWMutex // guards counters
	counters map[labelKey]*decisionCounters
}

type labelKey struct{ tier, rule string }

// decisionCounters are the children for one tier and rule, indexed by
// decisionIndex, so the hot path looks labels up once.
type decisionCounters [2 * limiter.NumReasons]prometheus.Counter

// decisionIndex orders a decision's counters as limiter.DecisionLabels.
func decisionIndex(d limiter.Decision) int {
	i := int(d.Reason)
	if d.Fallback {
		i += limiter.NumReasons
	}
	return i
}

// NewMetrics registers the limiter's collectors on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "throttled_decisions_total",
			Help: "Decisions by tier, rule and decision (allowed, over_quota, shed, fallback_*).",
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
		counters: make(map[labelKey]*decisionCounters),
	}
	for _, c := range []prometheus.Collector{m.decisions, m.latency, m.errors} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// CountDecision counts one decision for tier and rule.
func (m *Metrics) CountDecision(tier, rule string, d limiter.Decision) {
	k := labelKey{tier, rule}
	m.mu.RLock()
	c := m.counters[k]
	m.mu.RUnlock()
	if c == nil {
		c = m.resolve(k)
	}
	c[decisionIndex(d)].Inc()
}

func (m *Metrics) resolve(k labelKey) *decisionCounters {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c := m.counters[k]; c != nil {
		return c
	}
	c := new(decisionCounters)
	for i, l := range limiter.DecisionLabels {
		c[i] = m.decisions.WithLabelValues(k.tier, k.rule, l)
	}
	m.counters[k] = c
	return c
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

// Store wraps s so that every decision is counted and timed under the
// store label name.
func Store(s limiter.Store, m *Metrics, name string) limiter.Store {
	return &instrumented{s: s, m: m, latency: m.latency.WithLabelValues(name)}
}

type instrumented struct {
	s       limiter.Store
	m       *Metrics
	latency prometheus.Observer
}

func (i *instrumented) Decide(ctx context.Context, req limiter.Request) (limiter.Decision, error) {
	start := time.Now()
	d, err := i.s.Decide(ctx, req)
	i.latency.Observe(time.Since(start).Seconds())
	if err != nil {
		i.m.CountError(err)
		return d, err
	}
	if !req.Refund {
		i.m.CountDecision(req.Tier, req.Rule.Name, d)
	}
	return d, nil
}
