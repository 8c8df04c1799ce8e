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
func admissionCap(p params) float64 { return math.Max(p.burst*p.m, p.cost) }

// admissionLimit is the window limit under load.
func admissionLimit(p params) float64 { return math.Max(math.Floor(p.limit*p.m+eps), p.cost) }

func tokenBucket(s *state, now float64, p params) verdict {
	rate := p.limit / p.period
	arate := rate * p.m
	capa := admissionCap(p)
	if !s.init {
		s.init, s.q, s.a, s.ts = true, p.burst, capa, now
	}
	el := math.Max(0, now-s.ts)
	q := math.Min(p.burst, s.q+el*rate)
	a := math.Min(capa, s.a+el*arate)
	if p.m >= 1 {
		a = q // unloaded: only the quota counts, whatever came before
	}
	var v verdict
	switch {
	case p.refund:
		q, a = math.Min(p.burst, q+p.cost), math.Min(capa, a+p.cost)
	case q < p.cost:
		v.reason, v.retry = OverQuota, (p.cost-q)/rate
	case a < p.cost:
		q -= p.cost // a shed request spends quota, not admission
		v.reason, v.retry = Shed, math.Max((p.cost-a)/arate, (p.cost-q)/rate)
	default:
		q, a = q-p.cost, a-p.cost
	}
	v.remaining = math.Floor(math.Min(q, a) + eps)
	v.reset = (p.burst - q) / rate
	v.ttl = math.Max(v.reset, (capa-a)/arate)
	s.q, s.a, s.ts = q, a, math.Max(s.ts, now)
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
	el := math.Max(0, now-s.ts)
	bq := math.Max(0, s.q-el) // TAT − now
	ba := math.Max(0, s.a-el)
	if p.m >= 1 {
		ba = bq
	}
	nq := bq + t*p.cost
	na := ba + ta*p.cost
	var v verdict
	switch {
	case p.refund:
		bq, ba = math.Max(0, bq-t*p.cost), math.Max(0, ba-ta*p.cost)
	case nq-tol > eps*t: // eps: the backlog sums t, tol multiplies it
		v.reason, v.retry = OverQuota, nq-tol
	case na-tola > eps*ta:
		bq = nq // a shed request spends quota, not admission
		v.reason, v.retry = Shed, math.Max(na-tola, nq+t*p.cost-tol)
	default:
		bq, ba = nq, na
	}
	v.remaining = math.Max(0, math.Floor(math.Min((tol-bq)/t, (tola-ba)/ta)+eps))
	v.reset = bq
	v.ttl = math.Max(bq, ba)
	s.q, s.a, s.ts = bq, ba, math.Max(s.ts, now)
	return v
}

func leakyBucket(s *state, now float64, p params) verdict {
	rate := p.limit / p.period
	arate := rate * p.m
	capa := admissionCap(p)
	if !s.init {
		s.init, s.q, s.a, s.ts = true, 0, 0, now
	}
	el := math.Max(0, now-s.ts)
	lq := math.Max(0, s.q-el*rate)
	la := math.Max(0, s.a-el*arate)
	if p.m >= 1 {
		la = lq
	}
	var v verdict
	switch {
	case p.refund:
		lq, la = math.Max(0, lq-p.cost), math.Max(0, la-p.cost)
	case lq+p.cost > p.burst:
		v.reason, v.retry = OverQuota, (lq+p.cost-p.burst)/rate
	case la+p.cost > capa:
		lq += p.cost // a shed request spends quota, not admission
		v.reason, v.retry = Shed, math.Max((la+p.cost-capa)/arate, (lq+p.cost-p.burst)/rate)
	default:
		lq, la = lq+p.cost, la+p.cost
	}
	v.remaining = math.Max(0, math.Floor(math.Min(p.burst-lq, capa-la)+eps))
	v.reset = lq / rate
	v.ttl = math.Max(v.reset, la/arate)
	s.q, s.a, s.ts = lq, la, math.Max(s.ts, now)
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
		s.q, s.c = math.Max(0, s.q-p.cost), math.Max(0, s.c-p.cost)
	case s.q+p.cost > p.limit:
		v.reason, v.retry = OverQuota, end
	case s.c+p.cost > al:
		s.q += p.cost // a shed request spends quota, not admission
		v.reason, v.retry = Shed, end
	default:
		s.q, s.c = s.q+p.cost, s.c+p.cost
	}
	v.remaining = math.Max(0, math.Min(p.limit-s.q, al-s.c))
	v.reset, v.ttl = end, end
	return v
}
