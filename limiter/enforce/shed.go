package enforce

import (
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/identity"
)

// pendingShed is a rule's shed (503, its multiplier) held while the later
// rules are asked for their quota: quota first, so a request over any of
// its rules' quotas is 429 even when an earlier rule would shed it.
type pendingShed struct {
	cr   *compiledRule // nil: none
	rule limiter.Rule
	d    limiter.Decision
	who  identity.Client // a copy: a pointer kept here would move the caller's to the heap
	anon bool            // no client to count (who was nil)
	tier string
}

// holdShed keeps what the shed spent of cr's quota, to give back should a
// later rule refuse for quota, and holds the first shed as the request's
// refusal. Giving a shed's quota back gives back an admission token it did
// not take: at most one per such request, within the admission capacity.
func (ps *pass) holdShed(cr *compiledRule, req *limiter.Request, d limiter.Decision, who *identity.Client) {
	ps.keep(req)
	if ps.shed.cr == nil {
		ps.shed = pendingShed{cr: cr, rule: req.Rule, d: d, anon: who == nil, tier: req.Tier}
		if who != nil {
			ps.shed.who = *who
		}
	}
}

// refuseShed makes the held shed the request's refusal: no later rule
// refused it for quota, and what every rule took stays spent (a refusal
// for load gives no quota back).
func (ps *pass) refuseShed() {
	s := &ps.shed
	ps.res.refuse(s.cr, s.rule, s.d)
	ps.e.count(s.tier, s.cr.Name, s.d.Label())
	who := &s.who
	if s.anon {
		who = nil
	}
	ps.e.countRefusal(s.tier, &ps.res, who)
	ps.shedStood = true
}
