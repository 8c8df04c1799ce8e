package tokenlease_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/fakeclock"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/tokenlease"
)

var t0 = time.Unix(1_700_000_000, 0)

// counting counts the decisions that reach the shared store.
type counting struct {
	limiter.Store
	n atomic.Int64
}

func (c *counting) Decide(ctx context.Context, req limiter.Request) (limiter.Decision, error) {
	c.n.Add(1)
	return c.Store.Decide(ctx, req)
}

var rule = limiter.Rule{Name: "r", Limit: 10, Period: time.Second, Burst: 10}

// TestLeaseSteps: the first decision of a key is exact, the second leases
// Size tokens along with its own, the next Size are local, and a lease the
// shared store refuses gives an exact decision.
func TestLeaseSteps(t *testing.T) {
	clock := fakeclock.New(t0)
	shared := &counting{Store: limiter.NewMemory(limiter.WithClock(clock.Now))}
	s, err := tokenlease.New(shared, tokenlease.Settings{Size: 4, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name      string
		allowed   bool
		remaining int64
		shared    int64 // calls so far
	}{
		{"t0 first: exact", true, 9, 1},
		{"t1 hot: lease 4 with it", true, 8, 2}, // shared 9-5 = 4, plus 4 local
		{"t2 local", true, 7, 2},
		{"t3 local", true, 6, 2},
		{"t4 local", true, 5, 2},
		{"t5 local", true, 4, 2},
		{"t6 lease refused (4 < 5): exact", true, 3, 4},
		{"t7 lease refused: exact", true, 2, 6},
	}
	for _, st := range steps {
		d, err := s.Decide(context.Background(), limiter.Request{Key: "k", Rule: rule})
		if err != nil || d.Allowed != st.allowed || d.Remaining != st.remaining || shared.n.Load() != st.shared {
			t.Fatalf("%s: %+v %v after %d shared calls, want allowed %v remaining %d after %d",
				st.name, d, err, shared.n.Load(), st.allowed, st.remaining, st.shared)
		}
	}
}

// TestExactWhenShedding: below multiplier 1, refunds and window rules,
// every decision goes to the shared store.
func TestExactWhenShedding(t *testing.T) {
	clock := fakeclock.New(t0)
	shared := &counting{Store: limiter.NewMemory(limiter.WithClock(clock.Now))}
	s, _ := tokenlease.New(shared, tokenlease.Settings{Now: clock.Now})
	fw := rule
	fw.Algorithm = limiter.FixedWindow
	for i, req := range []limiter.Request{
		{Key: "k", Rule: rule, Multiplier: 0.5},
		{Key: "k", Rule: rule, Refund: true},
		{Key: "k", Rule: fw},
	} {
		for j := range 3 {
			before := shared.n.Load()
			if _, err := s.Decide(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			if shared.n.Load() != before+1 {
				t.Fatalf("request %d, decision %d: %d shared calls, want 1", i, j, shared.n.Load()-before)
			}
		}
	}
}

// TestRuleChangeDropsLease: tokens leased under one rule are not spent
// under another.
func TestRuleChangeDropsLease(t *testing.T) {
	clock := fakeclock.New(t0)
	shared := &counting{Store: limiter.NewMemory(limiter.WithClock(clock.Now))}
	s, _ := tokenlease.New(shared, tokenlease.Settings{Size: 4, Now: clock.Now})
	for range 2 { // exact, then lease
		if _, err := s.Decide(context.Background(), limiter.Request{Key: "k", Rule: rule}); err != nil {
			t.Fatal(err)
		}
	}
	r2 := rule
	r2.Limit = 5
	before := shared.n.Load()
	if _, err := s.Decide(context.Background(), limiter.Request{Key: "k", Rule: r2}); err != nil || shared.n.Load() != before+1 {
		t.Fatalf("changed rule: %v, %d shared calls, want 1", err, shared.n.Load()-before)
	}
}

// TestLeaseExpires: unspent tokens are dropped after TTL.
func TestLeaseExpires(t *testing.T) {
	clock := fakeclock.New(t0)
	shared := &counting{Store: limiter.NewMemory(limiter.WithClock(clock.Now))}
	s, _ := tokenlease.New(shared, tokenlease.Settings{Size: 4, TTL: 100 * time.Millisecond, Now: clock.Now})
	for range 2 {
		if _, err := s.Decide(context.Background(), limiter.Request{Key: "k", Rule: rule}); err != nil {
			t.Fatal(err)
		}
	}
	clock.Set(t0.Add(100 * time.Millisecond))
	before := shared.n.Load()
	if _, err := s.Decide(context.Background(), limiter.Request{Key: "k", Rule: rule}); err != nil || shared.n.Load() != before+1 {
		t.Fatalf("after TTL: %v, %d shared calls, want 1", err, shared.n.Load()-before)
	}
}

// TestLeaseLivesWhileUsed: a lease's unspent tokens live while its key is
// in use and lapse once the key was quiet for TTL. They were spent in the
// shared store when leased: dropping them while the key still asks threw
// them away and leased again, a round trip and up to Size tokens lost per
// TTL for a key whose rate × TTL is under Size.
func TestLeaseLivesWhileUsed(t *testing.T) {
	clock := fakeclock.New(t0)
	shared := &counting{Store: limiter.NewMemory(limiter.WithClock(clock.Now))}
	s, _ := tokenlease.New(shared, tokenlease.Settings{Size: 4, TTL: 100 * time.Millisecond, Now: clock.Now})
	for _, st := range []struct {
		at        time.Duration
		shared    int64 // calls so far
		remaining int64 // -1: not checked
	}{
		{0, 1, 9},                       // t0: exact
		{10 * time.Millisecond, 2, 8},   // t1: lease 4 (shared 9.1-5), until t1 + TTL: 8.1 left
		{90 * time.Millisecond, 2, 7},   // t2: local (8.1 + 0.8 - 1); the lease lives until t2 + TTL
		{180 * time.Millisecond, 2, 7},  // t3: local (7.9 + 0.9 - 1), past t1 + TTL
		{270 * time.Millisecond, 2, 7},  // t4: local (7.7)
		{360 * time.Millisecond, 2, 7},  // t5: local (7.6), the lease's last token
		{450 * time.Millisecond, 3, -1}, // t6: spent: lease again, with its own cost
		{560 * time.Millisecond, 4, -1}, // t7: quiet for longer than TTL: exact
	} {
		clock.Set(t0.Add(st.at))
		d, err := s.Decide(context.Background(), limiter.Request{Key: "k", Rule: rule})
		if err != nil || !d.Allowed || shared.n.Load() != st.shared || st.remaining >= 0 && d.Remaining != st.remaining {
			t.Fatalf("at t0+%v: %+v %v after %d shared calls, want remaining %d after %d",
				st.at, d, err, shared.n.Load(), st.remaining, st.shared)
		}
	}
}

func TestBadSettings(t *testing.T) {
	for _, set := range []tokenlease.Settings{{Size: -1}, {TTL: -time.Second}} {
		if _, err := tokenlease.New(limiter.NewMemory(), set); !errors.Is(err, tokenlease.ErrBadSettings) {
			t.Errorf("%+v: err = %v, want ErrBadSettings", set, err)
		}
	}
}

func Example() {
	shared := limiter.NewMemory() // in production: the Redis store
	s, _ := tokenlease.New(shared, tokenlease.Settings{Size: 16})
	r := limiter.Rule{Name: "api", Limit: 100, Period: time.Second}
	for i := range 3 {
		d, _ := s.Decide(context.Background(), limiter.Request{Key: "client-1", Rule: r})
		fmt.Println(i, d.Allowed, d.Remaining)
	}
	// Output:
	// 0 true 99
	// 1 true 98
	// 2 true 97
}

// BenchmarkLocalDecide: a decision spent from a lease (the shared store
// is rarely asked: one call per Size decisions).
func BenchmarkLocalDecide(b *testing.B) {
	s, _ := tokenlease.New(limiter.NewMemory(), tokenlease.Settings{Size: 1 << 30})
	r := limiter.Rule{Name: "api", Limit: 1e12, Period: time.Second}
	req := limiter.Request{Key: "client-1", Rule: r}
	ctx := context.Background()
	for range 2 {
		_, _ = s.Decide(ctx, req)
	}
	b.ReportAllocs()
	for b.Loop() {
		if d, err := s.Decide(ctx, req); err != nil || !d.Allowed {
			b.Fatal("refused: ", err)
		}
	}
}

// TestInvalidWithLease: a key that holds a lease still gets ErrInvalid for
// a request the shared store would refuse as invalid.
func TestInvalidWithLease(t *testing.T) {
	clock := fakeclock.New(t0)
	s, _ := tokenlease.New(limiter.NewMemory(limiter.WithClock(clock.Now)), tokenlease.Settings{Size: 4, Now: clock.Now})
	for range 2 { // exact, then lease
		if _, err := s.Decide(context.Background(), limiter.Request{Key: "k", Rule: rule}); err != nil {
			t.Fatal(err)
		}
	}
	for _, req := range []limiter.Request{
		{Key: "k", Rule: rule, Cost: -1},
		{Key: "k", Rule: rule, Multiplier: math.NaN()},
		{Key: "k", Rule: rule, Multiplier: math.Inf(1)},
	} {
		if _, err := s.Decide(context.Background(), req); !errors.Is(err, limiter.ErrInvalid) {
			t.Errorf("cost %d multiplier %v: err = %v, want ErrInvalid", req.Cost, req.Multiplier, err)
		}
	}
}

// TestContinuousUseKeepsTheKeyHot: a key is hot while it was seen within
// TTL, as the package doc says, not only while it holds a lease. A key in
// steady use whose lease ran out leases again at once; it used to take an
// exact decision first and lease only on the request after (two round
// trips per lease for a key that never went quiet).
func TestContinuousUseKeepsTheKeyHot(t *testing.T) {
	clock := fakeclock.New(t0)
	shared := &counting{Store: limiter.NewMemory(limiter.WithClock(clock.Now))}
	s, _ := tokenlease.New(shared, tokenlease.Settings{Size: 4, TTL: 100 * time.Millisecond, Now: clock.Now})
	roomy := limiter.Rule{Name: "r", Limit: 100, Period: time.Second, Burst: 100} // every lease granted
	for _, st := range []struct {
		at     time.Duration
		shared int64 // calls so far
	}{
		{0, 1},                      // t0: exact
		{10 * time.Millisecond, 2},  // t1: lease 4
		{20 * time.Millisecond, 2},  // t2: local
		{30 * time.Millisecond, 2},  // t3: local
		{40 * time.Millisecond, 2},  // t4: local
		{50 * time.Millisecond, 2},  // t5: local, the last token
		{60 * time.Millisecond, 3},  // t6: the lease ran out, the key was seen 10 ms ago: lease again
		{61 * time.Millisecond, 3},  // t7: local
		{300 * time.Millisecond, 4}, // t8: quiet for longer than TTL: exact
	} {
		clock.Set(t0.Add(st.at))
		if d, err := s.Decide(context.Background(), limiter.Request{Key: "k", Rule: roomy}); err != nil || !d.Allowed {
			t.Fatalf("at t0+%v: %+v %v", st.at, d, err)
		}
		if got := shared.n.Load(); got != st.shared {
			t.Fatalf("at t0+%v: %d shared calls so far, want %d", st.at, got, st.shared)
		}
	}
}

// BenchmarkLocalDecideParallel: decisions spent from leases by every
// core at once, over 1,000 keys (as bench http's lease mode).
func BenchmarkLocalDecideParallel(b *testing.B) {
	s, _ := tokenlease.New(limiter.NewMemory(), tokenlease.Settings{Size: 1 << 30, TTL: time.Hour})
	r := limiter.Rule{Name: "api", Limit: 1e12, Period: time.Second}
	reqs := make([]limiter.Request, 1000)
	ctx := context.Background()
	for i := range reqs {
		reqs[i] = limiter.Request{Key: fmt.Sprintf("client-%d", i), Rule: r}
		for range 2 {
			_, _ = s.Decide(ctx, reqs[i])
		}
	}
	var next atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := int(next.Add(7919))
		for pb.Next() {
			i++
			if d, err := s.Decide(ctx, reqs[i%len(reqs)]); err != nil || !d.Allowed {
				b.Fatal("refused: ", err)
			}
		}
	})
}
