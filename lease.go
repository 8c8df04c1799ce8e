package throttled

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/enforce"
	"github.com/throttledhq/throttled/limiter/tokenlease"
	"github.com/throttledhq/throttled/policy"
)

// leases is the store of the rules in lease mode (a rule's `lease:`): their
// decisions go to a tokenlease.Store over shared (one per distinct lease
// setting), every other decision to shared itself. It follows the rules in
// force: set runs at start and on every admin change.
type leases struct {
	shared  limiter.Store
	metrics *tokenlease.Metrics                // of every store: throttled_lease_keys, throttled_lease_evictions_total
	mu      sync.Mutex                         // serializes set; guards stores
	stores  map[policy.Lease]*tokenlease.Store // kept across changes, so leases survive them
	cur     atomic.Pointer[leaseRoutes]        // read by every decision
}

type leaseRoutes struct{ limiter.Store }

// newLeases registers the lease table's metrics with reg.
func newLeases(shared limiter.Store, reg prometheus.Registerer) (*leases, error) {
	m, err := tokenlease.NewMetrics(reg)
	if err != nil {
		return nil, err
	}
	l := &leases{shared: shared, metrics: m}
	l.cur.Store(&leaseRoutes{shared})
	return l, nil
}

// Decide routes req by its rule's name.
func (l *leases) Decide(ctx context.Context, req limiter.Request) (limiter.Decision, error) {
	return l.cur.Load().Decide(ctx, req)
}

// set puts the lease settings of rules in force. A setting in use before
// keeps its store and the tokens it holds.
func (l *leases) set(rules []policy.Rule) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	names := map[policy.Lease][]string{}
	for _, r := range rules {
		if r.Lease != nil {
			names[*r.Lease] = append(names[*r.Lease], r.Name)
		}
	}
	stores, routed := make(map[policy.Lease]*tokenlease.Store, len(names)), l.shared
	for set, ns := range names {
		ts := l.stores[set]
		if ts == nil {
			var err error
			ts, err = tokenlease.New(l.shared, tokenlease.Settings{Size: set.Size, TTL: set.TTL.D(),
				MaxKeys: int(set.MaxKeys), Metrics: l.metrics})
			if err != nil {
				return err
			}
		}
		stores[set] = ts
		routed = enforce.LeaseRules(routed, ts, ns...)
	}
	for set, ts := range l.stores {
		if stores[set] == nil {
			_ = ts.Close() // no rule leases so any more: its keys leave the metrics
		}
	}
	l.stores = stores
	l.cur.Store(&leaseRoutes{routed})
	return nil
}
