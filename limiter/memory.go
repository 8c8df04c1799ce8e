package limiter

import (
	"context"
	"hash/maphash"
	"math"
	"strings"
	"sync"
	"time"
)

// Memory is the in-memory store: the embedded default when no Redis is
// configured, with the same semantics as the Redis store for one instance.
//
// Keys are spread over shards, each with its own mutex. A key whose state
// is back to fresh (its TTL passed) is forgotten. At most MaxKeys keys are
// tracked; a new key beyond the cap is decided on its shard's overflow state
// for its rule name and algorithm, so a flood of unique keys is limited like
// one client per rule and never evicts a key that is tracked. Overflow
// states are kept per rule name, so rule names must come from configuration,
// not from requests.
type Memory struct {
	seed     maphash.Seed
	shards   []memShard
	perShard int
	now      func() time.Time // WithClock's clock; nil: the store's own
	// The store's own clock: the wall time at the start (µs) plus the time
	// elapsed since on Go's monotonic clock, so that a step of the wall
	// clock (NTP) neither freezes refills nor grants them; shards never let
	// it go back (steady).
	startUs float64
	start   time.Time            // its reading of Go's monotonic clock
	elapsed func() time.Duration // nil: time.Since(start), without an indirect call (tests step it)
}

type memShard struct {
	mu sync.Mutex // guards every field below
	// m holds the keys' states, a map per algorithm (a key's state under
	// each is its own), so that a lookup hashes and compares the key alone.
	m        [NumAlgorithms]map[string]*memEntry
	overflow map[overflowKey]*overflowEntry
	inserts  uint32
	last     float64  // µs: the latest time this shard decided at (own clock)
	shift    float64  // µs: the sum of the own clock's steps back
	_        [24]byte // keep shards on separate cache lines
}

// overflowKey names the state shared by the keys of one rule and algorithm
// beyond the cap.
type overflowKey struct {
	rule string
	alg  Algorithm
}

type overflowEntry struct {
	memEntry
	n uint64 // decisions made on it
}

type memEntry struct {
	st     state
	expire float64 // µs; the state is fresh again from then on
}

// NewMemory returns an in-memory store. Options: WithClock, WithMaxKeys,
// WithShards.
func NewMemory(opts ...Option) *Memory {
	o := newOptions(opts)
	n := 1
	for n < o.Shards && n < o.MaxKeys {
		n <<= 1
	}
	if n > o.MaxKeys {
		n >>= 1
	}
	if n < 1 {
		n = 1
	}
	m := &Memory{seed: maphash.MakeSeed(), shards: make([]memShard, n), now: o.Now}
	m.perShard = max(1, o.MaxKeys/n)
	if m.now == nil {
		start := time.Now()
		m.startUs, m.start = float64(start.UnixMicro()), start
	}
	for i := range m.shards {
		for a := range m.shards[i].m {
			m.shards[i].m[a] = make(map[string]*memEntry)
		}
		m.shards[i].overflow = make(map[overflowKey]*overflowEntry)
	}
	return m
}

// Decide makes one decision at the store's clock, read under the shard's
// lock so that decisions on one key see time in order (as the Redis scripts
// do with TIME).
func (m *Memory) Decide(_ context.Context, req Request) (Decision, error) {
	return m.decide(nil, &req)
}

// DecideRequest is Decide for a request given by pointer, which it
// normalizes in place (Request.Normalize, whose defaults a second call
// leaves as they are), for a caller on the hot path (limiter/enforce): it
// copies the request neither in nor out, and trusts req.Rule to be valid
// (Rule.Validate) as the caller's validated rules are; the request's own
// fields it checks as Decide does.
func (m *Memory) DecideRequest(_ context.Context, req *Request) (Decision, error) {
	if err := req.normalize(); err != nil {
		return Decision{}, err
	}
	if err := req.fits(); err != nil {
		return Decision{}, err
	}
	return m.decideValid(nil, req)
}

// DecideAt makes one decision at now. Callers that pass time themselves
// must pass it in order per key.
func (m *Memory) DecideAt(now time.Time, req Request) (Decision, error) {
	return m.decide(&now, &req)
}

// decide decides req, which it normalizes in place (the caller's copy).
func (m *Memory) decide(at *time.Time, req *Request) (Decision, error) {
	if err := req.Normalize(); err != nil {
		return Decision{}, err
	}
	return m.decideValid(at, req)
}

