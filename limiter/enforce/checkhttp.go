package enforce

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"

	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/identity"
	"github.com/throttledhq/throttled/limiter/instrument"
)

// HeaderDecision carries the reason of a refused check (over_quota or shed)
// to a gateway, so that it can answer 429 or 503 as the middleware would.
const HeaderDecision = "X-Throttled-Decision"

// maxCheckBody bounds the body of POST /v1/check.
const maxCheckBody = 64 << 10

// CheckRequest is the body of POST /v1/check: one query
// {"rule","key","tier","cost"}, or several in "checks" (not both).
type CheckRequest struct {
	Query
	Checks []Query `json:"checks,omitempty"`
}

// CheckAnswer is the JSON answer of POST /v1/check. A refused check's
// answer holds the fields of the middleware's Refusal body.
type CheckAnswer struct {
	Allowed bool `json:"allowed"`
	// Status is the middleware's: 200, 429 (over quota) or 503 (shed).
	Status            int    `json:"status"`
	Error             string `json:"error,omitempty"` // a refusal's message
	Reason            string `json:"reason"`          // allowed, over_quota or shed
	Fallback          bool   `json:"fallback"`        // decided while the shared store failed
	Tier              string `json:"tier,omitempty"`
	Rule              string `json:"rule,omitempty"` // of the reported (most restrictive) decision
	Limit             int64  `json:"limit"`
	Remaining         int64  `json:"remaining"`
	ResetAfterSeconds int64  `json:"reset_after_seconds"`
	RetryAfterSeconds int64  `json:"retry_after_seconds,omitempty"`
	Shadowed          bool   `json:"shadowed,omitempty"`
	// DryRun is the reason of the refusal a dry run let pass (Result.DryRun):
	// the check is allowed (200), and this is the answer it would have had.
	DryRun string `json:"dry_run,omitempty"`
	// StoreError is set when the store failed and no fallback decided: the
	// check was let through, as the middleware lets a request through.
	StoreError string         `json:"store_error,omitempty"`
	Checks     []CheckOutcome `json:"checks"`
}

// CheckOutcome is one query's part of a CheckAnswer.
type CheckOutcome struct {
	Rule              string `json:"rule"`
	Tier              string `json:"tier,omitempty"`
	Asked             bool   `json:"asked"` // false: an earlier check refused
	Reason            string `json:"reason,omitempty"`
	Fallback          bool   `json:"fallback,omitempty"`
	Limit             int64  `json:"limit,omitempty"`
	Remaining         int64  `json:"remaining,omitempty"`
	ResetAfterSeconds int64  `json:"reset_after_seconds,omitempty"`
	StoreError        string `json:"store_error,omitempty"`
}

// RequestCounter counts every request or check once, with the answer its
// client gets: tier, HTTP status and reason (instrument.Requests is one,
// the reasons are instrument's).
type RequestCounter interface {
	Count(tier string, code int, reason string)
}

// AnswerReason is why the client gets res's answer, as
// throttled_requests_total counts it: over_quota (429); tier_cap (503, the
// tier-wide cap refused); shed (503, a rule's admission bucket); for an
// admitted request, DryRunPrefix and the refusal a dry run let pass
// (dry_run_over_quota, dry_run_shed, dry_run_delayed), fallback (admitted
// without the shared store's decision: the fallback decided, or the store
// failed and the request was let through), else admitted.
func (res *Result) AnswerReason() string {
	switch {
	case res.Allowed && res.DryRun != "":
		return DryRunPrefix + res.DryRun
	case !res.Allowed && res.Decision.Reason == limiter.OverQuota:
		return instrument.ReasonOverQuota
	case !res.Allowed && res.Rule == TierAdmissionRule:
		return instrument.ReasonTierCap
	case !res.Allowed:
		return instrument.ReasonShed
	case res.Decision.Fallback || res.Err != nil:
		return instrument.ReasonFallback
	}
	return instrument.ReasonAdmitted
}

