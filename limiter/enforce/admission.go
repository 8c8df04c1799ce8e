package enforce

import (
	"context"
	"math"
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
	req := limiter.Request{Key: "~tier:" + tier, // "~" starts no rule name, so no rule key collides
		Rule: tierRule(rate), Tier: tier}
	d, err := e.store.Decide(ctx, req)
	if err != nil {
		ps.res.Err = err
		return
	}
	if d.Allowed {
		return
	}
	d.Reason = limiter.Shed
	ps.giveBack(ctx)
	cr := compiledRule{Rule: Rule{Name: TierAdmissionRule}}
	ps.res.refuse(&cr, req.Rule, d)
	ps.res.Limited = true
}
