package redisstore_test

// The conformance suite runs the same table of scenarios against every store:
// the in-memory store, one redis-server, and a Redis Cluster of three masters
// with a replica each, where the decisions of every test are spread over
// the masters (spread_test.go).
//
// Time: every store is built WithClock(fake), so each step happens at a fixed
// instant t0+offset and the expected figures are exact. For the Redis stores
// that option passes `now` to the scripts instead of reading Redis TIME; the
// scripts' TIME path is what production uses, and it is exercised with real
// time and tolerances by the property test (property_test.go) and the SCRIPT
// FLUSH test. We chose this over real time because exact expectations catch
// off-by-one and rounding differences between the Lua and Go versions that
// tolerances would hide.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/internal/fakeclock"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/redisstore"
)

// t0 is aligned to a second, so 1 s windows start at t0.
var t0 = time.Unix(1_700_000_000, 0)

// storeFactory makes a fresh store whose time comes from clock (nil: real).
type storeFactory func(t *testing.T, clock func() time.Time) limiter.Store

// forEachStore runs f against every store implementation.
func forEachStore(t *testing.T, f func(t *testing.T, newStore storeFactory)) {
	t.Run("memory", func(t *testing.T) {
		f(t, func(t *testing.T, clock func() time.Time) limiter.Store {
			if clock == nil {
				return limiter.NewMemory()
			}
			return limiter.NewMemory(limiter.WithClock(clock))
		})
	})
	t.Run("redis", func(t *testing.T) {
		r := testenv.StartRedis(t)
		f(t, func(t *testing.T, clock func() time.Time) limiter.Store {
			return redisStore(r.Client(), t, clock)
		})
	})
	t.Run("cluster", func(t *testing.T) {
		sp := newSpread(t, testenv.StartCluster(t))
		t.Cleanup(func() { sp.requireSpread(t) }) // after parallel subtests too
		f(t, func(t *testing.T, clock func() time.Time) limiter.Store {
			return spreadStore{redisStore(sp.c, t, clock), sp.renamer()}
		})
	})
}

var storeSeq atomic.Int64

// redisStore gives each store its own prefix so tests never share keys.
func redisStore(c redis.UniversalClient, t *testing.T, clock func() time.Time) limiter.Store {
	opts := []limiter.Option{limiter.WithPrefix(fmt.Sprintf("t%d:", storeSeq.Add(1)))}
	if clock != nil {
		opts = append(opts, limiter.WithClock(clock))
	}
	return redisstore.New(c, opts...)
}

type step struct {
	at     time.Duration // offset from t0
	key    string        // default "k"
	cost   int64
	m      float64
	refund bool
	want   limiter.Decision // Allowed is derived from Reason
}

func d(reason limiter.Reason, limit, remaining int64, reset, retry time.Duration) limiter.Decision {
	return limiter.Decision{Allowed: reason == limiter.Allowed, Reason: reason, Limit: limit,
		Remaining: remaining, ResetAfter: reset, RetryAfter: retry}
}

const ms = time.Millisecond

const (
	ok   = limiter.Allowed
	over = limiter.OverQuota
	shed = limiter.Shed
)

