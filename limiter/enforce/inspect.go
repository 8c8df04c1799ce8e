package enforce

import (
	"context"
	"time"

	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/identity"
)

// BucketState is what one rule's bucket holds for a client now.
type BucketState struct {
	Rule       string        `json:"rule"`
	Tier       string        `json:"tier"`
	Algorithm  string        `json:"algorithm"`
	Limit      int64         `json:"limit"`
	Period     time.Duration `json:"period_ns"`
	Remaining  int64         `json:"remaining"`
	ResetAfter time.Duration `json:"reset_after_ns"`
}

// Inspect reads, without spending anything, the buckets of the rules keyed
// by the client alone (key sources api_key, client, jwt or one header) for a
// client key, at that client's tier.
func (e *Enforcer) Inspect(ctx context.Context, client string) ([]BucketState, error) {
	p := e.policy.Load()
	id := &identity.Client{APIKey: client}
	tier := p.tier(id, e.set.Tiers)
	var out []BucketState
	for i := range p.rules {
		cr := &p.rules[i]
		if len(cr.keys) != 1 || !clientKeyed(cr.keys[0].kind) {
			continue
		}
		r := cr.rule(tier)
		d, err := e.store.Decide(ctx, limiter.Request{Key: cr.keyOf(tier, client), Rule: r, Peek: true, Tier: tier.Name,
			Multiplier: e.multiplier(tier.Name)})
		if err != nil {
			return out, err
		}
		out = append(out, BucketState{Rule: cr.Name, Tier: tier.Name, Algorithm: r.Algorithm.String(), Limit: r.Limit,
			Period: r.Period, Remaining: d.Remaining, ResetAfter: d.ResetAfter})
	}
	return out, nil
}

func clientKeyed(kind string) bool {
	return kind == "api_key" || kind == "client" || kind == "jwt" || kind == "header"
}
