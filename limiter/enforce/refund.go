package enforce

import (
	"context"
	"net/http"

	"github.com/throttledhq/throttled/limiter"
)

// Refund gives back what Check took for r when res admitted it, for a
// request refused after the check (a full bulkhead, the concurrency gate):
// the cost of every enforcing rule that applied, and the tier's admission
// token when the tier is capped. It recomputes the keys from r with the
// current policy, so a policy swapped in between refunds what the new one
// would have taken. Shadow rules are left alone: they never refuse, and
// what they counted only feeds the shadow log. Refunds outlive ctx's
// cancellation, as they must reach the store.
func (e *Enforcer) Refund(ctx context.Context, r *http.Request, res *Result) {
	if !res.Allowed || !res.Limited {
		return
	}
	ctx = context.WithoutCancel(ctx)
	p := e.policy.Load()
	id := e.set.Identifier.Identify(r)
	tier := p.tier(&id, e.set.Tiers, e.set.UnassignedKeys)
	m := e.multiplier(tier.Name)
	for i := range p.rules {
		cr := &p.rules[i]
		if cr.Mode == ModeShadow || !cr.matches(r.Method, r.URL.Path) {
			continue
		}
		if key, ok := cr.key(&id, r, tier); ok {
			_, _ = e.store.Decide(ctx, limiter.Request{Key: key, Rule: cr.rule(tier), Cost: cr.Cost, Multiplier: m,
				Tier: tier.Name, Refund: true})
		}
	}
	if e.set.Rates == nil {
		return
	}
	if rate := e.set.Rates.Rate(tier.Name); rate > 0 {
		_, _ = e.store.Decide(ctx, limiter.Request{Key: tierKey(tier.Name), Rule: tierRule(rate), Tier: tier.Name, Refund: true})
	}
}
