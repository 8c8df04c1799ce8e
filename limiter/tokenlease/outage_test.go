package tokenlease_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/fakeclock"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/fallback"
	"github.com/throttledhq/throttled/limiter/redisstore"
	"github.com/throttledhq/throttled/limiter/tokenlease"
)

// TestLeaseRuleInOutageAdmitsLocalShare: 10 instances, each a fallback
// store (10 instances counted) over a killed Redis, one with a leasing
// store over it. A 20/min rule, one key, one request a second on every
// instance for a minute: an instance leasing 16 at a time admits what the
// plain rule admits, its local share (2 of burst and 2 a minute), not a
// share raised to the renewal's cost + size.
func TestLeaseRuleInOutageAdmitsLocalShare(t *testing.T) {
	const instances = 10
	dead := testenv.DeadRedis(t)
	r := limiter.Rule{Name: "r", Limit: 20, Period: time.Minute}
	run := func(lease bool) (admitted [instances]int) {
		clock := fakeclock.New(t0)
		stores := make([]limiter.Store, instances)
		for i := range stores {
			shared := redisstore.New(dead, limiter.WithPrefix(fmt.Sprintf("out%d:", i)))
			fb, err := fallback.New(shared, fallback.Settings{Instances: instances, Now: clock.Now}, nil)
			if err != nil {
				t.Fatal(err)
			}
			stores[i] = fb
			if lease {
				if stores[i], err = tokenlease.New(fb, tokenlease.Settings{Size: 16, TTL: 10 * time.Second, Now: clock.Now}); err != nil {
					t.Fatal(err)
				}
			}
		}
		for range 60 {
			for i, s := range stores {
				d, err := s.Decide(context.Background(), limiter.Request{Key: "k", Rule: r})
				if err != nil || !d.Fallback {
					t.Fatalf("lease %v, instance %d: %+v, %v: want a fallback decision", lease, i, d, err)
				}
				if d.Allowed {
					admitted[i]++
				}
			}
			clock.Add(time.Second)
		}
		return admitted
	}
	plain, leased := run(false), run(true)
	// The local share: ceil(20/10) = 2 of burst and 2 a minute.
	const share = 2 + 2
	for i := range instances {
		if plain[i] > share || plain[i] < 2 {
			t.Errorf("plain rule, instance %d admitted %d in a minute, want 2..%d", i, plain[i], share)
		}
		if leased[i] != plain[i] {
			t.Errorf("lease rule, instance %d admitted %d in a minute, want %d as the plain rule", i, leased[i], plain[i])
		}
	}
	t.Logf("admitted per instance: plain %v, lease %v", plain, leased)
}

// TestLeaseResumesAfterOutage: Redis paused (SIGSTOP; a deadline of
// 500 ms, so that a loaded host does not make a healthy call fall back), a hot key's
// decisions come from the fallback one by one (no lease asked of it); once
// Redis answers again, the first decision is exact and the next leases
// Size tokens, spent without a call to Redis.
func TestLeaseResumesAfterOutage(t *testing.T) {
	rd := testenv.StartRedis(t)
	redisCalls := &counting{Store: redisstore.New(rd.DeadlineClient(-1), limiter.WithPrefix("resume:"))}
	fb, err := fallback.New(redisCalls, fallback.Settings{Deadline: 500 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	const size = 8
	s, err := tokenlease.New(fb, tokenlease.Settings{Size: size, TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	r := limiter.Rule{Name: "r", Limit: 1000, Period: time.Second}
	decide := func(step string, fallback bool) {
		t.Helper()
		d, err := s.Decide(context.Background(), limiter.Request{Key: "k", Rule: r})
		if err != nil || !d.Allowed || d.Fallback != fallback {
			t.Fatalf("%s: %+v, %v: want allowed, fallback %v", step, d, err, fallback)
		}
	}
	decide("before the outage: exact", false)
	rd.Pause()
	for i := range 3 {
		decide(fmt.Sprintf("paused, decision %d", i), true)
	}
	rd.Resume()
	before := redisCalls.n.Load()
	decide("back: exact", false)
	decide("back: leases", false)
	for i := range size {
		decide(fmt.Sprintf("back: local %d", i), false)
	}
	if n := redisCalls.n.Load() - before; n != 2 {
		t.Errorf("%d calls to Redis for %d decisions after the outage, want 2 (exact, then a lease of %d)", n, size+2, size)
	}
}
