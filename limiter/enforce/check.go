package enforce

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/identity"
)

// Query asks for one rule's decision for a key, without an HTTP request:
// the checks of a gateway that asks throttled (Envoy's rate limit service,
// POST /v1/check). The caller chose the rule and gives the key, so the
// rule's match (methods, path) and key sources do not apply; its quota
// (its own or the tier's), cost, mode and fallback do.
type Query struct {
	Rule string `json:"rule"` // a rule of the policy, by name
	// Key is the client key: the bucket is the one the middleware uses for
	// a rule keyed by one source with that value, so both share it. "" is
	// one bucket for the whole rule (unless Parts are given).
	Key string `json:"key"`
	// Parts, when given, are the values of a rule keyed by several
	// sources, in order (the middleware's bucket for those values); Key
	// then only names the client (tier lookup, top consumers).
	Parts []string `json:"parts,omitempty"`
	// Tier is the tier whose quota and multiplier apply; "" means the tier
	// assigned to Key (the default tier when none is, the anonymous tier
	// for an empty Key). The caller is trusted to name it.
	Tier string `json:"tier,omitempty"`
	Cost int64  `json:"cost,omitempty"` // tokens; 0 means the rule's cost
	// Peek reads the buckets without spending anything (Cost is ignored):
	// the answer is allowed, with what remains now.
	Peek bool `json:"peek,omitempty"`
}

// Outcome is what one Query got.
type Outcome struct {
	Asked    bool             // false: not asked, an earlier query refused
	Refused  bool             // this query's refusal is the check's
	Decision limiter.Decision // when Asked and Err is nil
	Period   time.Duration    // of the limit that applied
	Tier     string           // whose quota and multiplier applied
	Err      error            // the store failed; the query let the check through
}

// MaxQueries bounds the queries of one CheckKeys call.
const MaxQueries = 64

// ErrQuery is wrapped by every *QueryError.
var ErrQuery = errors.New("enforce: invalid query")

// QueryError is a query that cannot be decided: it names no rule or tier of
// the policy, or its cost is negative or more than the rule's bucket holds.
type QueryError struct {
	Index int    // the query's position
	Field string // rule, tier or cost
	Msg   string
}

func (e *QueryError) Error() string {
	return fmt.Sprintf("enforce: query %d: %s: %s", e.Index, e.Field, e.Msg)
}

// Unwrap makes errors.Is(err, ErrQuery) hold.
func (e *QueryError) Unwrap() error { return ErrQuery }

// CheckKeys decides qs in order, as Check decides the rules a request
// matches: each query's tier, quota and multiplier, the rule's mode, the
// store's fallback; a refusal for quota by one query gives back what
// earlier ones took and ends the check, a shed is held while the later
// queries are asked for their quota (the package doc, "Quota and load");
// an admitted check passes the tier admission cap of its Tier. Its Result reports the most restrictive decision (the
// refusing one when refused) and, as Tier and Priority, the most important
// tier among the queries'. When out is not nil it must hold len(qs)
// outcomes; out[i] gets query i's.
//
// Invalid queries (a *QueryError) or more than MaxQueries fail the whole
// call before anything is spent.
func (e *Enforcer) CheckKeys(ctx context.Context, qs []Query, out []Outcome) (Result, error) {
	if len(qs) > MaxQueries {
		return Result{}, &QueryError{Index: MaxQueries, Field: "queries", Msg: fmt.Sprintf("%d, at most %d", len(qs), MaxQueries)}
	}
	if out != nil && len(out) < len(qs) {
		panic(fmt.Sprintf("enforce: CheckKeys: out holds %d outcomes for %d queries", len(out), len(qs)))
	}
	p := e.policy.Load()
	// The plan of Envoy's usual call of one or two descriptors lives on the
	// stack; a larger one is made. A [MaxQueries] array (2 KB) made this
	// frame 3.4 KB, which with gRPC's frames above it and the store's below
	// grew every rate limit service call's goroutine stack past its 8 KB.
	var small [4]planned
	plan := small[:]
	if len(qs) > len(small) {
		plan = make([]planned, len(qs))
	}
	best, err := p.plan(qs, e.set.Tiers, e.set.UnassignedKeys, plan[:len(qs)])
	if err != nil {
		return Result{}, err
	}
	ps := pass{e: e, res: Result{Allowed: true}}
	if best != nil {
		ps.res.Tier, ps.res.Priority = best.Name, best.Priority
	}
	clear(out)
	spent, shedAt := false, -1
	for i := range qs {
		q, pl := &qs[i], &plan[i]
		ps.peek, spent = pl.peek, spent || !pl.peek
		var who *identity.Client // counted when refused, as an API key: the key may be a secret
		if q.Key != "" {
			who = &identity.Client{APIKey: q.Key}
		}
		d, period, more, err := ps.askAll(ctx, pl.cr, pl.tier, pl.cr.keyOf(pl.tier, q.parts()...), pl.cost,
			e.multiplier(pl.tier.Name), who)
		if shedAt < 0 && ps.shed.cr != nil {
			shedAt = i
		}
		if out != nil {
			out[i] = Outcome{Asked: true, Refused: !more, Decision: d, Period: period, Tier: pl.tier.Name, Err: err}
		}
		if !more {
			break
		}
	}
	if !spent { // a check that only peeked spends no tier admission either
		best = nil
	}
	ps.finish(ctx, best)
	if out != nil && ps.shedStood {
		out[shedAt].Refused = true
	}
	return ps.res, nil
}

