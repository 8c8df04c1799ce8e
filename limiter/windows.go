package limiter

import "math"

func slidingCounter(s *state, now float64, p params) verdict {
	ws := math.Floor(now/p.period) * p.period
	switch {
	case !s.init:
		s.init, s.q, s.a, s.c, s.d, s.ts = true, 0, 0, 0, 0, ws
	case s.ts == ws:
	case s.ts+p.period == ws:
		s.q, s.a, s.c, s.d, s.ts = 0, s.q, 0, s.c, ws
	default:
		s.q, s.a, s.c, s.d, s.ts = 0, 0, 0, 0, ws
	}
	w := (p.period - (now - ws)) / p.period
	est := s.a*w + s.q
	adm := s.d*w + s.c
	al := admissionLimit(p)
	var v verdict
	switch {
	case p.refund:
		s.q, s.c = max(0, s.q-p.cost), max(0, s.c-p.cost)
		est, adm = s.a*w+s.q, s.d*w+s.c
	case est+p.cost > p.limit:
		v.reason, v.retry = OverQuota, counterRetry(s.q, s.a, s.ts, now, p, p.limit)
	case adm+p.cost > al:
		s.q += p.cost // a shed request spends quota, not admission
		est += p.cost
		v.reason, v.retry = Shed, counterRetry(s.c, s.d, s.ts, now, p, al)
		if est+p.cost > p.limit {
			v.retry = max(v.retry, counterRetry(s.q, s.a, s.ts, now, p, p.limit))
		}
	default:
		s.q, s.c = s.q+p.cost, s.c+p.cost
		est, adm = est+p.cost, adm+p.cost
	}
	v.remaining = max(0, math.Floor(min(p.limit-est, al-adm)+eps))
	v.ttl = ws + 2*p.period - now
	switch {
	case s.q > 0:
		v.reset = v.ttl
	case s.a > 0:
		v.reset = ws + p.period - now
	}
	return v
}

// counterRetry is the time until prev×w + cur + cost ≤ lim, for a window
// that started at ts.
func counterRetry(cur, prev, ts, now float64, p params, lim float64) float64 {
	need := lim - cur - p.cost
	var t float64
	if need >= 0 {
		// Within this window, as the previous window's weight falls.
		t = ts + p.period - need/prev*p.period
	} else {
		// In the next window, where this window's count is the previous.
		t = ts + 2*p.period - (lim-p.cost)/cur*p.period
	}
	return max(0, t-now)
}

func slidingLog(s *state, now float64, p params) verdict {
	s.init = true
	s.log.trim(now - p.period)
	s.alog.trim(now - p.period)
	n, na := float64(s.log.len()), float64(s.alog.len())
	al := admissionLimit(p)
	var v verdict
	switch {
	case p.refund:
		s.log.pop(int(p.cost))
		s.alog.pop(int(p.cost))
		n, na = float64(s.log.len()), float64(s.alog.len())
	case n+p.cost > p.limit:
		v.reason, v.retry = OverQuota, s.log.at(int(n+p.cost-p.limit)-1)+p.period-now
	case na+p.cost > al:
		s.log.push(now, int(p.cost)) // a shed request spends quota, not admission
		n += p.cost
		v.reason, v.retry = Shed, s.alog.at(int(na+p.cost-al)-1)+p.period-now
		if n+p.cost > p.limit {
			v.retry = max(v.retry, s.log.at(int(n+p.cost-p.limit)-1)+p.period-now)
		}
	default:
		s.log.push(now, int(p.cost))
		s.alog.push(now, int(p.cost))
		n, na = n+p.cost, na+p.cost
	}
	v.remaining = max(0, min(p.limit-n, al-na))
	if s.log.len() > 0 {
		v.reset = s.log.at(s.log.len()-1) + p.period - now
	}
	v.ttl = p.period
	return v
}

// timeLog is a sliding log: buf[head:] are the timestamps, oldest first.
// Trimming moves head; entries are moved to the front only when a push
// finds buf full, so each entry is copied O(1) times on average.
type timeLog struct {
	buf  []float64
	head int
}

func (l *timeLog) len() int         { return len(l.buf) - l.head }
func (l *timeLog) at(i int) float64 { return l.buf[l.head+i] }
func (l *timeLog) reset()           { l.buf, l.head = l.buf[:0], 0 }
func (l *timeLog) pop(n int)        { l.buf = l.buf[:max(l.head, len(l.buf)-n)] }

// trim drops the entries at or before cut.
func (l *timeLog) trim(cut float64) {
	for l.head < len(l.buf) && l.buf[l.head] <= cut {
		l.head++
	}
	if l.head == len(l.buf) {
		l.reset()
	}
}

// push appends n copies of x.
func (l *timeLog) push(x float64, n int) {
	if len(l.buf)+n > cap(l.buf) && l.head > 0 {
		l.buf = l.buf[:copy(l.buf, l.buf[l.head:])]
		l.head = 0
	}
	for i := 0; i < n; i++ {
		l.buf = append(l.buf, x)
	}
}
