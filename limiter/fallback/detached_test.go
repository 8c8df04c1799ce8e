package fallback_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/fallback"
)

var detachedRule = limiter.Rule{Name: "r", Limit: 1e9, Period: time.Second, Fallback: limiter.FallbackAllow}

// TestMaxDetachedCountsLateCallsOnly: MaxDetached bounds the calls running
// past their deadline, not the calls in flight: 16 callers on a healthy
// Redis with MaxDetached 2 are all decided by Redis, none falls back.
func TestMaxDetachedCountsLateCallsOnly(t *testing.T) {
	c := testenv.StartRedis(t).DeadlineClient(-1)
	f, err := fallback.New(fbStore(c), fallback.Settings{Deadline: 5 * time.Second, CallTimeout: 10 * time.Second,
		MaxDetached: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var fell atomic.Int64
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := range 50 {
				d, err := f.Decide(context.Background(), limiter.Request{Key: fmt.Sprint("k", w, ":", i), Rule: detachedRule})
				if err != nil {
					t.Error(err)
				}
				if d.Fallback {
					fell.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if n := fell.Load(); n != 0 {
		t.Errorf("%d of 800 decisions fell back on a healthy Redis with MaxDetached 2, want 0", n)
	}
}

// TestMaxDetachedBoundsLateCalls: with MaxDetached 2 and Redis stopped, two
// decisions fall back at their deadline (1 s) and leave their calls running;
// the next falls back at once, without calling.
func TestMaxDetachedBoundsLateCalls(t *testing.T) {
	r := testenv.StartRedis(t)
	c := r.DeadlineClient(-1)
	f, err := fallback.New(fbStore(c), fallback.Settings{Deadline: time.Second, CallTimeout: 30 * time.Second,
		MaxDetached: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := f.Decide(ctx, limiter.Request{Key: "warm", Rule: detachedRule}); err != nil {
		t.Fatal(err)
	}
	r.Pause()
	t.Cleanup(r.Resume)
	for i := range 2 {
		if d, err := f.Decide(ctx, limiter.Request{Key: fmt.Sprint("late", i), Rule: detachedRule}); err != nil || !d.Fallback {
			t.Fatalf("decision %d while Redis is stopped: fallback %v, %v; want a fallback", i, d.Fallback, err)
		}
	}
	start := time.Now()
	d, err := f.Decide(ctx, limiter.Request{Key: "busy", Rule: detachedRule})
	if took := time.Since(start); err != nil || !d.Fallback || took >= 500*time.Millisecond {
		t.Errorf("third decision: fallback %v, %v after %v; want a fallback at once (2 late calls running)",
			d.Fallback, err, took)
	}
}
