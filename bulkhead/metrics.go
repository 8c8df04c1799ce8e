package bulkhead

import (
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/throttledhq/throttled/internal/promreg"
)

// Metric names: contracts with the dashboards and alert rules.
const (
	// MetricBreakerState is a gauge per breaker: 0 closed, 1 half-open, 2 open
	// (the State values).
	MetricBreakerState = "throttled_breaker_state"
	// MetricBulkheadInFlight is a gauge per bulkhead: permits held now.
	MetricBulkheadInFlight = "throttled_bulkhead_inflight"
	// MetricBulkheadRejected counts refusals per bulkhead (ErrFull) and per
	// gate (ErrShed).
	MetricBulkheadRejected = "throttled_bulkhead_rejected_total"
	// MetricBulkheadShed counts a gate's ErrShed refusals by the priority of
	// the refused call; the label is "0" to "7", "7" counting 7 and above.
	MetricBulkheadShed = "throttled_bulkhead_shed_total"
	// MetricConcurrencyLimit is a gauge per bulkhead and gate: the current
	// limit on permits held at once.
	MetricConcurrencyLimit = "throttled_concurrency_limit"
)

// shedLabels bounds the priority label of MetricBulkheadShed.
const shedLabels = 8

func shedLabel(p int) string { return strconv.Itoa(min(p, shedLabels-1)) }

// Metrics holds the collectors that bulkheads and breakers share; every
// series carries the label name. Make one per registry with NewMetrics and
// pass it to New, NewBreaker, NewSet and NewBreakerSet.
//
// The gauges are read from the bulkheads and breakers at scrape time, so
// the hot path pays only for the rejection counter, and a breaker's state is
// current even when no call has passed since its open timeout ran out.
type Metrics struct {
	rejected *prometheus.CounterVec
	shed     *prometheus.CounterVec
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
		Help: "Calls refused by a full bulkhead (ErrFull) or shed by a gate (ErrShed).",
	}, []string{"name"}))
	if err != nil {
		return nil, err
	}
	shed, err := register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricBulkheadShed,
		Help: "Calls shed by a gate (ErrShed), by priority (7 counts 7 and above).",
	}, []string{"name", "priority"}))
	if err != nil {
		return nil, err
	}
	live, err := register(reg, newLiveCollector())
	if err != nil {
		return nil, err
	}
	return &Metrics{rejected: rejected, shed: shed, live: live}, nil
}

// register registers c, or returns the collector of the same type that is
// already registered in its place.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	c, err := promreg.Shared(reg, c)
	if err != nil {
		return c, fmt.Errorf("bulkhead: registering metrics: %w", err)
	}
	return c, nil
}

// pool is a bulkhead or a gate, as the gauges read it.
type pool interface {
	InFlight() int
	Limit() int
}

// liveCollector reports the gauges from the attached bulkheads, gates and
// breakers. Bulkheads and gates share one name space (they share series).
type liveCollector struct {
	inflight *prometheus.Desc
	limit    *prometheus.Desc
	state    *prometheus.Desc

	mu       sync.RWMutex
	pools    map[string]pool
	breakers map[string]*Breaker
}

func newLiveCollector() *liveCollector {
	return &liveCollector{
		inflight: prometheus.NewDesc(MetricBulkheadInFlight,
			"Permits held now in a bulkhead.", []string{"name"}, nil),
		limit: prometheus.NewDesc(MetricConcurrencyLimit,
			"Current limit on permits held at once in a bulkhead or gate.", []string{"name"}, nil),
		state: prometheus.NewDesc(MetricBreakerState,
			"Circuit breaker state: 0 closed, 1 half-open, 2 open.", []string{"name"}, nil),
		pools:    map[string]pool{},
		breakers: map[string]*Breaker{},
	}
}

func (c *liveCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.inflight
	ch <- c.limit
	ch <- c.state
}

func (c *liveCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for name, p := range c.pools {
		ch <- prometheus.MustNewConstMetric(c.inflight, prometheus.GaugeValue, float64(p.InFlight()), name)
		ch <- prometheus.MustNewConstMetric(c.limit, prometheus.GaugeValue, float64(p.Limit()), name)
	}
	for name, b := range c.breakers {
		ch <- prometheus.MustNewConstMetric(c.state, prometheus.GaugeValue, float64(b.State()), name)
	}
}

func (m *Metrics) attachBulkhead(b *Bulkhead) error {
	return m.attachPool(b.name, b, "bulkhead")
}

func (m *Metrics) attachPool(name string, p pool, kind string) error {
	return attach(m.live, m.live.pools, name, p, kind)
}

func (m *Metrics) attachBreaker(b *Breaker) error {
	return attach(m.live, m.live.breakers, b.name, b, "breaker")
}

func attach[T comparable](c *liveCollector, to map[string]T, name string, v T, kind string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, dup := to[name]; dup {
		return fmt.Errorf("bulkhead: a %s named %q is already attached to these metrics (Close it first)", kind, name)
	}
	to[name] = v
	return nil
}

func (m *Metrics) detachBulkhead(b *Bulkhead) {
	m.detachPool(b.name, b)
}

// detachPool detaches p and deletes its rejection series; false if p was
// not the one attached under name.
func (m *Metrics) detachPool(name string, p pool) bool {
	if !detach(m.live, m.live.pools, name, p) {
		return false
	}
	m.rejected.DeleteLabelValues(name)
	return true
}

func (m *Metrics) detachBreaker(b *Breaker) {
	detach(m.live, m.live.breakers, b.name, b)
}

func detach[T comparable](c *liveCollector, from map[string]T, name string, v T) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if from[name] != v {
		return false
	}
	delete(from, name)
	return true
}