// Reason is what a check came to: limiter.Allowed when allowed (even when a
// shadow rule would have refused), else the refusing decision's reason.
func (res *Result) Reason() limiter.Reason {
	if res.Allowed {
		return limiter.Allowed
	}
	return res.Decision.Reason
}

// applied is one rule that admitted, kept to refund it if a later rule
// refuses.
type applied struct{ req limiter.Request }

// pass is one decision over several rules in progress: the result so far
// and what the admitting rules took, to give back when a later one
// refuses for quota. Check and CheckKeys both decide through it. A pass
// lives on its caller's stack and serves one goroutine.
type pass struct {
	e     *Enforcer
	res   Result
	taken [4]applied // the first admitting limits, without allocating (zeroed with every pass: kept small)
	n     int        // how many of taken are in use
	more  []applied  // the admitting rules after the eighth
	// unlimited: the client being asked for is of an unlimited tier
	unlimited bool
	shed      pendingShed   // the first rule that shed, while the later ones are asked
	shedStood bool          // that shed is the refusal: no later rule refused for quota
	peek      bool          // the query being asked only reads its buckets (Query.Peek)
	held      *scratch      // a Pass's own scratch, reused from check to check; nil: none
	last      bool          // the rule being asked is the policy's last: no later rule can refuse
	r         *http.Request // being checked, its client's IP left out for fillIP (Enforcer.deferIP); or nil
}

// askRule decides rule cr for a client of tier t whose bucket key is key,
// as askAll does, by askSole when it can; false when the rule refused for
// quota.
func (ps *pass) askRule(ctx context.Context, cr *compiledRule, t *Tier, key string, m float64, who *identity.Client) bool {
	if cr.sole && ps.e.mem != nil && !t.Unlimited && ps.shed.cr == nil && !ps.e.set.DryRun.ObservesQuota() {
		return ps.askSole(ctx, cr, t, key, m, who)
	}
	_, _, more, _ := ps.askAll(ctx, cr, t, key, cr.Cost, m, who)
	return more
}

// askSole is askAll and ask for a rule of one limit, not a delay rule, on
// the in-memory store, for a limited tier with no shed held and no dry run
// of the quota (askRule): the same decision, notes and counts, without
// askAll's loop and the frames of ask and Enforcer.decide, each of which
// copied the request or the decision.
func (ps *pass) askSole(ctx context.Context, cr *compiledRule, t *Tier, key string, m float64, who *identity.Client) bool {
	ps.unlimited = false
	var req limiter.Request
	req.Key, req.Rule, req.Cost, req.Multiplier, req.Tier = key, cr.rule(t, 0), cr.Cost, m, t.Name
	d, err := ps.e.mem.DecideRequest(ctx, &req)
	if err != nil {
		ps.res.Err = err
		return true
	}
	ps.res.note(cr, req.Rule.Period, &d)
	if !d.Allowed {
		return ps.notAllowed(ctx, cr, &req, &d, who)
	}
	if !ps.last { // only a later rule's refusal gives back what this one took
		ps.keep(&req)
	}
	ps.e.count(req.Tier, cr.Name, d.Label())
	return true
}

// askAll decides every limit of rule cr for a client of tier t whose
// bucket key is key, in order, through ask. more is false when a limit
// refused for quota (what the earlier limits and rules took is given back
// then). d is the refusing decision, else the most restrictive one, and
// period its limit's; err is the last store error.
func (ps *pass) askAll(ctx context.Context, cr *compiledRule, t *Tier, key string, cost int64, m float64,
	who *identity.Client) (d limiter.Decision, period time.Duration, more bool, err error) {
	ps.unlimited = t.Unlimited
	seen := false
	// req is filled field by field: a composite literal was built in a
	// temporary and copied (112 B) on every limit.
	var req limiter.Request
	req.Cost, req.Multiplier, req.Tier, req.Peek = cost, m, t.Name, ps.peek
	for i := range cr.limits() {
		req.Key, req.Rule = ps.limitKey(cr, key, i), cr.rule(t, i)
		di, ok, e := ps.ask(ctx, cr, &req, who)
		if e != nil {
			err = e
			continue
		}
		if !seen || !ok || tighterOrEqual(&di, &d) {
			d, period, seen = di, req.Rule.Period, true
		}
		if !ok {
			return d, period, false, err
		}
	}
	return d, period, true, err
}

