package tokenlease

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"strings"
	"sync"
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
	// Now is the clock; nil means time.Now. Tests inject a fake one.
	Now func() time.Time
}

func (s Settings) withDefaults() (Settings, error) {
	if s.Size < 0 || s.TTL < 0 {
		return s, fmt.Errorf("%w: want Size ≥ 0 and TTL ≥ 0, got %d and %v", ErrBadSettings, s.Size, s.TTL)
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
	shards [numShards]shard
}

// numShards: a power of two, well above the cores that decide at once.
const numShards = 64

// shard holds the leases of some keys. Lock rule: mu guards leases, sweep
// and every *lease in leases; it is never held across a call to shared.
type shard struct {
	mu     sync.Mutex
	leases map[leaseKey]*lease
	sweep  time.Time // next sweep of cold leases
	_      [64]byte  // keeps neighbouring shards' locks off one cache line
}

// shard is the shard of key.
func (s *Store) shard(key string) *shard {
	return &s.shards[maphash.String(s.seed, key)&(numShards-1)]
}

type leaseKey struct{ rule, key string }

// lease is what an instance holds for one rule and key.
type lease struct {
	rule   limiter.Rule // tokens are only spent under the rule they were leased under
	tokens int64        // unspent
	base   int64        // the shared store's Remaining when leased
	// seen is the key's last decision here (a spend, or the one that
	// leased): the key is hot, and its tokens live, until seen + TTL.
	seen     time.Time
	refilled bool // a refill is in flight: others decide exactly
}

// New returns a leasing store over shared.
func New(shared limiter.Store, s Settings) (*Store, error) {
	s, err := s.withDefaults()
	if err != nil {
		return nil, err
	}
	st := &Store{shared: shared, set: s, seed: maphash.MakeSeed()}
	for i := range st.shards {
		st.shards[i].leases = make(map[leaseKey]*lease)
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
	if req.Refund || req.Multiplier < 1 || req.Rule.Algorithm.IsWindow() {
		return s.shared.Decide(ctx, req)
	}
	now, k, sh := s.set.Now(), leaseKey{req.Rule.Name, req.Key}, s.shard(req.Key)
	sh.mu.Lock()
	l := sh.leases[k]
	known := l != nil && l.rule == req.Rule && now.Sub(l.seen) < s.set.TTL
	hot := known && !l.refilled
	switch {
	case hot:
		l.refilled, l.seen = true, now
	case !known:
		sh.sweepLocked(now, s.set.TTL)
		// seen: hot from now on. The key is copied: a caller's key may share
		// its bytes with more than the key (enforce builds one buffer).
		sh.leases[leaseKey{k.rule, strings.Clone(k.key)}] = &lease{rule: req.Rule, seen: now}
	}
	sh.mu.Unlock()
	if !hot {
		return s.shared.Decide(ctx, req)
	}
	return s.refill(ctx, req, sh, l, now)
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
	now, sh := s.set.Now(), s.shard(req.Key)
	sh.mu.Lock()
	l := sh.leases[leaseKey{req.Rule.Name, req.Key}]
	if l == nil || l.rule != req.Rule || now.Sub(l.seen) >= s.set.TTL || l.tokens < cost {
		sh.mu.Unlock()
		return limiter.Decision{}, false
	}
	l.tokens -= cost
	l.seen = now // the tokens live while the key is used
	rem := l.base + l.tokens
	sh.mu.Unlock()
	return limiter.Decision{Allowed: true, Reason: limiter.Allowed, Limit: req.Rule.Limit, Remaining: rem}, true
}

// refill leases a batch for req's key along with req's own cost; when the
// shared store refuses the batch, req gets an exact decision.
func (s *Store) refill(ctx context.Context, req limiter.Request, sh *shard, l *lease, now time.Time) (limiter.Decision, error) {
	n := min(s.set.Size, req.Rule.Capacity()-req.Cost)
	lreq := req
	lreq.Cost += n
	var d limiter.Decision
	var err error
	if n > 0 {
		d, err = s.shared.Decide(ctx, lreq)
	}
	granted := n > 0 && err == nil && d.Allowed
	sh.mu.Lock()
	l.refilled = false
	if granted {
		l.tokens, l.base = n, d.Remaining // seen is now: Decide set it
	}
	sh.mu.Unlock()
	if granted {
		d.Remaining += n
		return d, nil
	}
	if err != nil {
		return limiter.Decision{}, err
	}
	return s.shared.Decide(ctx, req)
}

// sweepLocked drops the leases of keys gone cold (not seen within ttl:
// their tokens ended with it), at most once per ttl. sh.mu is held.
func (sh *shard) sweepLocked(now time.Time, ttl time.Duration) {
	if now.Before(sh.sweep) {
		return
	}
	for k, l := range sh.leases {
		if now.Sub(l.seen) >= ttl && !l.refilled {
			delete(sh.leases, k)
		}
	}
	sh.sweep = now.Add(ttl)
}
