package coord

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Lease scripts: KEYS[1] is the lease key, ARGV[1] the owner's token,
// ARGV[2] the TTL in ms. Each replies 1 when this owner holds (or, for
// release, held) the lease, else 0.
var (
	// leaseAcquire is SET NX PX, or an extension when the key already holds
	// our token (a replica that lost track of its own lease gets it back).
	leaseAcquire = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if not v then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
if v == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
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
// Renew it well within the TTL (the controller renews every period, so a
// TTL of about three periods survives one slow tick). A holder that stops
// renewing loses the lease when the key expires.
type Lease struct {
	c     redis.UniversalClient
	key   string
	token string
	ttlMs int64
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
	return &Lease{c: c, key: key, token: rand.Text(), ttlMs: ttl.Milliseconds()}, nil
}

// Key is the Redis key of the lease.
func (l *Lease) Key() string { return l.key }

// Token is this owner's token, the key's value while it holds the lease.
func (l *Lease) Token() string { return l.token }

// Acquire takes the lease if it is free, or extends it if this owner holds
// it already. It returns false, nil when another owner holds it.
func (l *Lease) Acquire(ctx context.Context) (bool, error) {
	return l.run(ctx, leaseAcquire, "acquire")
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
