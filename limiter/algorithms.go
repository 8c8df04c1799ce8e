package limiter

import (
	"math"
	"time"
)

// The algorithms below are the reference semantics. The Lua scripts in
// scripts.go perform the same floating-point operations in the same order, so
// the in-memory and Redis stores agree to the microsecond; the conformance
// suite holds them to it. Time is in microseconds, as float64 (exact up to
// 2^53 µs, well past the year 2200, for whole µs). Fractions of a µs are
// not: near today's 1.7e15 µs the step is 0.25 µs, so state that sums small
// intervals (GCRA) is kept relative to its last update, never absolute.

// min and max are Go's builtins, which give math.Min's and math.Max's
// values (NaN, ±0 alike) and are inlined: math's are calls on amd64.

// eps absorbs float error before flooring counts (e.g. 0.29×100).
const eps = 1e-9

// params is a request reduced to numbers.
type params struct {
	limit, period, burst, cost, m float64 // period in µs
	refund                        bool    // give cost back instead of spending it
	month                         bool    // FixedWindow: calendar months, not period
}

func paramsOf(r *Request) params {
	return params{
		limit:  float64(r.Rule.Limit),
		period: float64(r.Rule.Period / time.Microsecond),
		burst:  float64(r.Rule.Capacity()),
		cost:   float64(r.Cost),
		m:      r.Multiplier,
		refund: r.Refund,
		month:  r.Rule.CalendarMonth(),
	}
}

// state is one key's state. Which fields mean what depends on the algorithm:
//
//	TokenBucket:          q, a = tokens in the quota / admission bucket; ts = last update
//	GCRA:                 q, a = theoretical arrival times − ts (backlogs); ts = last update
//	LeakyBucket:          q, a = water levels; ts = last update
//	FixedWindow:          q = units sent, c = units admitted; ts = window start
//	SlidingWindowCounter: q, a = units sent in the current / previous window,
//	                      c, d = units admitted in them; ts = window start
//	SlidingWindowLog:     log = one timestamp per unit sent, alog = per unit
//	                      admitted, oldest first
//
// The quota side counts every unit sent that was not over quota (admitted or
// shed); the admission side counts only admitted units.
type state struct {
	init           bool
	q, a, c, d, ts float64
	log, alog      timeLog
}

// verdict is an algorithm's answer, in µs.
type verdict struct {
	reason                  Reason
	remaining, reset, retry float64
	ttl                     float64 // until the state is back to fresh
}

type algorithmFunc func(s *state, now float64, p params) verdict

var algorithmFuncs = [NumAlgorithms]algorithmFunc{
	TokenBucket:          tokenBucket,
	GCRA:                 gcra,
	FixedWindow:          fixedWindow,
	SlidingWindowLog:     slidingLog,
	SlidingWindowCounter: slidingCounter,
	LeakyBucket:          leakyBucket,
}

// With m ≥ 1 the meters (token bucket, GCRA, leaky bucket) set the
// admission state equal to the quota state, so that after a period under load
// a multiplier back at 1 behaves exactly like the plain algorithm instead of
// shedding until the admission state has caught up.

// admissionCap is the capacity of the admission bucket / meter.
func admissionCap(p params) float64 { return max(p.burst*p.m, p.cost) }

// admissionLimit is the window limit under load.
func admissionLimit(p params) float64 { return max(math.Floor(p.limit*p.m+eps), p.cost) }

func tokenBucket(s *state, now float64, p params) verdict {
	rate := p.limit / p.period
	arate := rate * p.m
	capa := admissionCap(p)
	if !s.init {
		s.init, s.q, s.a, s.ts = true, p.burst, capa, now
	}
	el := max(0, now-s.ts)
	q := min(p.burst, s.q+el*rate)
	a := min(capa, s.a+el*arate)
	if p.m >= 1 {
		a = q // unloaded: only the quota counts, whatever came before
	}
	var v verdict
	switch {
	case p.refund:
		q, a = min(p.burst, q+p.cost), min(capa, a+p.cost)
	case q < p.cost:
		v.reason, v.retry = OverQuota, (p.cost-q)/rate
	case a < p.cost:
		q -= p.cost // a shed request spends quota, not admission
		v.reason, v.retry = Shed, max((p.cost-a)/arate, (p.cost-q)/rate)
	default:
		q, a = q-p.cost, a-p.cost
	}
	v.remaining = math.Floor(min(q, a) + eps)
	v.reset = (p.burst - q) / rate
	v.ttl = max(v.reset, (capa-a)/arate)
	s.q, s.a, s.ts = q, a, max(s.ts, now)
	return v
}