var scenarios = []struct {
	name  string
	rule  limiter.Rule
	steps []step
}{
	{"token bucket: burst, refill, full again", limiter.Rule{Limit: 10, Period: time.Second, Burst: 5}, []step{
		{at: 0, cost: 5, want: d(ok, 10, 0, 500*ms, 0)},
		{at: 0, want: d(over, 10, 0, 500*ms, 100*ms)},
		{at: 100 * ms, want: d(ok, 10, 0, 500*ms, 0)},
		{at: 1000 * ms, want: d(ok, 10, 4, 100*ms, 0)},
	}},
	{"token bucket: multiplier sheds before quota", limiter.Rule{Limit: 10, Period: time.Second, Burst: 5}, []step{
		{at: 0, m: 0.5, want: d(ok, 10, 1, 100*ms, 0)},
		{at: 0, m: 0.5, want: d(ok, 10, 0, 200*ms, 0)},
		// Shed: the request spends quota (3 → 2 tokens), not admission.
		{at: 0, m: 0.5, want: d(shed, 10, 0, 300*ms, 100*ms)},
		{at: 100 * ms, m: 0.5, want: d(ok, 10, 0, 300*ms, 0)},
		// Back at 1: only the quota counts, as in a plain bucket.
		{at: 100 * ms, m: 1, want: d(ok, 10, 1, 400*ms, 0)},
	}},
	{"token bucket: shed requests spend quota, then 429", limiter.Rule{Limit: 10, Period: time.Second, Burst: 4}, []step{
		{at: 0, m: 0.5, want: d(ok, 10, 1, 100*ms, 0)},
		{at: 0, m: 0.5, want: d(ok, 10, 0, 200*ms, 0)},
		{at: 0, m: 0.5, want: d(shed, 10, 0, 300*ms, 200*ms)},
		{at: 0, m: 0.5, want: d(shed, 10, 0, 400*ms, 200*ms)},
		{at: 0, m: 0.5, want: d(over, 10, 0, 400*ms, 100*ms)},
	}},
	{"gcra: burst, refill, full again", limiter.Rule{Algorithm: limiter.GCRA, Limit: 10, Period: time.Second, Burst: 5}, []step{
		{at: 0, cost: 5, want: d(ok, 10, 0, 500*ms, 0)},
		{at: 0, want: d(over, 10, 0, 500*ms, 100*ms)},
		{at: 100 * ms, want: d(ok, 10, 0, 500*ms, 0)},
		{at: 1000 * ms, want: d(ok, 10, 4, 100*ms, 0)},
	}},
	{"gcra: multiplier", limiter.Rule{Algorithm: limiter.GCRA, Limit: 10, Period: time.Second, Burst: 4}, []step{
		{at: 0, m: 0.5, want: d(ok, 10, 1, 100*ms, 0)},
		{at: 0, m: 0.5, want: d(ok, 10, 0, 200*ms, 0)},
		{at: 0, m: 0.5, want: d(shed, 10, 0, 300*ms, 200*ms)}, // spends quota
	}},
	{"leaky bucket: fill, drain", limiter.Rule{Algorithm: limiter.LeakyBucket, Limit: 10, Period: time.Second, Burst: 5}, []step{
		{at: 0, cost: 5, want: d(ok, 10, 0, 500*ms, 0)},
		{at: 0, want: d(over, 10, 0, 500*ms, 100*ms)},
		{at: 100 * ms, want: d(ok, 10, 0, 500*ms, 0)},
		{at: 1000 * ms, want: d(ok, 10, 4, 100*ms, 0)},
		{at: 1000 * ms, m: 0.5, want: d(ok, 10, 0, 200*ms, 0)},
		{at: 1000 * ms, m: 0.5, want: d(shed, 10, 0, 300*ms, 100*ms)}, // spends quota
	}},
	{"fixed window", limiter.Rule{Algorithm: limiter.FixedWindow, Limit: 10, Period: time.Second, Burst: 99}, []step{
		{at: 0, cost: 10, want: d(ok, 10, 0, 1000*ms, 0)},
		{at: 500 * ms, want: d(over, 10, 0, 500*ms, 500*ms)},
		{at: 1000 * ms, want: d(ok, 10, 9, 1000*ms, 0)},
		{at: 1000 * ms, key: "m", cost: 5, m: 0.5, want: d(ok, 10, 0, 1000*ms, 0)},
		{at: 1250 * ms, key: "m", m: 0.5, want: d(shed, 10, 0, 750*ms, 750*ms)},
	}},
	{"fixed window: shed requests spend quota, then 429", limiter.Rule{Algorithm: limiter.FixedWindow, Limit: 4, Period: time.Second}, []step{
		{at: 0, m: 0.5, want: d(ok, 4, 1, 1000*ms, 0)},
		{at: 0, m: 0.5, want: d(ok, 4, 0, 1000*ms, 0)},
		{at: 0, m: 0.5, want: d(shed, 4, 0, 1000*ms, 1000*ms)},
		{at: 0, m: 0.5, want: d(shed, 4, 0, 1000*ms, 1000*ms)},
		{at: 0, m: 0.5, want: d(over, 4, 0, 1000*ms, 1000*ms)},
		{at: 0, refund: true, want: d(ok, 4, 1, 1000*ms, 0)},
	}},
	{"sliding window log: shed requests spend quota, then 429", limiter.Rule{Algorithm: limiter.SlidingWindowLog, Limit: 4, Period: time.Second}, []step{
		{at: 0, m: 0.5, want: d(ok, 4, 1, 1000*ms, 0)},
		{at: 100 * ms, m: 0.5, want: d(ok, 4, 0, 1000*ms, 0)},
		{at: 200 * ms, m: 0.5, want: d(shed, 4, 0, 1000*ms, 800*ms)},
		{at: 300 * ms, m: 0.5, want: d(shed, 4, 0, 1000*ms, 700*ms)},
		{at: 400 * ms, m: 0.5, want: d(over, 4, 0, 900*ms, 600*ms)},
		{at: 1000 * ms, m: 0.5, want: d(ok, 4, 0, 1000*ms, 0)},
	}},
	{"sliding window counter", limiter.Rule{Algorithm: limiter.SlidingWindowCounter, Limit: 10, Period: time.Second}, []step{
		{at: 0, cost: 10, want: d(ok, 10, 0, 2000*ms, 0)},
		{at: 1000 * ms, want: d(over, 10, 0, 1000*ms, 100*ms)},
		{at: 1500 * ms, want: d(ok, 10, 4, 1500*ms, 0)},
		{at: 1500 * ms, m: 0.5, want: d(shed, 10, 0, 1500*ms, 200*ms)},
		{at: 3500 * ms, want: d(ok, 10, 9, 1500*ms, 0)},
	}},
	{"token bucket: refund", limiter.Rule{Limit: 10, Period: time.Second, Burst: 5}, []step{
		{at: 0, cost: 5, want: d(ok, 10, 0, 500*ms, 0)},
		{at: 0, cost: 2, refund: true, want: d(ok, 10, 2, 300*ms, 0)},
		{at: 0, cost: 2, want: d(ok, 10, 0, 500*ms, 0)},
		{at: 0, want: d(over, 10, 0, 500*ms, 100*ms)},
	}},
	{"sliding window log: refund", limiter.Rule{Algorithm: limiter.SlidingWindowLog, Limit: 3, Period: time.Second}, []step{
		{at: 0, cost: 3, want: d(ok, 3, 0, 1000*ms, 0)},
		{at: 100 * ms, refund: true, want: d(ok, 3, 1, 900*ms, 0)},
		{at: 100 * ms, want: d(ok, 3, 0, 1000*ms, 0)},
	}},
	// Entry names once collided after a refund: unpadded "-9" sorted above
	// "-12", so ZPOPMAX removed "-9" and the next take overwrote "-12".
	{"sliding window log: refund then take at one instant", limiter.Rule{Algorithm: limiter.SlidingWindowLog, Limit: 20, Period: time.Second}, []step{
		{at: 0, cost: 12, want: d(ok, 20, 8, 1000*ms, 0)},
		{at: 0, refund: true, want: d(ok, 20, 9, 1000*ms, 0)},
		{at: 0, want: d(ok, 20, 8, 1000*ms, 0)},
		{at: 0, cost: 8, want: d(ok, 20, 0, 1000*ms, 0)},
		{at: 0, want: d(over, 20, 0, 1000*ms, 1000*ms)},
		{at: 0, m: 0.5, refund: true, want: d(ok, 20, 0, 1000*ms, 0)},
		{at: 0, m: 0.5, refund: true, want: d(ok, 20, 0, 1000*ms, 0)},
	}},
	{"sliding window log", limiter.Rule{Algorithm: limiter.SlidingWindowLog, Limit: 3, Period: time.Second}, []step{
		{at: 0, want: d(ok, 3, 2, 1000*ms, 0)},
		{at: 100 * ms, cost: 2, want: d(ok, 3, 0, 1000*ms, 0)},
		{at: 200 * ms, want: d(over, 3, 0, 900*ms, 800*ms)},
		{at: 1000 * ms, want: d(ok, 3, 0, 1000*ms, 0)},
		{at: 0, key: "m", m: 0.5, want: d(ok, 3, 0, 1000*ms, 0)},
		{at: 0, key: "m", m: 0.5, want: d(shed, 3, 0, 1000*ms, 1000*ms)},
	}},
}

