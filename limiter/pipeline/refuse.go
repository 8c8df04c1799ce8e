package pipeline

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/throttledhq/throttled/bulkhead"
	"github.com/throttledhq/throttled/internal/wait"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/enforce"
	"github.com/throttledhq/throttled/limiter/instrument"
)

// GateRule names the inner loop's gate in refusals and metrics.
const GateRule = "concurrency"

// StatusClientGone is the status of a request whose client went away while
// it waited for a bulkhead or the gate (nginx's 499).
const StatusClientGone = 499

// refuseGate answers 503 with reason shed when the inner loop's limit
// refused the request (the lowest priority first).
func (p *Pipeline) refuseGate(w http.ResponseWriter, tier string, err error) {
	if !errors.Is(err, bulkhead.ErrShed) {
		w.WriteHeader(StatusClientGone)
		p.count(tier, StatusClientGone, instrument.ReasonClientGone)
		return
	}
	p.count(tier, http.StatusServiceUnavailable, instrument.ReasonConcurrency)
	p.refuse503(w, "service overloaded, retry later", limiter.Shed.String(), tier, GateRule, time.Second)
}

// dryRunShed lets the gate's shed pass in a dry run of the load
// (enforce.DryRun.ObservesLoad): counted as dry_run_shed by rule
// concurrency, not logged as a refusal, and the call's would-be answer
// (Result.DryRun) unless the Enforcer's dry run gave it one. It reports
// whether the request goes on.
func (p *Pipeline) dryRunShed(c *call, err error) bool {
	if !errors.Is(err, bulkhead.ErrShed) || !p.s.Enforcer.DryRun().ObservesLoad() {
		return false
	}
	if p.s.Metrics != nil {
		p.s.Metrics.Count(c.res.Tier, GateRule, enforce.LabelDryRunShed)
	}
	if c.res.DryRun == "" {
		c.res.DryRun = limiter.Shed.String()
	}
	return true
}

// refuseBulkhead answers 503 with reason bulkhead when a bulkhead is full
// (or the wait for it ended); the rule is the bulkhead's name.
func (p *Pipeline) refuseBulkhead(w http.ResponseWriter, bh *bulkhead.Bulkhead, tier string, err error) {
	if !errors.Is(err, bulkhead.ErrFull) {
		w.WriteHeader(StatusClientGone)
		p.count(tier, StatusClientGone, instrument.ReasonClientGone)
		return
	}
	p.count(tier, http.StatusServiceUnavailable, instrument.ReasonBulkhead)
	p.refuse503(w, "service busy, retry later", instrument.DecisionBulkhead, tier, bh.Name(), bh.RetryAfter())
}

// refuseBreaker answers 503 with reason breaker_open when the route's
// breaker is open (the rule is the breaker's name), 499 when the client
// had gone before it.
func (p *Pipeline) refuseBreaker(w http.ResponseWriter, b *bulkhead.Breaker, tier string, err error) {
	if !errors.Is(err, bulkhead.ErrOpen) {
		w.WriteHeader(StatusClientGone)
		p.count(tier, StatusClientGone, instrument.ReasonClientGone)
		return
	}
	p.count(tier, http.StatusServiceUnavailable, instrument.ReasonBreakerOpen)
	p.refuse503(w, "upstream unavailable, retry later", instrument.DecisionBreakerOpen, tier, b.Name(), b.RetryAfter())
}

// refuse503 answers a 503 given after the rules admitted the request,
// counts it as reason for tier and rule, and tells the refusal log.
// Retry-After is after, jittered.
func (p *Pipeline) refuse503(w http.ResponseWriter, msg, reason, tier, rule string, after time.Duration) {
	secs := wait.Jittered(after, rand.Int64N)
	if p.s.Metrics != nil {
		p.s.Metrics.Count(tier, rule, reason)
	}
	if p.s.Refusals != nil {
		p.s.Refusals.Refused(tier, rule, reason, "")
	}
	w.Header().Set(enforce.HeaderRetryAfter, strconv.FormatInt(secs, 10))
	body, _ := json.Marshal(enforce.Refusal{Error: msg, Reason: reason, RetryAfterSeconds: secs, Tier: tier, Rule: rule})
	writeJSON(w, http.StatusServiceUnavailable, append(body, '\n'))
}

func writeJSON(w http.ResponseWriter, code int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(body)
}