// ask decides req for rule cr and notes the decision. more is false when
// cr refused for quota: what earlier rules took is given back, who is
// counted as a refused client, and no further rule is to be asked. A shed
// is held (holdShed) and more stays true: the request is 503 unless a
// later rule refuses it for quota. A store error is kept in the result and
// lets the request through for that rule. A client of an unlimited tier is
// decided (and counted) but never refused nor delayed.
func (ps *pass) ask(ctx context.Context, cr *compiledRule, req *limiter.Request, who *identity.Client) (d limiter.Decision, more bool, err error) {
	var delayed bool
	// A shed request waits in no delay line (only its quota is asked), nor
	// any in a dry run of the quota.
	if ps.unlimited || ps.shed.cr != nil || ps.e.set.DryRun.ObservesQuota() {
		d, err = ps.e.store.Decide(ctx, *req)
	} else {
		d, delayed, err = ps.e.decide(ctx, cr, req)
	}
	if err != nil {
		ps.res.Err = err
		return d, true, err
	}
	ps.res.note(cr, req.Rule.Period, &d)
	if !d.Allowed {
		return d, ps.notAllowed(ctx, cr, req, &d, who), nil
	}
	ps.keep(req)
	ps.e.count(req.Tier, cr.Name, allowedLabel(d, delayed))
	return d, true, nil
}

// notAllowed is ask's answer to a refusal d of rule cr: out of ask, whose
// every call (the admitted ones too) would otherwise make room on its
// stack for this rarer path's values.
func (ps *pass) notAllowed(ctx context.Context, cr *compiledRule, req *limiter.Request, d *limiter.Decision,
	who *identity.Client) (more bool) {
	if who != nil { // a refused client is counted by its IP when it has no key
		ps.fillIP(who)
	}
	switch {
	case cr.Mode == ModeShadow:
		ps.res.Shadowed = true
		ps.e.count(req.Tier, cr.Name, shadowLabel(*d))
		return true
	case ps.unlimited: // counted as a shadow refusal: it would have been refused, it was not
		ps.res.Unlimited = true
		ps.e.count(req.Tier, cr.Name, shadowLabel(*d))
		return true
	case d.Reason == limiter.Shed: // quota first: the later rules are asked still
		ps.holdShed(cr, req, *d, who)
		return true
	case ps.e.set.DryRun.ObservesQuota(): // the request passes: nothing to give back
		ps.passQuota(cr, req.Tier, *d)
		return true
	}
	ps.giveBack(ctx) // a refusal for quota: what the earlier rules took, sheds' quota included
	ps.shed = pendingShed{}
	ps.res.refuse(cr, req.Rule, *d)
	ps.e.count(req.Tier, cr.Name, d.Label())
	ps.e.countRefusal(req.Tier, &ps.res, who)
	return false
}

func allowedLabel(d limiter.Decision, delayed bool) string {
	if delayed {
		return LabelDelayed
	}
	return d.Label()
}

func shadowLabel(d limiter.Decision) string {
	if d.Reason == limiter.Shed {
		return LabelShadowShed
	}
	return LabelShadowOverQuota
}

// limitKey is cr.limitKey(key, i), made in the request's scratch when it
// has one (Check) rather than on its own.
func (ps *pass) limitKey(cr *compiledRule, key string, i int) string {
	if i == 0 || ps.res.sc == nil {
		return cr.limitKey(key, i)
	}
	a := &ps.res.sc.arena
	start := a.len()
	a.buf = append(a.buf, key...)
	a.buf = append(a.buf, cr.suffix[i]...)
	return a.from(start)
}

func (ps *pass) keep(req *limiter.Request) {
	if ps.n < len(ps.taken) {
		ps.taken[ps.n].req = *req
		ps.n++
		return
	}
	ps.more = append(ps.more, applied{*req})
}

// giveBack refunds what the admitting rules took, the last first.
func (ps *pass) giveBack(ctx context.Context) {
	ps.e.refund(ctx, ps.more)
	ps.e.refund(ctx, ps.taken[:ps.n])
	ps.n, ps.more = 0, nil
}

// finish makes a held shed the refusal (lets it pass in a dry run), applies the tier admission cap to
// an admitted request (tier nil: no rule applied), sets a refusal's
// Retry-After and traces the result.
func (ps *pass) finish(ctx context.Context, tier *Tier) {
	res := &ps.res
	switch {
	case ps.shed.cr != nil && ps.e.set.DryRun.ObservesLoad():
		ps.passShed()
	case ps.shed.cr != nil:
		ps.refuseShed()
	}
	if res.Allowed && res.DryRun == "" && tier != nil { // a dry run's would-be refusal takes no tier admission
		ps.admitTier(ctx, tier.Name)
	}
	if res.Limited {
		if !res.Hidden && res.headerSet() != HeadersIETF { // X-RateLimit-Reset is an epoch time
			res.at = ps.e.set.Now()
		}
		if !res.Allowed {
			res.RetryAfter = ps.e.retryAfter(res)
		}
	}
	trace(ctx, res)
}

func (e *Enforcer) refund(ctx context.Context, done []applied) {
	for i := len(done) - 1; i >= 0; i-- {
		req := done[i].req
		req.Refund = true
		_, _ = e.store.Decide(context.WithoutCancel(ctx), req)
	}
}

// parts are the key-source values of q's bucket.
func (q *Query) parts() []string {
	switch {
	case len(q.Parts) > 0:
		return q.Parts
	case q.Key != "":
		return []string{q.Key}
	}
	return nil
}