func TestConformance(t *testing.T) {
	forEachStore(t, func(t *testing.T, newStore storeFactory) {
		for _, sc := range scenarios {
			t.Run(sc.name, func(t *testing.T) {
				clock := fakeclock.New(t0)
				s := newStore(t, clock.Now)
				for i, st := range sc.steps {
					clock.Set(t0.Add(st.at))
					key := st.key
					if key == "" {
						key = "k"
					}
					req := limiter.Request{Key: key, Rule: sc.rule, Cost: st.cost, Multiplier: st.m, Refund: st.refund}
					got, err := s.Decide(context.Background(), req)
					if err != nil {
						t.Fatalf("step %d (t0+%v): %v", i, st.at, err)
					}
					if got != st.want {
						t.Errorf("step %d (t0+%v cost %d m %v):\n got %+v\nwant %+v", i, st.at, st.cost, st.m, got, st.want)
					}
				}
			})
		}
		t.Run("invalid requests", func(t *testing.T) { testInvalid(t, newStore(t, nil)) })
	})
}

func testInvalid(t *testing.T, s limiter.Store) {
	good := limiter.Rule{Name: "r", Limit: 10, Period: time.Second, Burst: 5}
	bad := []struct {
		name string
		req  limiter.Request
	}{
		{"empty key", limiter.Request{Rule: good}},
		{"cost over burst", limiter.Request{Key: "k", Rule: good, Cost: 6}},
		{"negative cost", limiter.Request{Key: "k", Rule: good, Cost: -1}},
		{"zero limit", limiter.Request{Key: "k", Rule: limiter.Rule{Period: time.Second}}},
		{"zero period", limiter.Request{Key: "k", Rule: limiter.Rule{Limit: 1}}},
		{"negative burst", limiter.Request{Key: "k", Rule: limiter.Rule{Limit: 1, Period: time.Second, Burst: -1}}},
		{"unknown algorithm", limiter.Request{Key: "k", Rule: limiter.Rule{Algorithm: 42, Limit: 1, Period: time.Second}}},
		{"NaN multiplier", limiter.Request{Key: "k", Rule: good, Multiplier: math.NaN()}},
		{"Inf multiplier", limiter.Request{Key: "k", Rule: good, Multiplier: math.Inf(1)}},
		{"negative multiplier", limiter.Request{Key: "k", Rule: good, Multiplier: -0.5}},
		{"sliding log over its cap", limiter.Request{Key: "k", Rule: limiter.Rule{Algorithm: limiter.SlidingWindowLog,
			Limit: limiter.MaxLogLimit + 1, Period: time.Second}}},
	}
	for _, b := range bad {
		if _, err := s.Decide(context.Background(), b.req); !errors.Is(err, limiter.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", b.name, err)
		}
	}
}

