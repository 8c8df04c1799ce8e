package coord

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/internal/testenv"
)

func newTestLease(t *testing.T, c redis.UniversalClient, key string, ttl time.Duration) *Lease {
	t.Helper()
	l, err := NewLease(c, key, ttl)
	if err != nil {
		t.Fatalf("NewLease: %v", err)
	}
	return l
}

// leaseCall fails the test on an error and returns the answer.
func leaseCall(t *testing.T, what string, f func(context.Context) (bool, error)) bool {
	t.Helper()
	ok, err := f(context.Background())
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return ok
}

func TestLeaseExclusive(t *testing.T) {
	c := testenv.StartRedis(t).Client()
	ctx := context.Background()
	a := newTestLease(t, c, "lease:x", time.Minute)
	b := newTestLease(t, c, "lease:x", time.Minute)
	if a.Token() == b.Token() || a.Token() == "" {
		t.Fatalf("tokens %q and %q: want distinct and non-empty", a.Token(), b.Token())
	}
	steps := []struct {
		what string
		f    func(context.Context) (bool, error)
		want bool
	}{
		{"a acquires a free lease", a.Acquire, true},
		{"b cannot acquire it", b.Acquire, false},
		{"a acquires again (it holds it)", a.Acquire, true},
		{"b cannot renew it", b.Renew, false},
		{"a renews it", a.Renew, true},
	}
	for _, s := range steps {
		if got := leaseCall(t, s.what, s.f); got != s.want {
			t.Fatalf("%s: got %v, want %v", s.what, got, s.want)
		}
	}
	if err := b.Release(ctx); err != nil {
		t.Fatalf("b.Release: %v", err)
	}
	if v, err := c.Get(ctx, "lease:x").Result(); err != nil || v != a.Token() {
		t.Fatalf("after release by the non-owner the key holds %q (%v), want a's token", v, err)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatalf("a.Release: %v", err)
	}
	if n, _ := c.Exists(ctx, "lease:x").Result(); n != 0 {
		t.Fatal("the key survived release by its owner")
	}
	if !leaseCall(t, "b acquires after a released", b.Acquire) {
		t.Fatal("b could not acquire a released lease")
	}
	if leaseCall(t, "a renews b's lease", a.Renew) {
		t.Fatal("a renewed a lease it had released")
	}
}

func TestLeaseTTL(t *testing.T) {
	c := testenv.StartRedis(t).Client()
	ctx := context.Background()
	l := newTestLease(t, c, "lease:ttl", 10*time.Second)
	leaseCall(t, "acquire", l.Acquire)
	c.PExpire(ctx, "lease:ttl", time.Second) // as if time had passed
	for _, op := range []struct {
		name string
		f    func(context.Context) (bool, error)
	}{{"renew", l.Renew}, {"acquire by the holder", l.Acquire}} {
		if !leaseCall(t, op.name, op.f) {
			t.Fatalf("%s: false, want true", op.name)
		}
		if d, err := c.PTTL(ctx, "lease:ttl").Result(); err != nil || d <= 9*time.Second || d > 10*time.Second {
			t.Fatalf("after %s PTTL = %v (%v), want in (9s, 10s]", op.name, d, err)
		}
		c.PExpire(ctx, "lease:ttl", time.Second)
	}
}

// After the holder stops renewing, the other replica gets the lease once
// the key expires: not before one lease period after the last renewal and
// within two. The TTL is short but not tight: renewals every quarter TTL
// survive a loaded machine.
func TestLeaseTakeoverAfterExpiry(t *testing.T) {
	c := testenv.StartRedis(t).Client()
	const ttl = time.Second
	a := newTestLease(t, c, "lease:takeover", ttl)
	b := newTestLease(t, c, "lease:takeover", ttl)
	if !leaseCall(t, "a acquires", a.Acquire) {
		t.Fatal("a could not acquire a free lease")
	}
	var lastRenew time.Time // taken before the call: the key lives at least ttl after it
	for i := 0; i < 6; i++ {
		time.Sleep(ttl / 4)
		lastRenew = time.Now()
		if !leaseCall(t, "a renews", a.Renew) {
			t.Fatalf("renewal %d lost the lease", i)
		}
		if leaseCall(t, "b acquires", b.Acquire) && time.Since(lastRenew) < ttl {
			t.Fatalf("b acquired within the TTL of a's renewal %d", i)
		}
	}
	deadline := lastRenew.Add(2 * ttl)
	for !leaseCall(t, "b acquires", b.Acquire) {
		if time.Now().After(deadline) {
			t.Fatalf("b did not acquire within two lease periods of a's last renewal")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if held := time.Since(lastRenew); held < ttl {
		t.Fatalf("b acquired %v after a's last renewal, before the TTL %v", held, ttl)
	}
	if leaseCall(t, "a renews", a.Renew) || leaseCall(t, "a acquires", a.Acquire) {
		t.Fatal("a still holds the lease after b took it")
	}
}

func TestLeaseErrors(t *testing.T) {
	r := testenv.StartRedis(t)
	c := r.Client()
	ctx := context.Background()
	for _, tc := range []struct {
		key  string
		ttl  time.Duration
		want string
	}{{"", time.Second, "empty key"}, {"k", 0, "ttl 0s"}, {"k", time.Microsecond, "ttl 1µs"}} {
		if _, err := NewLease(c, tc.key, tc.ttl); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewLease(%q, %v): err %v, want ErrInvalid containing %q", tc.key, tc.ttl, err, tc.want)
		}
	}
	// A key of the wrong type is a Redis error, not "held by someone else".
	c.HSet(ctx, "lease:hash", "f", "v")
	l := newTestLease(t, c, "lease:hash", time.Second)
	if ok, err := l.Acquire(ctx); ok || err == nil || !strings.Contains(err.Error(), `lease "lease:hash": acquire`) {
		t.Fatalf("Acquire on a hash: %v, %v; want false and an error naming the lease", ok, err)
	}
	// Redis down: errors, not false. (A client that does not retry, to be quick.)
	quick := redis.NewClient(&redis.Options{Addr: r.Addr(), MaxRetries: -1, DialerRetries: 1})
	defer quick.Close()
	l = newTestLease(t, quick, "lease:down", time.Second)
	r.Kill()
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := l.Acquire(cctx); err == nil {
		t.Error("Acquire with Redis down: no error")
	}
	if _, err := l.Renew(cctx); err == nil {
		t.Error("Renew with Redis down: no error")
	}
	if err := l.Release(cctx); err == nil {
		t.Error("Release with Redis down: no error")
	}
}
