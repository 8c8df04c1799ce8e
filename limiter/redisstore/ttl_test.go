package redisstore_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/fakeclock"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/redisstore"
)

// TestBucketTTLGrowsOnceAGrid: a key that comes back every 1.2 s (as in
// `bench rls` at 64 callers on 10,000 keys) extends its bucket's TTL at
// most once in redisstore.BucketTTLGrid, not at every decision, and the
// bucket's TTL still covers its field's expiry, by less than the grid.
func TestBucketTTLGrowsOnceAGrid(t *testing.T) {
	grid := fmt.Sprintf("\nlocal grid = %d\n", int(redisstore.BucketTTLGrid/time.Second))
	if !strings.Contains(redisstore.ScriptSource(limiter.TokenBucket), grid) {
		t.Fatalf("lua/part/store.lua lacks %q: BucketTTLGrid's number", grid)
	}
	r := testenv.StartRedis(t)
	c := r.Client()
	clock := fakeclock.New(t0)
	s := redisstore.New(c, limiter.WithPrefix("ttl:"), limiter.WithClock(clock.Now))
	ctx := context.Background()
	rule := limiter.Rule{Name: "r", Limit: 100, Period: time.Second, Burst: 100} // full again 10 ms after one
	bucket := s.Bucket(limiter.TokenBucket, "k")
	const n, step = 20, 1200 * time.Millisecond // 24 s
	if err := c.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := s.Decide(ctx, limiter.Request{Key: "k", Rule: rule}); err != nil {
			t.Fatal(err)
		}
		st, err := c.HGet(ctx, bucket, "k").Bytes()
		if err != nil {
			t.Fatal(err)
		}
		exp := time.Unix(int64(binary.LittleEndian.Uint32(st[len(st)-4:])), 0) // the field's expiry
		left := exp.Sub(clock.Now())
		ttl := c.PTTL(ctx, bucket).Val()
		if ttl < left-50*time.Millisecond || ttl > left+redisstore.BucketTTLGrid {
			t.Errorf("decision %d: bucket TTL %v, want from the field's %v to %v more", i, ttl, left, redisstore.BucketTTLGrid)
		}
		clock.Add(step)
	}
	calls, _ := testenv.CommandStat(t, c, "pexpire")
	// one at the bucket's creation, then one per grid at most
	if most := 1 + int(time.Duration(n)*step/redisstore.BucketTTLGrid) + 1; calls > most {
		t.Errorf("%d PEXPIRE in %d decisions %v apart, want at most %d", calls, n, step, most)
	}
}

// TestExpiredFieldReadsFresh: a field whose expiry has passed, still in
// its bucket (the bucket lives on to its grid step, or for a field that
// is not the bucket's latest), reads as a fresh state, as the in-memory
// store forgets a key once its TTL passes: after the multiplier went up,
// a key last seen at a low one gets the new full admission bucket, not
// its old level refilled since, for every algorithm kept in a field.
func TestExpiredFieldReadsFresh(t *testing.T) {
	c := testenv.StartRedis(t).Client()
	ctx := context.Background()
	for _, alg := range limiter.Algorithms() {
		if alg == limiter.SlidingWindowLog {
			continue // two sorted sets with TTLs of their own, no field
		}
		clock := fakeclock.New(t0)
		s := redisstore.New(c, limiter.WithPrefix("fresh:"), limiter.WithClock(clock.Now))
		mem := limiter.NewMemory(limiter.WithClock(clock.Now))
		rule := limiter.Rule{Name: "r", Algorithm: alg, Limit: 10, Period: time.Second, Burst: 100}
		for _, step := range []struct {
			at time.Duration
			m  float64
		}{{0, 0.1}, {2500 * time.Millisecond, 0.9}, {2600 * time.Millisecond, 0.9}} {
			clock.Set(t0.Add(step.at))
			req := limiter.Request{Key: "k", Rule: rule, Multiplier: step.m}
			got, err := s.Decide(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := mem.Decide(ctx, req)
			if got.Reason != want.Reason || got.Remaining != want.Remaining {
				t.Errorf("%v at +%v, multiplier %v: redis %v remaining %d, memory %v remaining %d",
					alg, step.at, step.m, got.Reason, got.Remaining, want.Reason, want.Remaining)
			}
		}
	}
}