// TestPeekSpendsNothing: a peek reports what a key has left, on every store
// and algorithm, and leaves it so.
func TestPeekSpendsNothing(t *testing.T) {
	forEachStore(t, func(t *testing.T, newStore storeFactory) {
		clock := fakeclock.New(t0)
		s := newStore(t, clock.Now)
		for _, alg := range limiter.Algorithms() {
			rule := limiter.Rule{Algorithm: alg, Limit: 5, Period: time.Second, Burst: 5}
			ctx := context.Background()
			if _, err := s.Decide(ctx, limiter.Request{Key: "p", Rule: rule, Cost: 2}); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 3; i++ {
				d, err := s.Decide(ctx, limiter.Request{Key: "p", Rule: rule, Peek: true})
				if err != nil || d.Remaining != 3 || !d.Allowed {
					t.Fatalf("%v peek %d: %+v %v, want remaining 3", alg, i, d, err)
				}
			}
			if d, _ := s.Decide(ctx, limiter.Request{Key: "p", Rule: rule, Cost: 3}); !d.Allowed || d.Remaining != 0 {
				t.Fatalf("%v: after peeks %+v, want the 3 left spendable", alg, d)
			}
		}
	})
}

// TestGCRAHighRates: at any rate, 1,000 requests at one instant admit the
// burst and no more. Absolute µs timestamps in float64 have a step of
// 0.25 µs, coarser than the emission interval at these rates.
func TestGCRAHighRates(t *testing.T) {
	forEachStore(t, func(t *testing.T, newStore storeFactory) {
		for _, limit := range []int64{1e6, 3e6, 6e6, 1e7, 1e9} {
			clock := fakeclock.New(t0.Add(123_456_789 * time.Nanosecond))
			s := newStore(t, clock.Now)
			rule := limiter.Rule{Algorithm: limiter.GCRA, Limit: limit, Period: time.Second, Burst: 10}
			admitted := 0
			for i := 0; i < 1000; i++ {
				d, err := s.Decide(context.Background(), limiter.Request{Key: "hi", Rule: rule})
				if err != nil {
					t.Fatal(err)
				}
				if d.Allowed {
					admitted++
				}
			}
			if admitted != 10 {
				t.Errorf("limit %d/s, burst 10: %d of 1000 admitted at one instant, want 10", limit, admitted)
			}
		}
	})
}