// decideValid decides req, normalized.
func (m *Memory) decideValid(at *time.Time, req *Request) (Decision, error) {
	sh := &m.shards[maphash.String(m.seed, req.Key)&uint64(len(m.shards)-1)]
	sh.mu.Lock()
	var us float64
	switch {
	case at != nil:
		us = float64(at.UnixMicro())
	case m.now != nil:
		us = float64(m.now().UnixMicro())
	default: // no time.Time made: a monotonic reading and a float add
		us = sh.steady(m.startUs + float64(m.since()/time.Microsecond))
	}
	e := sh.entry(req.Rule.Algorithm, req.Key, req.Rule.Name, us, m.perShard)
	if e.expire <= us { // an entry is of one algorithm: sh.m and overflow are by algorithm
		e.st.log.reset() // keep the logs' buffers
		e.st.alog.reset()
		e.st = state{log: e.st.log, alog: e.st.alog}
	}
	var v verdict
	if req.Rule.Algorithm == TokenBucket { // the default, called directly
		v = tokenBucket(&e.st, us, paramsOf(req))
	} else {
		v = algorithmFuncs[req.Rule.Algorithm](&e.st, us, paramsOf(req))
	}
	e.expire = us + (math.Ceil(min(v.ttl, maxMicros)/1000)+1000)*1000
	sh.mu.Unlock()
	return decisionOf(req, v), nil
}

// since is the time elapsed on the store's own clock.
func (m *Memory) since() time.Duration {
	if m.elapsed != nil {
		return m.elapsed()
	}
	return time.Since(m.start)
}

// steady keeps the shard's time from going back should the store's own
// clock step back: the step counts as no time passing, and time goes on
// from there. The caller holds sh.mu.
func (sh *memShard) steady(us float64) float64 {
	us += sh.shift
	if us < sh.last {
		sh.shift += sh.last - us
		us = sh.last
	}
	sh.last = us
	return us
}

// entry finds or makes the entry for k. The caller holds sh.mu.
func (sh *memShard) entry(alg Algorithm, key, rule string, now float64, limit int) *memEntry {
	if e, ok := sh.m[alg][key]; ok {
		return e
	}
	sh.inserts++
	if sh.inserts%256 == 0 || sh.keys() >= limit {
		sh.sweep(now, 128)
	}
	if sh.keys() >= limit {
		return sh.overflowEntry(overflowKey{rule, alg})
	}
	e := new(memEntry)
	sh.m[alg][strings.Clone(key)] = e
	return e
}

// keys is the number of keys in sh.m. The caller holds sh.mu.
func (sh *memShard) keys() int {
	n := 0
	for _, m := range sh.m {
		n += len(m)
	}
	return n
}

// overflowEntry finds or makes the overflow state for ok and counts the
// decision. The caller holds sh.mu.
func (sh *memShard) overflowEntry(ok overflowKey) *memEntry {
	o := sh.overflow[ok]
	if o == nil {
		o = new(overflowEntry)
		sh.overflow[overflowKey{strings.Clone(ok.rule), ok.alg}] = o
	}
	o.n++
	return &o.memEntry
}

// sweep forgets up to budget visited entries whose state is fresh again.
func (sh *memShard) sweep(now float64, budget int) {
	for _, m := range sh.m {
		for k, e := range m {
			if e.expire <= now {
				delete(m, k)
			}
			if budget--; budget == 0 {
				return
			}
		}
	}
}

// Len is the number of keys tracked now.
func (m *Memory) Len() int {
	n := 0
	for i := range m.shards {
		sh := &m.shards[i]
		sh.mu.Lock()
		n += sh.keys()
		sh.mu.Unlock()
	}
	return n
}

// Overflows counts, per rule name, the decisions made on overflow state
// because the cap was reached. Rules with none are absent.
func (m *Memory) Overflows() map[string]uint64 {
	n := make(map[string]uint64)
	for i := range m.shards {
		sh := &m.shards[i]
		sh.mu.Lock()
		for k, o := range sh.overflow {
			n[k.rule] += o.n
		}
		sh.mu.Unlock()
	}
	return n
}

// decisionOf turns a verdict in µs into a Decision.
func decisionOf(r *Request, v verdict) Decision {
	return DecisionOf(r, v.reason, v.remaining, v.reset, v.retry)
}

// DecisionOf turns a store's answer into a Decision: the reason, what the
// key may still spend, and the microseconds until its quota is whole again
// (reset) and until this request would pass (retry), each at most MaxWait. Stores other than
// Memory (the Redis store) build their decisions with it.
func DecisionOf(r *Request, reason Reason, remaining, resetUs, retryUs float64) Decision {
	return Decision{
		Allowed:    reason == Allowed,
		Reason:     reason,
		Limit:      r.Rule.Limit,
		Remaining:  int64(remaining),
		ResetAfter: micros(resetUs),
		RetryAfter: micros(retryUs),
	}
}

// micros is us rounded up, within [0, MaxWait].
func micros(us float64) time.Duration {
	if !(us > 0) { // NaN too
		return 0
	}
	return time.Duration(math.Ceil(min(us, maxMicros))) * time.Microsecond
}

// CopiesKeys reports true: Memory keeps its own copy of every key it
// tracks (limiter.KeyCopier).
func (m *Memory) CopiesKeys() bool { return true }

// Ready reports that the in-memory store can decide: always nil.
func (m *Memory) Ready(context.Context) error { return nil }
