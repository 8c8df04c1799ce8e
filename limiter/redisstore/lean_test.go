package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/fakeclock"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/redisstore"
)

// TestReadsHashState: a hash written by older versions is read as the
// state it holds, then replaced by the compact string of doubles, and the
// next decision carries on from it. Rule: 10/s, burst 5, at t0.
func TestReadsHashState(t *testing.T) {
	r := testenv.StartRedis(t)
	c := r.Client()
	us := func(d time.Duration) int64 { return t0.Add(d).UnixMicro() }
	for _, tc := range []struct {
		alg         limiter.Algorithm
		hash        []any
		first, next limiter.Decision
		size        int64
	}{
		// 2 tokens 100 ms ago: 3 now.
		{limiter.TokenBucket, []any{"q", 2, "a", 2, "ts", us(-100 * ms)}, d(ok, 10, 2, 300*ms, 0), d(ok, 10, 1, 400*ms, 0), 24},
		// a backlog of 300 ms at t0.
		{limiter.GCRA, []any{"q", 300_000, "a", 300_000, "ts", us(0)}, d(ok, 10, 1, 400*ms, 0), d(ok, 10, 0, 500*ms, 0), 24},
		// level 2 100 ms ago: 1 now.
		{limiter.LeakyBucket, []any{"q", 2, "a", 2, "ts", us(-100 * ms)}, d(ok, 10, 3, 200*ms, 0), d(ok, 10, 2, 300*ms, 0), 24},
		// 3 in the window that starts at t0.
		{limiter.FixedWindow, []any{"q", 3, "c", 3, "ts", us(0)}, d(ok, 10, 6, time.Second, 0), d(ok, 10, 5, time.Second, 0), 24},
		{limiter.SlidingWindowCounter, []any{"q", 3, "a", 0, "c", 3, "d", 0, "ts", us(0)},
			d(ok, 10, 6, 2*time.Second, 0), d(ok, 10, 5, 2*time.Second, 0), 40},
	} {
		t.Run(tc.alg.String(), func(t *testing.T) {
			clock := fakeclock.New(t0)
			s := redisstore.New(c, limiter.WithPrefix("old:"), limiter.WithClock(clock.Now))
			key, ctx := s.Key(tc.alg, "k"), context.Background()
			if err := c.HSet(ctx, key, tc.hash...).Err(); err != nil {
				t.Fatal(err)
			}
			rule := limiter.Rule{Algorithm: tc.alg, Limit: 10, Period: time.Second, Burst: 5}
			got, err := s.Decide(ctx, limiter.Request{Key: "k", Rule: rule})
			if err != nil || got != tc.first {
				t.Fatalf("from the hash: %+v %v, want %+v", got, err, tc.first)
			}
			if n, err := c.StrLen(ctx, key).Result(); err != nil || n != tc.size {
				t.Fatalf("state of %d bytes (%v), want a string of %d", n, err, tc.size)
			}
			got, err = s.Decide(ctx, limiter.Request{Key: "k", Rule: rule})
			if err != nil || got != tc.next {
				t.Fatalf("from the string: %+v %v, want %+v", got, err, tc.next)
			}
		})
	}
}
