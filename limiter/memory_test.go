package limiter_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/fakeclock"
	"github.com/throttledhq/throttled/limiter"
)

// t0 is aligned to a second, so 1 s windows start at t0.
var t0 = time.Unix(1_700_000_000, 0)

// TestMemoryCap: a flood of 1,000,000 distinct keys never makes the store
// track more than its cap, and a key tracked before keeps its state.
func TestMemoryCap(t *testing.T) {
	const maxKeys = 10_000
	clock := fakeclock.New(t0) // time stands still: nothing expires
	s := limiter.NewMemory(limiter.WithClock(clock.Now), limiter.WithMaxKeys(maxKeys))
	rule := limiter.Rule{Limit: 10, Period: time.Minute, Burst: 10}
	ctx := context.Background()
	victim := limiter.Request{Key: "victim", Rule: rule, Cost: 7}
	if d, err := s.Decide(ctx, victim); err != nil || d.Remaining != 3 {
		t.Fatalf("victim: %+v %v", d, err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	maxSeen := 0
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			buf := make([]byte, 0, 16)
			for i := w; i < 1_000_000; i += 4 {
				buf = strconv.AppendInt(buf[:0], int64(i), 10)
				if _, err := s.Decide(ctx, limiter.Request{Key: string(buf), Rule: rule}); err != nil {
					t.Error(err)
					return
				}
				if i%50_000 == 0 {
					n := s.Len()
					mu.Lock()
					maxSeen = max(maxSeen, n)
					mu.Unlock()
				}
			}
		}(w)
	}
	wg.Wait()
	if n := s.Len(); n > maxKeys || maxSeen > maxKeys {
		t.Fatalf("tracked %d keys (max seen %d), cap %d", n, maxSeen, maxKeys)
	}
	if len(s.Overflows()) == 0 {
		t.Fatal("no decision went to overflow state, so the cap was never reached")
	}
	victim.Cost = 1
	d, err := s.Decide(ctx, victim)
	if err != nil || d.Remaining != 2 {
		t.Fatalf("victim after the flood: %+v %v, want remaining 2 (state kept)", d, err)
	}
}

// TestMemoryOverflowIsLimited: keys beyond the cap share one limited state
// rather than passing unlimited.
func TestMemoryOverflowIsLimited(t *testing.T) {
	clock := fakeclock.New(t0)
	s := limiter.NewMemory(limiter.WithClock(clock.Now), limiter.WithMaxKeys(1), limiter.WithShards(1))
	rule := limiter.Rule{Limit: 5, Period: time.Minute, Burst: 5}
	allowed := 0
	for i := 0; i < 100; i++ {
		d, err := s.Decide(context.Background(), limiter.Request{Key: fmt.Sprint("k", i), Rule: rule})
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed {
			allowed++
		}
	}
	// k0 is tracked (1 request, allowed); k1..k99 share the overflow
	// state, which admits its burst of 5.
	if allowed != 6 {
		t.Fatalf("allowed %d of 100 unique keys over cap 1, want 6", allowed)
	}
}

// TestMemoryOverflowPerRuleAndAlgorithm: past the cap, keys of each rule
// and algorithm share their own overflow state, so alternating algorithms
// cannot reset it, and the overflowed decisions are counted per rule.
func TestMemoryOverflowPerRuleAndAlgorithm(t *testing.T) {
	clock := fakeclock.New(t0)
	s := limiter.NewMemory(limiter.WithClock(clock.Now), limiter.WithMaxKeys(1), limiter.WithShards(1))
	rules := []limiter.Rule{
		{Name: "a", Algorithm: limiter.TokenBucket, Limit: 5, Period: time.Minute, Burst: 5},
		{Name: "b", Algorithm: limiter.FixedWindow, Limit: 5, Period: time.Minute},
		{Name: "b", Algorithm: limiter.TokenBucket, Limit: 5, Period: time.Minute, Burst: 5},
	}
	allowed := 0
	for i := 0; i < 999; i++ {
		d, err := s.Decide(context.Background(), limiter.Request{Key: fmt.Sprint("k", i), Rule: rules[i%3]})
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed {
			allowed++
		}
	}
	// k0 is tracked; the rest share three overflow states of 5 each.
	if allowed != 1+3*5 {
		t.Fatalf("allowed %d of 999 keys over cap 1 on three (rule, algorithm) pairs, want 16", allowed)
	}
	got := s.Overflows()
	if len(got) != 2 || got["a"] != 332 || got["b"] != 666 {
		t.Fatalf("overflows %v, want map[a:332 b:666]", got)
	}
}

