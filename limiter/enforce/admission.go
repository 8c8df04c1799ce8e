package enforce

import (
	"context"
	"math"
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
// instances. A refusal is Shed (503), a refusal for load: what the rules
// took stays spent (see the package doc, "Quota and load").
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
	cr := compiledRule{Rule: Rule{Name: TierAdmissionRule}}
	ps.res.refuse(&cr, req.Rule, d)
	ps.res.Limited = true
	e.countRefusal(tier, &ps.res, nil)
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