// Limits are the limits in force now, for throttled_limit and the
// gateways' operators: for every tier (by name) and every enforced rule
// (a shadow rule is not in force; an unlimited tier's clients are never
// refused by a rule), the rule's limit in requests per second (its own,
// the tightest of several, or the tier's quota) times the tier's
// multiplier; then the tier-wide admission cap (rule tier_admission) of a
// tier that has one.
func (e *Enforcer) Limits() []instrument.Limit {
	p := e.policy.Load()
	var out []instrument.Limit
	for _, name := range slices.Sorted(maps.Keys(p.tiers)) {
		t := p.tiers[name]
		m := e.multiplier(name)
		for i := range p.rules {
			cr := &p.rules[i]
			if cr.Mode == ModeShadow || t.Unlimited {
				continue
			}
			out = append(out, instrument.Limit{Tier: name, Rule: cr.Name, PerSecond: cr.perSecond(t) * m})
		}
		if e.set.Rates != nil {
			if r := e.set.Rates.Rate(name); r > 0 {
				out = append(out, instrument.Limit{Tier: name, Rule: TierAdmissionRule, PerSecond: r})
			}
		}
	}
	return out
}

// perSecond is the rule's base limit for a client of tier t, in requests
// per second: the tightest of its own limits, or the tier's quota.
func (cr *compiledRule) perSecond(t *Tier) float64 {
	if len(cr.own) == 0 {
		return float64(t.Limit) / t.Period.Seconds()
	}
	least := math.Inf(1)
	for _, l := range cr.own {
		least = min(least, float64(l.Limit)/l.Period.Seconds())
	}
	return least
}

// CheckHandler answers POST /v1/check for gateways that ask over HTTP
// (nginx auth_request, Traefik forwardAuth, Kong): it decides the body's
// queries through CheckKeys and answers as the middleware would, 200, 429
// or 503 with the rate-limit headers, Retry-After on a refusal and
// HeaderDecision, and a CheckAnswer body. Bad input gets 400
// {"error","field"} and spends nothing. Every check is counted once in
// requests (nil: not counted), with the status answered and its
// AnswerReason, or instrument.ReasonInvalid for bad input.
func (e *Enforcer) CheckHandler(requests RequestCounter) http.Handler {
	count := func(tier string, code int, reason string) {
		if requests != nil {
			requests.Count(tier, code, reason)
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			writeCheckError(w, http.StatusMethodNotAllowed, "", "method not allowed: POST a check")
			count("", http.StatusMethodNotAllowed, instrument.ReasonInvalid)
			return
		}
		qs, field, err := readChecks(w, r)
		if err != nil {
			writeCheckError(w, http.StatusBadRequest, field, err.Error())
			count("", http.StatusBadRequest, instrument.ReasonInvalid)
			return
		}
		out := make([]Outcome, len(qs))
		res, err := e.CheckKeys(r.Context(), qs, out)
		if qe := (*QueryError)(nil); errors.As(err, &qe) {
			field := qe.Field
			if len(qs) > 1 || qe.Field == "queries" {
				field = fmt.Sprintf("checks[%d].%s", qe.Index, qe.Field)
			}
			writeCheckError(w, http.StatusBadRequest, field, qe.Msg)
			count("", http.StatusBadRequest, instrument.ReasonInvalid)
			return
		}
		res.WriteHeaders(w.Header())
		status := http.StatusOK
		if !res.Allowed {
			status = res.Status
			w.Header().Set(HeaderDecision, res.Reason().String())
		}
		body, _ := json.Marshal(answerOf(&res, qs, out))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(append(body, '\n'))
		count(res.Tier, status, res.AnswerReason())
	})
}

