package bulkhead

import (
	"errors"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric names: contracts with the dashboards and alert rules.
const (
	// MetricBreakerState is a gauge per breaker: 0 closed, 1 half-open, 2 open
	// (the State values).
	MetricBreakerState = "throttled_breaker_state"
	// MetricBulkheadInFlight is a gauge per bulkhead: permits held now.
	MetricBulkheadInFlight = "throttled_bulkhead_inflight"
	// MetricBulkheadRejected counts ErrFull refusals per bulkhead.
	MetricBulkheadRejected = "throttled_bulkhead_rejected_total"
)

// Metrics holds the collectors that bulkheads and breakers share; every
// series carries the label name. Make one per registry with NewMetrics and
// pass it to New, NewBreaker, NewSet and NewBreakerSet.
//
// The gauges are read from the bulkheads and breakers at scrape time, so
// the hot path pays only for the rejection counter, and a breaker's state is
// current even when no call has passed since its open timeout ran out.
type Metrics struct {
	rejected *prometheus.CounterVec
	live     *liveCollector
}

// NewMetrics registers the collectors with reg. Calling it again with the
// same reg does not fail: the new Metrics shares the registered collectors.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	if reg == nil {
		return nil, errors.New("bulkhead: NewMetrics: nil prometheus.Registerer")
	}
	rejected, err := register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricBulkheadRejected,
		Help: "Calls refused by a full bulkhead (ErrFull).",
	}, []string{"name"}))
	if err != nil {
		return nil, err
	}
	live, err := register(reg, newLiveCollector())
	if err != nil {
		return nil, err
	}
	return &Metrics{rejected: rejected, live: live}, nil
}

// register registers c, or returns the collector of the same type that is
// already registered in its place.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if prev, ok := are.ExistingCollector.(C); ok {
			return prev, nil
		}
	}
	if err != nil {
		return c, fmt.Errorf("bulkhead: registering metrics: %w", err)
	}
	return c, nil
}

// liveCollector reports the gauges from the attached bulkheads and breakers.
type liveCollector struct {
	inflight *prometheus.Desc
	state    *prometheus.Desc

	mu        sync.RWMutex
	bulkheads map[string]*Bulkhead
	breakers  map[string]*Breaker
}

func newLiveCollector() *liveCollector {
	return &liveCollector{
		inflight: prometheus.NewDesc(MetricBulkheadInFlight,
			"Permits held now in a bulkhead.", []string{"name"}, nil),
		state: prometheus.NewDesc(MetricBreakerState,
			"Circuit breaker state: 0 closed, 1 half-open, 2 open.", []string{"name"}, nil),
		bulkheads: map[string]*Bulkhead{},
		breakers:  map[string]*Breaker{},
	}
}

func (c *liveCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.inflight
	ch <- c.state
}

func (c *liveCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for name, b := range c.bulkheads {
		ch <- prometheus.MustNewConstMetric(c.inflight, prometheus.GaugeValue, float64(b.InFlight()), name)
	}
	for name, b := range c.breakers {
		ch <- prometheus.MustNewConstMetric(c.state, prometheus.GaugeValue, float64(b.State()), name)
	}
}

func (m *Metrics) attachBulkhead(b *Bulkhead) error {
	return attach(m.live, m.live.bulkheads, b.name, b, "bulkhead")
}

func (m *Metrics) attachBreaker(b *Breaker) error {
	return attach(m.live, m.live.breakers, b.name, b, "breaker")
}

func attach[T any](c *liveCollector, to map[string]*T, name string, v *T, kind string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, dup := to[name]; dup {
		return fmt.Errorf("bulkhead: a %s named %q is already attached to these metrics (Close it first)", kind, name)
	}
	to[name] = v
	return nil
}

func (m *Metrics) detachBulkhead(b *Bulkhead) {
	if detach(m.live, m.live.bulkheads, b.name, b) {
		m.rejected.DeleteLabelValues(b.name)
	}
}

func (m *Metrics) detachBreaker(b *Breaker) {
	detach(m.live, m.live.breakers, b.name, b)
}

func detach[T any](c *liveCollector, from map[string]*T, name string, v *T) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if from[name] != v {
		return false
	}
	delete(from, name)
	return true
}
