package signals

import (
	"errors"
	"fmt"
	"math"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
)

// tierLabel is the label that names a tier, in PromQL answers and in-process
// series alike.
const tierLabel = "tier"

// decisionLabel, allowed and delayed select the admitted series (see
// IsAdmitted) of an in-process
// counter; a series without decisionLabel counts whole.
const (
	decisionLabel = "decision"
	allowed       = "allowed"
	delayed       = "delayed" // a delay rule held the request, then admitted it
)

// IsAdmitted reports whether a decision label of the admitted counter
// (DefaultAdmittedCounter's "decision") is a request the rule let through:
// allowed, or delayed (held by a delay rule, then admitted). Every reader
// of admitted requests uses it, so that they agree on what counts.
func IsAdmitted(decision string) bool { return decision == allowed || decision == delayed }

// errNoTier explains an Unsupported Rates: samples came, none named a tier.
var errNoTier = errors.New(`no sample has a "tier" label`)

// Rates is one reading of a rate per tier, in requests per second.
type Rates struct {
	// ByTier maps a tier to its rate, finite and not negative. Samples of
	// one tier are summed; a tier without a usable sample is absent.
	ByTier map[string]float64
	At     time.Time // when the reading holds
	Valid  bool      // ByTier holds at least one tier
	Reason Reason    // OK when Valid, else why not
	Err    error     // detail for QueryError and Unsupported, else nil
}

// invalidRates returns an invalid reading.
func invalidRates(r Reason, at time.Time, err error) Rates {
	return Rates{At: at, Reason: r, Err: err}
}

// rateSum sums samples into Rates, keeping the reason of the first unusable
// one for when none is usable.
type rateSum struct {
	by       map[string]float64
	at       time.Time
	bad      Reason
	untagged bool
}

// add takes one sample of tier; reason is OK unless the sample is unusable.
func (s *rateSum) add(tier string, v float64, at time.Time, reason Reason) {
	switch {
	case tier == "":
		s.untagged = true
	case reason == OK && math.IsNaN(v):
		reason = NaN
	case reason == OK && (math.IsInf(v, 0) || v < 0):
		reason = Inf // a negative rate is as meaningless as an infinite one
	}
	if tier == "" || reason != OK {
		if s.bad == OK {
			s.bad = reason
		}
		return
	}
	if s.by == nil {
		s.by = make(map[string]float64)
	}
	s.by[tier] += v
	if at.After(s.at) {
		s.at = at
	}
}

// rates is the reading: valid with at least one tier, else invalid with the
// first reason met (NoData when there was no sample at all).
func (s *rateSum) rates(now time.Time) Rates {
	for tier, v := range s.by {
		if math.IsInf(v, 0) { // a sum of finite rates can overflow
			delete(s.by, tier)
		}
	}
	switch {
	case len(s.by) > 0:
		return Rates{ByTier: s.by, At: s.at, Valid: true}
	case s.untagged && s.bad == OK:
		return invalidRates(Unsupported, now, errNoTier)
	case s.bad != OK:
		return invalidRates(s.bad, now, nil)
	}
	return invalidRates(NoData, now, nil)
}

// reduceRates turns the answer of a per-tier query into Rates: each sample
// of an instant vector by its "tier" label, a sample more than maxAge from
// now being Stale.
func reduceRates(res model.Value, now time.Time, maxAge time.Duration) Rates {
	vec, ok := res.(model.Vector)
	if !ok {
		err := errors.New("no result")
		if res != nil {
			err = fmt.Errorf("result is a %s, want an instant vector by tier", res.Type())
		}
		return invalidRates(Unsupported, now, err)
	}
	var sum rateSum
	for _, smp := range vec {
		at, reason := smp.Timestamp.Time(), OK
		if now.Sub(at) > maxAge || at.Sub(now) > maxAge {
			reason = Stale
		}
		sum.add(string(smp.Metric[tierLabel]), float64(smp.Value), at, reason)
	}
	r := sum.rates(now)
	if r.Reason == Unsupported {
		r.Err = fmt.Errorf("result: %w", r.Err)
	}
	return r
}

// admittedSeries is one series of the admitted counter.
type admittedSeries struct {
	v    float64
	tier string
}

// admitted is the rate of the admitted counter by tier since the last read.
func (ip *InProcess) admitted(mf *dto.MetricFamily, now time.Time) Rates {
	if mf == nil {
		ip.prevAdm, ip.prevAdmAt = nil, now // a counter appearing later counts whole from here
		return invalidRates(NoData, now, nil)
	}
	if mf.GetType() != dto.MetricType_COUNTER {
		return invalidRates(Unsupported, now, fmt.Errorf("signals: admitted: metric %q is a %s, want a counter",
			mf.GetName(), mf.GetType()))
	}
	cur := make(map[string]admittedSeries, len(mf.GetMetric()))
	for _, m := range mf.GetMetric() {
		if d := labelValue(m, decisionLabel); d == "" || IsAdmitted(d) {
			cur[seriesKey(m)] = admittedSeries{v: m.GetCounter().GetValue(), tier: labelValue(m, tierLabel)}
		}
	}
	prev, since := ip.prevAdm, ip.prevAdmAt
	ip.prevAdm, ip.prevAdmAt = cur, now
	window := now.Sub(since).Seconds()
	if since.IsZero() || !(window > 0) {
		return invalidRates(NoBaseline, now, nil)
	}
	var sum rateSum
	for k, c := range cur {
		p, seen := prev[k]
		sum.add(c.tier, counterDelta(p.v, c.v, seen)/window, now, OK)
	}
	r := sum.rates(now)
	if r.Reason == Unsupported {
		r.Err = fmt.Errorf("signals: admitted: metric %q: %w", mf.GetName(), r.Err)
	}
	return r
}
