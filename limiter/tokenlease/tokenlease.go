package tokenlease

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/throttledhq/throttled/limiter"
)

// ErrBadSettings reports Settings out of range.
var ErrBadSettings = errors.New("tokenlease: bad settings")

// Settings of a leasing store. Zero values mean the defaults, applied in
// one place (withDefaults).
type Settings struct {
	// Size is the most tokens leased at once beyond the request's own
	// cost, capped by the rule's capacity. 0 means 16.
	Size int64
	// TTL is how long a key's unspent leased tokens live after its last
	// decision (while it is used, they do not lapse), and how long it
	// stays hot after that. 0 means 1 s.
	TTL time.Duration
	// MaxKeys bounds the keys the store keeps leases for (each shard keeps
	// its share, so at most MaxKeys rounded down to a multiple of 64, and
	// 64 at least). A new key beyond it evicts the lease of the key idle
	// longest: the tokens it held were spent in the shared store and are
	// lost (the key under-admits by at most Size, as one gone quiet does).
	// 0 means DefaultMaxKeys.
	MaxKeys int
	// Metrics, if set, counts the store's keys and evictions.
	Metrics *Metrics
	// Now is the clock; nil means time.Now. Tests inject a fake one.
	Now func() time.Time
}

func (s Settings) withDefaults() (Settings, error) {
	if s.Size < 0 || s.TTL < 0 || s.MaxKeys < 0 {
		return s, fmt.Errorf("%w: want Size, TTL and MaxKeys ≥ 0, got %d, %v and %d", ErrBadSettings, s.Size, s.TTL, s.MaxKeys)
	}
	if s.MaxKeys == 0 {
		s.MaxKeys = DefaultMaxKeys
	}
	if s.Size == 0 {
		s.Size = 16
	}
	if s.TTL == 0 {
		s.TTL = time.Second
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	return s, nil
}

// Store decides from leases where it can and asks shared otherwise. Its
// leases are spread over shards by key, so that callers deciding for
// different keys rarely wait for one another.
type Store struct {
	shared limiter.Store
	set    Settings
	seed   maphash.Seed
	base   time.Time // instants count from here
	// outage: the shared store's last answer came from its fallback (the
	// answer's Fallback flag). A fallback's local share is raised to a
	// request's cost, so a lease would raise it to cost + Size: while it
	// is set, no key leases, and each request is decided with its own cost.
	outage atomic.Bool
	shards [numShards]shard
}

// numShards: a power of two, well above the cores that decide at once.
const numShards = 64

// shard holds the leases of some keys. Lock rule: mu guards leases, head,
// tail and every *lease in leases; it is never held across a call to
// shared.
type shard struct {
	mu         sync.Mutex
	leases     map[leaseKey]*lease
	head, tail *lease   // the leases by when they were seen (table.go)
	max        int      // the most leases kept
	_          [64]byte // keeps neighbouring shards' locks off one cache line
}

// shard is the shard of key.
func (s *Store) shard(key string) *shard {
	return &s.shards[maphash.String(s.seed, key)&(numShards-1)]
}

type leaseKey struct{ rule, key string }

// lease is what an instance holds for one rule and key.
type lease struct {
	rule   limiter.Rule // tokens are only spent under the rule they were leased under
	tokens int64        // unspent (a refill in flight took them: they pay for its request)
	// seen is the key's last decision here (a spend, or the one that
	// leased): the key is hot, and its tokens live, until seen + TTL.
	seen       instant
	refilled   bool   // a refill is in flight: others decide exactly
	key        string // the key's part of its leaseKey (the rule's is rule.Name)
	prev, next *lease // the shard's list (table.go)
	view              // the key's quota as the decisions made here saw it
}

// view is a key's quota as an exact decision would report it, kept as the
// instant it is whole again (the unspent tokens count as the key's): the
// meters that lease all refill their quota at Limit per Period up to
// Capacity (at a multiplier ≥ 1, admission is the quota), so spending
// cost moves the instant cost × per later, and Remaining is Capacity less
// the tokens that refill until then. Every decision here moves it;
// a shared store's answer moves it no sooner than the answer says (less
// the tokens held here): what other instances spent counts from then on.
type view struct {
	at      instant
	backlog float64 // ns from at until whole
	per     float64 // ns per token
	rate    float64 // tokens per ns, 1 / per: a multiply on the local path
	capa    float64
}

// instant is a time as ns since the store's base: 8 bytes where a
// time.Time takes 24, in every lease. Times of the store's clock
// (time.Now's monotonic reading, where it has one) subtract exactly.
type instant int64

// now is the clock's time as an instant.
func (s *Store) now() instant { return instant(s.set.Now().Sub(s.base)) }

func newLease(r limiter.Rule, now instant) *lease {
	per := float64(r.Period) / float64(r.Limit)
	return &lease{rule: r, seen: now, view: view{at: now, per: per, rate: 1 / per, capa: float64(r.Capacity())}}
}

// spend moves v to now and spends cost (a refund gives back -cost). Plain
// comparisons rather than max: this is the local path.
func (v *view) spend(now instant, cost int64) {
	if el := now - v.at; el > 0 {
		v.at = now
		if v.backlog -= float64(el); v.backlog < 0 {
			v.backlog = 0
		}
	}
	if v.backlog += float64(cost) * v.per; v.backlog < 0 {
		v.backlog = 0
	}
}

// observe folds in a shared decision d made at now that spent cost while
// held tokens were unspent here (spent in the shared store). d's
// ResetAfter is rounded up to the µs and its Remaining down: the backlog
// is at most either (Remaining is exact where ResetAfter is not).
func (v *view) observe(now instant, d limiter.Decision, cost, held int64) {
	v.spend(now, cost)
	shared := min(float64(d.ResetAfter), (v.capa-float64(d.Remaining))*v.per)
	v.backlog = max(v.backlog, shared-float64(v.at-now)-float64(held)*v.per)
}

// quota is what the key may still spend at v.at (at least the held
// tokens) and until when it is whole, rounded up to the µs as the stores
// do (less a hair: 7 × 1/7 s in float64 lands just past 1 s). int64
// truncates toward 0, the floor wherever it counts: a negative Remaining
// ends at held ≥ 0, a negative count of µs at 0.
func (v *view) quota(held int64) (int64, time.Duration) {
	rem := int64(v.capa - v.backlog*v.rate + 1e-9)
	rem = max(rem, held)
	x := v.backlog*1e-3 - 1e-6
	us := int64(x)
	if float64(us) < x {
		us++
	}
	return rem, min(time.Duration(us)*time.Microsecond, limiter.MaxWait)
}

// New returns a leasing store over shared.
func New(shared limiter.Store, s Settings) (*Store, error) {
	s, err := s.withDefaults()
	if err != nil {
		return nil, err
	}
	st := &Store{shared: shared, set: s, seed: maphash.MakeSeed(), base: s.Now()}
	for i := range st.shards {
		st.shards[i].leases = make(map[leaseKey]*lease)
		st.shards[i].max = max(1, s.MaxKeys/numShards)
	}
	if s.Metrics != nil {
		s.Metrics.track(st)
	}
	return st, nil
}

// Decide spends a leased token when the key holds one, else decides
// through the shared store (leasing a batch when the key is hot).
func (s *Store) Decide(ctx context.Context, req limiter.Request) (limiter.Decision, error) {
	if d, ok := s.spend(&req); ok {
		return d, nil
	}
	if err := req.Normalize(); err != nil {
		return limiter.Decision{}, err
	}
	if req.Rule.Algorithm.IsWindow() {
		return s.shared.Decide(ctx, req)
	}
	now, k, sh := s.now(), leaseKey{req.Rule.Name, req.Key}, s.shard(req.Key)
	if req.Refund || req.Multiplier < 1 {
		return s.aside(ctx, req, sh, k, now)
	}
	sh.mu.Lock()
	l := sh.leases[k]
	known := l != nil && l.rule == req.Rule && time.Duration(now-l.seen) < s.set.TTL
	if known && l.tokens >= req.Cost { // leased since spend looked
		d := sh.take(l, now, req.Cost, req.Rule.Limit)
		sh.mu.Unlock()
		return d, nil
	}
	hot := known && !l.refilled
	var held int64
	var evicted int
	switch {
	case hot: // the request takes the tokens held: refill asks for the rest
		held, l.tokens = l.tokens, 0
		l.refilled, l.seen = true, now
		sh.touch(l)
	case !known: // seen: hot from now on
		l = newLease(req.Rule, now)
		evicted = sh.insert(k, l, now, s.set.TTL)
	}
	sh.mu.Unlock()
	if evicted > 0 && s.set.Metrics != nil {
		s.set.Metrics.evictions.Add(float64(evicted))
	}
	if !hot {
		return s.exact(ctx, req, sh, l, now)
	}
	return s.refill(ctx, req, sh, l, now, held)
}

// spend is the local path: it decides req from the key's lease when the
// lease was taken under req's rule (so the rule is valid) and holds the
// cost. Requests it cannot judge without Normalize go the long way.
func (s *Store) spend(req *limiter.Request) (limiter.Decision, bool) {
	cost, m := req.Cost, req.Multiplier
	if cost == 0 {
		cost = 1
	}
	if cost < 0 || req.Refund || req.Peek || req.Key == "" || !(m == 0 || m >= 1 && m <= math.MaxFloat64) {
		return limiter.Decision{}, false
	}
	now, sh := s.now(), s.shard(req.Key)
	sh.mu.Lock()
	l := sh.leases[leaseKey{req.Rule.Name, req.Key}]
	if l == nil || l.rule != req.Rule || time.Duration(now-l.seen) >= s.set.TTL || l.tokens < cost {
		sh.mu.Unlock()
		return limiter.Decision{}, false
	}
	d := sh.take(l, now, cost, req.Rule.Limit)
	sh.mu.Unlock()
	return d, true
}

// take admits cost from l's tokens (it holds them) at now, under a rule
// of the given limit. sh.mu is held; l is in sh's map.
func (sh *shard) take(l *lease, now instant, cost, limit int64) limiter.Decision {
	l.tokens -= cost
	l.seen = now // the tokens live while the key is used
	sh.touch(l)
	l.view.spend(now, cost)
	rem, reset := l.view.quota(l.tokens)
	return limiter.Decision{Allowed: true, Reason: limiter.Allowed, Limit: limit, Remaining: rem, ResetAfter: reset}
}

// refill decides req for a hot key whose lease held fewer tokens than its
// cost: the held tokens, taken from the lease by Decide, pay for part of
// it, and the shared store is asked for the rest along with a batch that
// brings the lease back to Size (to the capacity less the rest, if less).
// When it refuses that, the rest gets an exact decision, and when that is
// refused too, the held tokens go back to the lease: tokens leased are
// spent here or held, never dropped while the key is hot.
func (s *Store) refill(ctx context.Context, req limiter.Request, sh *shard, l *lease, now instant, held int64) (limiter.Decision, error) {
	rest := req.Cost - held // > 0: Decide admits from the lease otherwise
	n := min(s.set.Size, req.Rule.Capacity()-rest)
	if s.outage.Load() {
		n = 0
	}
	lreq := req
	lreq.Cost = rest + n
	var d limiter.Decision
	var err error
	if n > 0 {
		d, err = s.sharedDecide(ctx, lreq)
	}
	if n <= 0 || err == nil && !d.Allowed {
		n, lreq.Cost = 0, rest
		d, err = s.sharedDecide(ctx, lreq)
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	l.refilled = false
	switch {
	case err != nil || !d.Allowed:
		l.tokens += held // not spent: the key keeps them
	case !d.Fallback:
		l.tokens += n // seen is now: Decide set it
	} // a lease the fallback granted (the outage began meanwhile) is dropped
	if err != nil {
		return limiter.Decision{}, err
	}
	if d.Fallback { // it reports the local share, not the key's quota
		return d, nil
	}
	c := req.Cost // held and the rest
	if !d.Allowed {
		c = spent(&lreq, d)
	}
	l.view.observe(now, d, c, l.tokens)
	if l.tokens > 0 { // the shared store's answer spent them: the key did not
		d.Remaining, d.ResetAfter = l.view.quota(l.tokens)
	}
	return d, nil
}

// exact decides req in the shared store and folds the answer into l's view.
func (s *Store) exact(ctx context.Context, req limiter.Request, sh *shard, l *lease, now instant) (limiter.Decision, error) {
	d, err := s.sharedDecide(ctx, req)
	if err == nil && !d.Fallback {
		sh.mu.Lock()
		l.view.observe(now, d, spent(&req, d), l.tokens)
		sh.mu.Unlock()
	}
	return d, err
}

// aside decides a refund or a shedding req in the shared store, folding
// the answer into the view of the key's lease, if any: the tokens held
// are spent at a multiplier ≥ 1 again.
func (s *Store) aside(ctx context.Context, req limiter.Request, sh *shard, k leaseKey, now instant) (limiter.Decision, error) {
	d, err := s.sharedDecide(ctx, req)
	if err == nil && !d.Fallback {
		sh.mu.Lock()
		if l := sh.leases[k]; l != nil && l.rule == req.Rule {
			l.view.observe(now, d, spent(&req, d), l.tokens)
		}
		sh.mu.Unlock()
	}
	return d, err
}

// sharedDecide asks the shared store and notes whether its answer came
// from its fallback (see Store.outage). Written only when it changes: the
// flag is read by every renewal.
func (s *Store) sharedDecide(ctx context.Context, req limiter.Request) (limiter.Decision, error) {
	d, err := s.shared.Decide(ctx, req)
	if err == nil && s.outage.Load() != d.Fallback {
		s.outage.Store(d.Fallback)
	}
	return d, err
}

// spent is what d spent of the key's quota: a shed request spends it too,
// a refund gives it back.
func spent(req *limiter.Request, d limiter.Decision) int64 {
	switch {
	case req.Refund:
		return -req.Cost
	case d.Reason == limiter.OverQuota:
		return 0
	}
	return req.Cost
}
