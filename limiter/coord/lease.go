package coord

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Lease scripts: KEYS[1] is the lease key, ARGV[1] the owner's token,
// ARGV[2] the TTL in ms. Renew and release reply 1 when this owner holds
// (or, for release, held) the lease, else 0.
var (
	// leaseAcquire is SET NX PX, or an extension when the key already holds
	// our token (a replica that lost track of its own lease gets it back).
	// KEYS[2] is the fencing counter: a new holder INCRs it. It replies the
	// holder's fencing token, or 0 when another owner holds the lease.
	leaseAcquire = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if not v then
  local f = redis.call('INCR', KEYS[2])
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return f
end
if v == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  local f = tonumber(redis.call('GET', KEYS[2]) or '0')
  if f < 1 then f = redis.call('INCR', KEYS[2]) end
  return f
end
return 0
`)
	// leaseRenew extends the key only while it holds our token.
	leaseRenew = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
`)
	// leaseRelease deletes the key only while it holds our token.
	leaseRelease = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
`)
)

// Lease is a leader lease in Redis: one key whose value is the random token
// of its holder and which expires after the TTL unless renewed. Its methods
// have the shapes of controller.Lease, which it satisfies as is.
//
// Each acquisition by a new holder takes a fencing token, a counter kept
// in "{key}:fence" (the lease's cluster slot, no TTL) that only rises: a
// Publisher fenced by the lease (Settings.Lease) writes only while its
// lease and its fencing token are the current ones.
//
// Renew it well within the TTL (the controller renews every period, so a
// TTL of about three periods survives one slow tick). A holder that stops
// renewing loses the lease when the key expires.
type Lease struct {
	c        redis.UniversalClient
	key      string
	fenceKey string
	token    string
	ttlMs    int64
	fence    atomic.Uint64 // fencing token of the latest acquisition; 0 before
}

// NewLease returns a lease on key with a fresh random owner token. ttl is
// rounded down to whole milliseconds and must be at least 1 ms.
func NewLease(c redis.UniversalClient, key string, ttl time.Duration) (*Lease, error) {
	switch {
	case key == "":
		return nil, fmt.Errorf("%w: lease: empty key", ErrInvalid)
	case ttl < time.Millisecond:
		return nil, fmt.Errorf("%w: lease %q: ttl %v must be at least 1ms", ErrInvalid, key, ttl)
	}
	fk := inSlotOf(key, ":fence")
	if slotOf(fk) != slotOf(key) {
		return nil, fmt.Errorf("%w: lease %q: a key with } but no hash tag has no fencing key in its slot", ErrInvalid, key)
	}
	return &Lease{c: c, key: key, fenceKey: fk, token: rand.Text(), ttlMs: ttl.Milliseconds()}, nil
}

// Key is the Redis key of the lease.
func (l *Lease) Key() string { return l.key }

// Fence is the fencing token of this owner's latest acquisition (0 before
// the first).
func (l *Lease) Fence() uint64 { return l.fence.Load() }

// Token is this owner's token, the key's value while it holds the lease.
func (l *Lease) Token() string { return l.token }

// Acquire takes the lease if it is free, or extends it if this owner holds
// it already. It returns false, nil when another owner holds it.
func (l *Lease) Acquire(ctx context.Context) (bool, error) {
	res, err := leaseAcquire.Run(ctx, l.c, []string{l.key, l.fenceKey}, l.token, l.ttlMs).Result()
	if err != nil {
		return false, fmt.Errorf("coord: lease %q: acquire: %w", l.key, err)
	}
	f, ok := res.(int64)
	if !ok || f < 0 {
		return false, fmt.Errorf("%w: lease %q: acquire: got %T %v, want a fencing token", ErrBadReply, l.key, res, res)
	}
	if f > 0 {
		l.fence.Store(uint64(f))
	}
	return f > 0, nil
}

// Renew extends the lease if this owner holds it, and returns false, nil
// when it does not (it expired, or another owner took it).
func (l *Lease) Renew(ctx context.Context) (bool, error) {
	return l.run(ctx, leaseRenew, "renew")
}

// Release gives the lease up if this owner holds it; otherwise it does
// nothing and returns nil.
func (l *Lease) Release(ctx context.Context) error {
	_, err := l.run(ctx, leaseRelease, "release")
	return err
}

func (l *Lease) run(ctx context.Context, s *redis.Script, op string) (bool, error) {
	res, err := s.Run(ctx, l.c, []string{l.key}, l.token, l.ttlMs).Result()
	if err != nil {
		return false, fmt.Errorf("coord: lease %q: %s: %w", l.key, op, err)
	}
	n, ok := res.(int64)
	if !ok || (n != 0 && n != 1) {
		return false, fmt.Errorf("%w: lease %q: %s: got %T %v, want 0 or 1", ErrBadReply, l.key, op, res, res)
	}
	return n == 1, nil
}
