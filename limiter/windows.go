package limiter

import "math"

func slidingCounter(s *state, now float64, p params) verdict {
	ws := math.Floor(now/p.period) * p.period
	switch {
	case !s.init:
		s.init, s.q, s.a, s.ts = true, 0, 0, ws
	case s.ts == ws:
	case s.ts+p.period == ws:
		s.q, s.a, s.ts = 0, s.q, ws
	default:
		s.q, s.a, s.ts = 0, 0, ws
	}
	w := (p.period - (now - ws)) / p.period
	est := s.a*w + s.q
	al := admissionLimit(p)
	var v verdict
	switch {
	case p.refund:
		s.q = math.Max(0, s.q-p.cost)
		est = s.a*w + s.q
	case est+p.cost > p.limit:
		v.reason, v.retry = OverQuota, counterRetry(s, now, p, p.limit)
	case est+p.cost > al:
		v.reason, v.retry = Shed, counterRetry(s, now, p, al)
	default:
		s.q += p.cost
		est += p.cost
	}
	v.remaining = math.Max(0, math.Floor(math.Min(p.limit, al)-est+eps))
	v.ttl = ws + 2*p.period - now
	switch {
	case s.q > 0:
		v.reset = v.ttl
	case s.a > 0:
		v.reset = ws + p.period - now
	}
	return v
}

// counterRetry is the time until prev×w + cur + cost ≤ lim.
func counterRetry(s *state, now float64, p params, lim float64) float64 {
	need := lim - s.q - p.cost
	var t float64
	if need >= 0 {
		// Within this window, as the previous window's weight falls.
		t = s.ts + p.period - need/s.a*p.period
	} else {
		// In the next window, where this window's count is the previous.
		t = s.ts + 2*p.period - (lim-p.cost)/s.q*p.period
	}
	return math.Max(0, t-now)
}

func slidingLog(s *state, now float64, p params) verdict {
	s.init = true
	cut := 0
	for cut < len(s.log) && s.log[cut] <= now-p.period {
		cut++
	}
	if cut > 0 {
		s.log = append(s.log[:0], s.log[cut:]...)
	}
	n := float64(len(s.log))
	al := admissionLimit(p)
	var v verdict
	switch {
	case p.refund:
		s.log = s.log[:max(0, len(s.log)-int(p.cost))]
		n = float64(len(s.log))
	case n+p.cost > p.limit:
		v.reason, v.retry = OverQuota, s.log[int(n+p.cost-p.limit)-1]+p.period-now
	case n+p.cost > al:
		v.reason, v.retry = Shed, s.log[int(n+p.cost-al)-1]+p.period-now
	default:
		for i := 0; i < int(p.cost); i++ {
			s.log = append(s.log, now)
		}
		n += p.cost
	}
	v.remaining = math.Max(0, math.Min(p.limit, al)-n)
	if len(s.log) > 0 {
		v.reset = s.log[len(s.log)-1] + p.period - now
	}
	v.ttl = p.period
	return v
}