// gcra keeps each theoretical arrival time as a backlog relative to ts,
// the last update, rather than as an absolute time: absolute µs in float64
// have a step of 0.25 µs today, coarser than the emission interval at
// rates above a few million per second. now − ts is exact (whole µs).
func gcra(s *state, now float64, p params) verdict {
	t := p.period / p.limit
	ta := t / p.m
	tol := t * p.burst
	tola := ta * admissionCap(p)
	if !s.init {
		s.init, s.q, s.a, s.ts = true, 0, 0, now
	}
	el := max(0, now-s.ts)
	bq := max(0, s.q-el) // TAT − now
	ba := max(0, s.a-el)
	if p.m >= 1 {
		ba = bq
	}
	nq := bq + t*p.cost
	na := ba + ta*p.cost
	var v verdict
	switch {
	case p.refund:
		bq, ba = max(0, bq-t*p.cost), max(0, ba-ta*p.cost)
	case nq-tol > eps*t: // eps: the backlog sums t, tol multiplies it
		v.reason, v.retry = OverQuota, nq-tol
	case na-tola > eps*ta:
		bq = nq // a shed request spends quota, not admission
		v.reason, v.retry = Shed, max(na-tola, nq+t*p.cost-tol)
	default:
		bq, ba = nq, na
	}
	v.remaining = max(0, math.Floor(min((tol-bq)/t, (tola-ba)/ta)+eps))
	v.reset = bq
	v.ttl = max(bq, ba)
	s.q, s.a, s.ts = bq, ba, max(s.ts, now)
	return v
}

func leakyBucket(s *state, now float64, p params) verdict {
	rate := p.limit / p.period
	arate := rate * p.m
	capa := admissionCap(p)
	if !s.init {
		s.init, s.q, s.a, s.ts = true, 0, 0, now
	}
	el := max(0, now-s.ts)
	lq := max(0, s.q-el*rate)
	la := max(0, s.a-el*arate)
	if p.m >= 1 {
		la = lq
	}
	var v verdict
	switch {
	case p.refund:
		lq, la = max(0, lq-p.cost), max(0, la-p.cost)
	case lq+p.cost > p.burst:
		v.reason, v.retry = OverQuota, (lq+p.cost-p.burst)/rate
	case la+p.cost > capa:
		lq += p.cost // a shed request spends quota, not admission
		v.reason, v.retry = Shed, max((la+p.cost-capa)/arate, (lq+p.cost-p.burst)/rate)
	default:
		lq, la = lq+p.cost, la+p.cost
	}
	v.remaining = max(0, math.Floor(min(p.burst-lq, capa-la)+eps))
	v.reset = lq / rate
	v.ttl = max(v.reset, la/arate)
	s.q, s.a, s.ts = lq, la, max(s.ts, now)
	return v
}

func fixedWindow(s *state, now float64, p params) verdict {
	ws, we := window(now, p)
	if !s.init || s.ts != ws {
		s.init, s.q, s.c, s.ts = true, 0, 0, ws
	}
	al := admissionLimit(p)
	end := we - now
	var v verdict
	switch {
	case p.refund:
		s.q, s.c = max(0, s.q-p.cost), max(0, s.c-p.cost)
	case s.q+p.cost > p.limit:
		v.reason, v.retry = OverQuota, end
	case s.c+p.cost > al:
		s.q += p.cost // a shed request spends quota, not admission
		v.reason, v.retry = Shed, end
	default:
		s.q, s.c = s.q+p.cost, s.c+p.cost
	}
	v.remaining = max(0, min(p.limit-s.q, al-s.c))
	v.reset, v.ttl = end, end
	return v
}