// TestMemoryExpiresIdleKeys: once a key's TTL passes it is forgotten, so
// new keys are tracked again instead of overflowing.
func TestMemoryExpiresIdleKeys(t *testing.T) {
	clock := fakeclock.New(t0)
	s := limiter.NewMemory(limiter.WithClock(clock.Now), limiter.WithMaxKeys(64), limiter.WithShards(1))
	rule := limiter.Rule{Limit: 10, Period: time.Second, Burst: 10}
	decide := func(key string) limiter.Decision {
		d, err := s.Decide(context.Background(), limiter.Request{Key: key, Rule: rule})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	for i := 0; i < 64; i++ {
		decide(fmt.Sprint("a", i))
	}
	if s.Len() != 64 || len(s.Overflows()) != 0 {
		t.Fatalf("len %d overflows %v, want 64 and 0", s.Len(), s.Overflows())
	}
	// 100 ms spent, refilled in 100 ms, + 1 s TTL slack: fresh after 1.1 s.
	clock.Set(t0.Add(1100 * time.Millisecond))
	for i := 0; i < 64; i++ {
		if d := decide(fmt.Sprint("b", i)); d.Remaining != 9 {
			t.Fatalf("new key b%d: remaining %d, want 9 (own state)", i, d.Remaining)
		}
	}
	if len(s.Overflows()) != 0 || s.Len() > 64 {
		t.Fatalf("len %d overflows %v: expired keys were not reclaimed", s.Len(), s.Overflows())
	}
}

// BenchmarkSlidingLogFull: a key at the sliding log's cap, where each call
// drops one entry and adds one. The log is never copied on a call.
func BenchmarkSlidingLogFull(b *testing.B) {
	s := limiter.NewMemory()
	rule := limiter.Rule{Algorithm: limiter.SlidingWindowLog, Limit: limiter.MaxLogLimit, Period: 10 * time.Second}
	step := rule.Period / time.Duration(rule.Limit)
	now := t0
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		now = now.Add(step)
		if _, err := s.DecideAt(now, limiter.Request{Key: "k", Rule: rule}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMemoryDecide1000Keys: token-bucket decisions on the store's own
// clock for 1000 keys in turn, as the middleware makes them.
func BenchmarkMemoryDecide1000Keys(b *testing.B) {
	s := limiter.NewMemory()
	rule := limiter.Rule{Name: "per-key", Limit: 1e9, Period: time.Second}
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = fmt.Sprintf("per-key|free|%d:k%d", len(fmt.Sprint("k", i)), i)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if d, err := s.Decide(ctx, limiter.Request{Key: keys[i%len(keys)], Rule: rule}); err != nil || !d.Allowed {
			b.Fatal(d, err)
		}
	}
}

// TestMemoryKeyUnderTwoAlgorithms: one key decided under two algorithms
// keeps a state under each; exhausting one leaves the other full.
func TestMemoryKeyUnderTwoAlgorithms(t *testing.T) {
	m := limiter.NewMemory()
	tb := limiter.Rule{Name: "a", Limit: 2, Period: time.Minute}
	fw := limiter.Rule{Name: "a", Algorithm: limiter.FixedWindow, Limit: 2, Period: time.Minute}
	for i, st := range []struct {
		rule    limiter.Rule
		allowed bool
	}{{tb, true}, {tb, true}, {tb, false}, {fw, true}, {fw, true}, {fw, false}, {tb, false}} {
		d, err := m.DecideAt(t0, limiter.Request{Key: "k", Rule: st.rule})
		if err != nil || d.Allowed != st.allowed {
			t.Fatalf("step %d (%s): allowed %v, %v; want %v", i, st.rule.Algorithm, d.Allowed, err, st.allowed)
		}
	}
}

// TestDecideRequestAsDecide: DecideRequest decides as Decide does, on
// state of its own, request by request (every algorithm, a refusal, a
// refund), and refuses an invalid request as Decide does; it normalizes the
// request it is given in place.
func TestDecideRequestAsDecide(t *testing.T) {
	clock := func() time.Time { return t0 }
	byValue, byPointer := limiter.NewMemory(limiter.WithClock(clock)), limiter.NewMemory(limiter.WithClock(clock))
	ctx := context.Background()
	for _, alg := range limiter.Algorithms() {
		rule := limiter.Rule{Name: "r", Algorithm: alg, Limit: 3, Period: time.Second}
		for i := range 5 {
			req := limiter.Request{Key: "k|" + alg.String(), Rule: rule, Refund: i == 4}
			want, werr := byValue.Decide(ctx, req)
			got, gerr := byPointer.DecideRequest(ctx, &req)
			if got != want || gerr != werr {
				t.Fatalf("%v #%d: DecideRequest %+v, %v; Decide %+v, %v", alg, i, got, gerr, want, werr)
			}
			if req.Cost != 1 || req.Multiplier != 1 {
				t.Fatalf("%v #%d: the request after DecideRequest has cost %d, multiplier %v; want 1, 1", alg, i, req.Cost, req.Multiplier)
			}
		}
	}
	rule := limiter.Rule{Name: "r", Limit: 3, Period: time.Second}
	for _, req := range []limiter.Request{{Rule: rule}, {Key: "k", Rule: rule, Cost: 4}, {Key: "k", Rule: rule, Cost: -1}} {
		_, werr := byValue.Decide(ctx, req)
		if _, gerr := byPointer.DecideRequest(ctx, &req); gerr == nil || werr == nil || gerr.Error() != werr.Error() {
			t.Errorf("%+v: DecideRequest %v, Decide %v; want the same error", req, gerr, werr)
		}
	}
}