// readChecks reads a CheckRequest and returns its queries, or an error
// and the field it concerns.
func readChecks(w http.ResponseWriter, r *http.Request) ([]Query, string, error) {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxCheckBody))
	dec.DisallowUnknownFields()
	var req CheckRequest
	if err := dec.Decode(&req); err != nil {
		return nil, "body", fmt.Errorf("want a JSON check: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, "body", errors.New("want one JSON check, not more")
	}
	if len(req.Checks) == 0 {
		if req.Rule == "" {
			return nil, "rule", errors.New("required")
		}
		return []Query{req.Query}, "", nil
	}
	if req.Rule != "" || req.Key != "" || req.Tier != "" || req.Cost != 0 || len(req.Parts) > 0 {
		return nil, "checks", errors.New("give one check or checks, not both")
	}
	for i := range req.Checks {
		if req.Checks[i].Rule == "" {
			return nil, "checks[" + strconv.Itoa(i) + "].rule", errors.New("required")
		}
	}
	return req.Checks, "", nil
}

func answerOf(res *Result, qs []Query, out []Outcome) CheckAnswer {
	a := CheckAnswer{Allowed: res.Allowed, Status: http.StatusOK, Reason: res.Reason().String(),
		Fallback: res.Decision.Fallback, Tier: res.Tier, Rule: res.Rule, Limit: res.Decision.Limit,
		Remaining: res.Decision.Remaining, ResetAfterSeconds: ceilSeconds(res.Decision.ResetAfter),
		Shadowed: res.Shadowed, DryRun: res.DryRun, Checks: make([]CheckOutcome, len(qs))}
	if !res.Allowed {
		a.Status, a.RetryAfterSeconds = res.Status, res.RetryAfter
		a.Error = refusalMessage(res.Status)
	}
	if res.Err != nil {
		a.StoreError = res.Err.Error()
	}
	for i := range qs {
		o := &out[i]
		c := CheckOutcome{Rule: qs[i].Rule, Tier: o.Tier, Asked: o.Asked}
		switch {
		case o.Err != nil:
			c.StoreError = o.Err.Error()
		case o.Asked:
			d := &o.Decision
			c.Reason, c.Fallback, c.Limit, c.Remaining = d.Reason.String(), d.Fallback, d.Limit, d.Remaining
			c.ResetAfterSeconds = ceilSeconds(d.ResetAfter)
		}
		a.Checks[i] = c
	}
	return a
}

func writeCheckError(w http.ResponseWriter, status int, field, msg string) {
	body, _ := json.Marshal(struct {
		Error string `json:"error"`
		Field string `json:"field,omitempty"`
	}{msg, field})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// planned is a query resolved against the policy.
type planned struct {
	cr   *compiledRule
	tier *Tier
	cost int64
	peek bool
}

// plan resolves each query into pl and returns the most important of
// their tiers (nil without queries).
func (c *compiled) plan(qs []Query, lookup TierLookup, u UnassignedKeys, pl []planned) (*Tier, error) {
	var best *Tier
	for i := range qs {
		q := &qs[i]
		bad := func(field, format string, a ...any) error {
			return &QueryError{Index: i, Field: field, Msg: fmt.Sprintf(format, a...)}
		}
		cr := c.ruleNamed(q.Rule)
		if cr == nil {
			return nil, bad("rule", "no such rule %q", q.Rule)
		}
		t := c.tiers[q.Tier]
		switch {
		case q.Tier == "":
			t = c.tier(&identity.Client{APIKey: q.Key}, lookup, u)
		case t == nil:
			return nil, bad("tier", "no such tier %q", q.Tier)
		}
		cost := q.Cost
		if cost == 0 {
			cost = cr.Cost
		}
		if capacity := cr.capacity(t); !q.Peek && (cost < 0 || max(cost, 1) > capacity) {
			return nil, bad("cost", "%d: want 1..%d (the capacity of rule %s for tier %s)", cost, capacity, cr.Name, t.Name)
		}
		pl[i] = planned{cr: cr, tier: t, cost: cost, peek: q.Peek}
		if best == nil || t.Priority < best.Priority {
			best = t
		}
	}
	return best, nil
}

// ruleNamed is the rule of that name, or nil.
func (c *compiled) ruleNamed(name string) *compiledRule {
	for i := range c.rules {
		if c.rules[i].Name == name {
			return &c.rules[i]
		}
	}
	return nil
}
