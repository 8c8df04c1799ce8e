package enforce

import (
	"context"
	"math"
	"strings"
	"time"

	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/identity"
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
// took stays spent (see the package doc, "Quota and load"); a dry run of
// the load lets it pass.
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
	if !d.Allowed && e.set.DryRun.ObservesLoad() {
		e.count(tier, TierAdmissionRule, LabelDryRunShed)
		ps.res.DryRun = limiter.Shed.String()
		return
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

// passShed lets the held shed pass in a dry run of the load: what every
// rule took stays spent, as for an admitted request, and the shed is the
// would-be answer unless a dry run let a refusal for quota pass first.
func (ps *pass) passShed() {
	s := &ps.shed
	if ps.res.DryRun == "" {
		ps.e.count(s.tier, s.cr.Name, LabelDryRunShed)
		ps.res.DryRun = limiter.Shed.String()
	}
	ps.shed = pendingShed{}
}

// passQuota lets a refusal for quota pass in a dry run: counted as the
// dry run's, and the request's would-be answer (over a held shed).
func (ps *pass) passQuota(cr *compiledRule, tier string, d limiter.Decision) {
	label, reason := LabelDryRunOverQuota, d.Reason.String()
	if cr.Mode == ModeDelay {
		label, reason = LabelDryRunDelayed, LabelDelayed
	}
	ps.e.count(tier, cr.Name, label)
	if ps.res.DryRun == "" || ps.res.DryRun == limiter.Shed.String() {
		ps.res.DryRun = reason
	}
	ps.shed = pendingShed{} // the would-be answer is this one, not the shed's
}
