package enforce

import (
	"context"

	"github.com/throttledhq/throttled/limiter"
)

// LeaseRules returns the Store an Enforcer decides through when some rules
// run in lease mode: the decisions of the rules named in names go to leased
// (a store that leases tokens in batches from the shared store and spends
// them locally, such as a tokenlease.Store over shared), every other
// decision to shared. Tier admission buckets (Settings.Rates) always go to
// shared.
func LeaseRules(shared, leased limiter.Store, names ...string) limiter.Store {
	if len(names) == 0 {
		return shared
	}
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	return &leaseRouter{shared: shared, leased: leased, names: set}
}

// leaseRouter routes by rule name; names is never written after LeaseRules.
type leaseRouter struct {
	shared, leased limiter.Store
	names          map[string]bool
}

func (l *leaseRouter) Decide(ctx context.Context, req limiter.Request) (limiter.Decision, error) {
	if l.names[req.Rule.Name] && req.Rule.Name != TierAdmissionRule {
		return l.leased.Decide(ctx, req)
	}
	return l.shared.Decide(ctx, req)
}
