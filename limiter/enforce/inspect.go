package enforce

import (
	"context"
	"encoding/json"
	"time"

	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/identity"
)

// BucketState is what one rule's bucket holds for a client now. In JSON
// its durations are written as throttled writes every duration
// (limiter.FormatDuration: "1s", "250ms").
type BucketState struct {
	Rule       string        `json:"rule"`
	Tier       string        `json:"tier"`
	Algorithm  string        `json:"algorithm"`
	Limit      int64         `json:"limit"`
	Period     time.Duration `json:"period"`
	Align      string        `json:"align,omitempty"` // "calendar" for UTC calendar windows
	Remaining  int64         `json:"remaining"`
	ResetAfter time.Duration `json:"reset_after"`
}

// MarshalJSON writes b with its durations as strings.
func (b BucketState) MarshalJSON() ([]byte, error) {
	type plain BucketState // without this method
	return json.Marshal(struct {
		plain
		Period     string `json:"period"`
		ResetAfter string `json:"reset_after"`
	}{plain(b), limiter.FormatDuration(b.Period), limiter.FormatDuration(b.ResetAfter)})
}

// KeyTier is the tier of a request, check or descriptor that bears client as
// its API key and nothing else, by the rule every front shares: an assigned
// key gets its tier; an unassigned one is believed (the default tier) only
// with UnassignedDefaultTier, and is otherwise anonymous (the anonymous
// tier; through the middleware its client is then its IP).
func (e *Enforcer) KeyTier(client string) (tier string, believed bool) {
	id := &identity.Client{APIKey: client}
	t := e.policy.Load().tier(id, e.set.Tiers, e.set.UnassignedKeys)
	return t.Name, id.APIKey != ""
}

// Inspect reads, without spending anything, the buckets of the rules keyed
// by the client alone (key sources api_key, client, jwt or one header) for a
// client key, at that client's tier (KeyTier's).
func (e *Enforcer) Inspect(ctx context.Context, client string) ([]BucketState, error) {
	p := e.policy.Load()
	id := &identity.Client{APIKey: client}
	tier := p.tier(id, e.set.Tiers, e.set.UnassignedKeys)
	var out []BucketState
	for i := range p.rules {
		cr := &p.rules[i]
		if len(cr.keys) != 1 || !clientKeyed(cr.keys[0].kind) {
			continue
		}
		for j := range cr.limits() {
			b, err := e.peek(ctx, cr.limitKey(cr.keyOf(tier, client), j), cr.rule(tier, j), tier)
			if err != nil {
				return out, err
			}
			out = append(out, b)
		}
	}
	return out, nil
}

// peek reads one limit's bucket for a client of tier.
func (e *Enforcer) peek(ctx context.Context, key string, r limiter.Rule, tier *Tier) (BucketState, error) {
	d, err := e.store.Decide(ctx, limiter.Request{Key: key, Rule: r, Peek: true, Tier: tier.Name,
		Multiplier: e.multiplier(tier.Name)})
	b := BucketState{Rule: r.Name, Tier: tier.Name, Algorithm: r.Algorithm.String(), Limit: r.Limit,
		Period: r.Period, Remaining: d.Remaining, ResetAfter: d.ResetAfter}
	if r.Align != limiter.AlignPeriod {
		b.Align = r.Align.String()
	}
	return b, err
}

func clientKeyed(kind string) bool {
	return kind == "api_key" || kind == "client" || kind == "jwt" || kind == "header"
}
