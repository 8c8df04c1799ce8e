package enforce

import (
	"context"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/throttledhq/throttled/limiter"
)

// TierAdmissionRule names the tier-wide admission bucket in results,
// headers and metrics.
const TierAdmissionRule = "tier_admission"

// tierBurst is how much of a second's worth of the cap the tier bucket may
// admit at once: a tenth, so that a capped tier cannot push a second's
// worth of requests at the upstream in one instant.
const tierBurst = 0.1

// tierKey is the key of a tier's admission bucket: "~" starts no rule name,
// so no rule key collides.
func tierKey(tier string) string { return "~tier:" + tier }

// tierRule is the tier-wide bucket for a cap of rate requests per second.
// It allows on store errors: the per-key rules and the concurrency limit
// still protect the upstream.
func tierRule(rate float64) limiter.Rule {
	limit := max(1, int64(math.Round(rate)))
	return limiter.Rule{Name: TierAdmissionRule, Limit: limit, Period: time.Second,
		Burst: max(1, int64(math.Ceil(float64(limit)*tierBurst))), Fallback: limiter.FallbackAllow}
}

// admitTier applies the tier's rate cap, when the controller set one, to a
// request every rule admitted: one bucket per tier, shared by all
// instances. A refusal is Shed (503) and gives back what the rules took.
func (ps *pass) admitTier(ctx context.Context, tier string) {
	e := ps.e
	if e.set.Rates == nil {
		return
	}
	rate := e.set.Rates.Rate(tier)
	if !(rate > 0) {
		return
	}
	req := limiter.Request{Key: tierKey(tier), Rule: tierRule(rate), Tier: tier}
	d, err := e.store.Decide(ctx, req)
	if err != nil {
		ps.res.Err = err
		return
	}
	if !d.Allowed {
		d.Reason = limiter.Shed
	}
	e.count(tier, TierAdmissionRule, d.Label())
	if d.Allowed {
		return
	}
	ps.giveBack(ctx)
	cr := compiledRule{Rule: Rule{Name: TierAdmissionRule}}
	ps.res.refuse(&cr, req.Rule, d)
	ps.res.Limited = true
	e.countRefusal(tier, &ps.res, nil)
}

// Refund gives back what Check took for r when res admitted it, for a
// request refused after the check (a full bulkhead, the concurrency gate):
// the cost of every enforcing rule that applied, and the tier's admission
// token when the tier is capped. It recomputes the keys from r with the
// current policy, so a policy swapped in between refunds what the new one
// would have taken. Shadow rules are left alone: they never refuse, and
// what they counted only feeds the shadow log; so are the rules of an
// unlimited tier, whose decisions may not have taken anything. Refunds
// outlive ctx's cancellation, as they must reach the store.
func (e *Enforcer) Refund(ctx context.Context, r *http.Request, res *Result) {
	if !res.Allowed || !res.Limited {
		return
	}
	ctx = context.WithoutCancel(ctx)
	p := e.policy.Load()
	id := e.set.Identifier.Identify(r)
	tier := p.tier(&id, e.set.Tiers, e.set.UnassignedKeys)
	m := e.multiplier(tier.Name)
	var a arena // every rule's key
	for i := range p.rules {
		cr := &p.rules[i]
		if cr.Mode == ModeShadow || !cr.matches(r.Method, r.URL.Path) {
			continue
		}
		key, ok := cr.key(&id, r, tier, &a)
		for j := 0; ok && !tier.Unlimited && j < cr.limits(); j++ {
			_, _ = e.store.Decide(ctx, limiter.Request{Key: cr.limitKey(key, j), Rule: cr.rule(tier, j), Cost: cr.Cost,
				Multiplier: m, Tier: tier.Name, Refund: true})
		}
	}
	if e.set.Rates == nil {
		return
	}
	if rate := e.set.Rates.Rate(tier.Name); rate > 0 {
		_, _ = e.store.Decide(ctx, limiter.Request{Key: tierKey(tier.Name), Rule: tierRule(rate), Tier: tier.Name, Refund: true})
	}
}

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
	name, _, _ := strings.Cut(req.Rule.Name, "#") // a rule's further limits are "<rule>#2", …
	if l.names[name] && name != TierAdmissionRule {
		return l.leased.Decide(ctx, req)
	}
	return l.shared.Decide(ctx, req)
}
