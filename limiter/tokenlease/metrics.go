package tokenlease

import (
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the lease table's metrics, for any number of stores (one
// per lease setting in use): throttled_lease_keys, the keys they keep
// leases for, and throttled_lease_evictions_total, the leases evicted at
// Settings.MaxKeys. A store counts from New until Close.
type Metrics struct {
	evictions prometheus.Counter
	mu        sync.Mutex
	stores    map[*Store]struct{}
}

// NewMetrics registers the lease table's metrics with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{stores: map[*Store]struct{}{}}
	m.evictions = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "throttled_lease_evictions_total",
		Help: "Leases evicted, the key idle longest first, because the lease table held its most keys (Settings.MaxKeys).",
	})
	keys := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "throttled_lease_keys",
		Help: "Keys the lease table keeps leases for: those seen within the lease ttl, at most Settings.MaxKeys per lease setting.",
	}, m.keys)
	for _, c := range []prometheus.Collector{m.evictions, keys} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("tokenlease: register metrics: %w", err)
		}
	}
	return m, nil
}

func (m *Metrics) track(s *Store) {
	m.mu.Lock()
	m.stores[s] = struct{}{}
	m.mu.Unlock()
}

// keys sums the stores' keys (a scrape locks each shard in turn).
func (m *Metrics) keys() float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for s := range m.stores {
		n += s.Len()
	}
	return float64(n)
}

// Close stops counting s in its Metrics (a store no longer used). The
// store still decides.
func (s *Store) Close() error {
	if m := s.set.Metrics; m != nil {
		m.mu.Lock()
		delete(m.stores, s)
		m.mu.Unlock()
	}
	return nil
}
