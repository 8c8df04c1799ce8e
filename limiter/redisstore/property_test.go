package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/fakeclock"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/redisstore"
)

// effectiveBurst is the most an algorithm may admit at once (see the package
// doc): fixed and sliding-counter windows admit up to 2×Limit across a
// window boundary.
func effectiveBurst(r limiter.Rule) float64 {
	switch r.Algorithm {
	case limiter.FixedWindow, limiter.SlidingWindowCounter:
		return 2 * float64(r.Limit)
	case limiter.SlidingWindowLog:
		return float64(r.Limit)
	}
	return float64(r.Burst)
}

// hammer runs workers goroutines over the given stores ("instances") against
// one key for dur, and returns how many were admitted and the elapsed time.
func hammer(t *testing.T, stores []limiter.Store, rule limiter.Rule, workers int, dur time.Duration) (int64, time.Duration) {
	var admitted, calls atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	stop := start.Add(dur)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(s limiter.Store) {
			defer wg.Done()
			for i := 0; i < 1_000_000 && time.Now().Before(stop); i++ {
				dec, err := s.Decide(context.Background(), limiter.Request{Key: "hot", Rule: rule})
				if err != nil {
					t.Error(err)
					return
				}
				calls.Add(1)
				if dec.Allowed {
					admitted.Add(1)
				}
			}
		}(stores[w%len(stores)])
	}
	wg.Wait()
	elapsed := time.Since(start)
	t.Logf("%d calls, %d admitted in %v", calls.Load(), admitted.Load(), elapsed)
	return admitted.Load(), elapsed
}

// TestPropertyAdmittedWithinBound: over the whole run, admitted ≤ burst +
// rate × elapsed + 1, for every algorithm on every store, with many
// goroutines on several store clients. Demand far exceeds the rate, so the
// store must also admit a fair share (a store that refuses everything fails).
func TestPropertyAdmittedWithinBound(t *testing.T) {
	forEachInstances(t, func(t *testing.T, instances func(t *testing.T) []limiter.Store) {
		for _, alg := range limiter.Algorithms() {
			t.Run(alg.String(), func(t *testing.T) {
				t.Parallel() // separate keys; the bound holds at any throughput
				rule := limiter.Rule{Algorithm: alg, Limit: 20, Period: 200 * time.Millisecond, Burst: 10}
				admitted, elapsed := hammer(t, instances(t), rule, 16, 2*time.Second)
				rate := float64(rule.Limit) / rule.Period.Seconds()
				bound := effectiveBurst(rule) + rate*elapsed.Seconds() + 1
				if float64(admitted) > bound {
					t.Fatalf("admitted %d > bound %.1f (burst %.0f + %.0f/s × %v + 1)", admitted, bound, effectiveBurst(rule), rate, elapsed)
				}
				if floor := rate * elapsed.Seconds() / 2; float64(admitted) < floor {
					t.Fatalf("admitted %d < %.1f: the store refuses more than it should", admitted, floor)
				}
			})
		}
	})
}

// forEachInstances gives f a way to make several instances sharing state:
// several clients of one redis or cluster; for memory, one store (its state
// is per process by design).
func forEachInstances(t *testing.T, f func(t *testing.T, instances func(t *testing.T) []limiter.Store)) {
	t.Run("memory", func(t *testing.T) {
		f(t, func(t *testing.T) []limiter.Store { return []limiter.Store{limiter.NewMemory()} })
	})
	t.Run("redis", func(t *testing.T) {
		r := testenv.StartRedis(t)
		f(t, func(t *testing.T) []limiter.Store {
			prefix := limiter.WithPrefix(fmt.Sprintf("p%d:", storeSeq.Add(1)))
			var s []limiter.Store
			for i := 0; i < 4; i++ {
				s = append(s, redisstore.New(r.Client(), prefix))
			}
			return s
		})
	})
	t.Run("cluster", func(t *testing.T) {
		sp := newSpread(t, testenv.StartCluster(t))
		t.Cleanup(func() { sp.requireSpread(t) }) // after parallel subtests too
		f(t, func(t *testing.T) []limiter.Store {
			prefix := limiter.WithPrefix(fmt.Sprintf("p%d:", storeSeq.Add(1)))
			r := sp.renamer() // one truth: the same key for every instance
			var s []limiter.Store
			for i := 0; i < 4; i++ {
				s = append(s, spreadStore{redisstore.New(sp.cl.Client(t), prefix), r})
			}
			return s
		})
	})
}

// TestMemoryMatchesRedisRandom drives the memory store and a Redis store
// with the same random sequence of instants, costs and multipliers, and
// requires the same decision at every step.
func TestMemoryMatchesRedisRandom(t *testing.T) {
	r := testenv.StartRedis(t)
	rng := rand.New(rand.NewSource(1))
	for _, alg := range limiter.Algorithms() {
		t.Run(alg.String(), func(t *testing.T) {
			clock := fakeclock.New(t0)
			mem := limiter.NewMemory(limiter.WithClock(clock.Now))
			red := redisStore(r.Client(), t, clock.Now)
			rule := limiter.Rule{Algorithm: alg, Limit: 7, Period: 300 * time.Millisecond, Burst: 5}
			now := t0
			for i := 0; i < 400; i++ {
				now = now.Add(time.Duration(rng.Intn(60_000)) * time.Microsecond)
				clock.Set(now)
				req := limiter.Request{Key: "k", Rule: rule, Cost: 1 + rng.Int63n(3),
					Multiplier: []float64{1, 0.9, 0.5, 0.25, 0.05}[rng.Intn(5)], Refund: rng.Intn(8) == 0}
				a, err1 := mem.Decide(context.Background(), req)
				b, err2 := red.Decide(context.Background(), req)
				if err1 != nil || err2 != nil {
					t.Fatalf("step %d: %v / %v", i, err1, err2)
				}
				if a != b {
					t.Fatalf("step %d at +%v %+v:\n memory %+v\n redis  %+v", i, now.Sub(t0), req, a, b)
				}
			}
		})
	}
}

// plainBucket is the plain token bucket of shared/bench/plain-token-bucket.lua
// in Go (µs instead of ms): the reference that multiplier 1 must equal.
type plainBucket struct {
	tokens, ts float64
	init       bool
}

func (p *plainBucket) allow(now, rate, burst, cost float64) (bool, int64) {
	if !p.init {
		p.tokens, p.ts, p.init = burst, now, true
	}
	el := now - p.ts
	if el < 0 {
		el = 0
	}
	p.tokens = min(burst, p.tokens+el*rate)
	p.ts = now
	if p.tokens >= cost {
		p.tokens -= cost
		return true, int64(p.tokens)
	}
	return false, int64(p.tokens)
}

func TestMultiplierOneIsPlainTokenBucket(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	clock := fakeclock.New(t0)
	s := limiter.NewMemory(limiter.WithClock(clock.Now))
	rule := limiter.Rule{Limit: 10, Period: time.Second, Burst: 8}
	var ref plainBucket
	now := t0
	for i := 0; i < 5000; i++ {
		now = now.Add(time.Duration(rng.Intn(150_000)) * time.Microsecond)
		clock.Set(now)
		cost := 1 + rng.Int63n(4)
		got, err := s.Decide(context.Background(), limiter.Request{Key: "k", Rule: rule, Cost: cost, Multiplier: 1})
		if err != nil {
			t.Fatal(err)
		}
		ok, rem := ref.allow(float64(now.UnixMicro()), 10.0/1e6, 8, float64(cost))
		if got.Allowed != ok || got.Remaining != rem {
			t.Fatalf("step %d: got allowed=%v remaining=%d, plain bucket %v %d", i, got.Allowed, got.Remaining, ok, rem)
		}
		if !ok && got.Reason != limiter.OverQuota {
			t.Fatalf("step %d: refused with %v, want over_quota at multiplier 1", i, got.Reason)
		}
	}
}

// TestNoShedAtMultiplierOne: whatever multipliers came before, at 1 a refusal
// is always over_quota, for every algorithm.
func TestNoShedAtMultiplierOne(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for _, alg := range limiter.Algorithms() {
		clock := fakeclock.New(t0)
		s := limiter.NewMemory(limiter.WithClock(clock.Now))
		rule := limiter.Rule{Algorithm: alg, Limit: 10, Period: time.Second, Burst: 8}
		now := t0
		for i := 0; i < 2000; i++ {
			now = now.Add(time.Duration(rng.Intn(80_000)) * time.Microsecond)
			clock.Set(now)
			m := 1.0
			if i < 1000 {
				m = []float64{0.2, 0.5, 0.9}[rng.Intn(3)]
			}
			d, err := s.Decide(context.Background(), limiter.Request{Key: "k", Rule: rule, Multiplier: m})
			if err != nil {
				t.Fatal(err)
			}
			if m == 1 && d.Reason == limiter.Shed {
				t.Fatalf("%v step %d: shed at multiplier 1", alg, i)
			}
		}
	}
}

// TestScriptFlush: after SCRIPT FLUSH the next decision still succeeds
// (EVALSHA → NOSCRIPT → EVAL) and the key's state carries on.
func TestScriptFlush(t *testing.T) {
	r := testenv.StartRedis(t)
	c := r.Client()
	s := redisstore.New(c)
	rule := limiter.Rule{Limit: 100, Period: time.Hour, Burst: 100}
	for _, alg := range limiter.Algorithms() {
		rule.Algorithm = alg
		req := limiter.Request{Key: "flush", Rule: rule}
		d1, err := s.Decide(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.ScriptFlush(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
		d2, err := s.Decide(context.Background(), req)
		if err != nil {
			t.Fatalf("%v: decision after SCRIPT FLUSH: %v", alg, err)
		}
		if d1.Remaining != 99 || d2.Remaining != 98 {
			t.Fatalf("%v: remaining %d then %d, want 99 then 98", alg, d1.Remaining, d2.Remaining)
		}
	}
}

// hashTag is the part of key that Redis Cluster hashes: the text between the
// first '{' and the next '}', when not empty.
func hashTag(key string) string {
	i := strings.IndexByte(key, '{')
	if i < 0 {
		return key
	}
	j := strings.IndexByte(key[i+1:], '}')
	if j <= 0 {
		return key
	}
	return key[i+1 : i+1+j]
}

// offered sends one request every gap from t0 for dur at multiplier m and
// counts the decisions by reason, skipping those in the first skip.
func offered(t *testing.T, s limiter.Store, clock *fakeclock.Clock, key string, rule limiter.Rule,
	m float64, gap, skip, dur time.Duration) (n [limiter.NumReasons]int) {
	for at := time.Duration(0); at < dur; at += gap {
		clock.Set(t0.Add(at))
		d, err := s.Decide(context.Background(), limiter.Request{Key: key, Rule: rule, Multiplier: m})
		if err != nil {
			t.Fatal(err)
		}
		if at >= skip {
			n[d.Reason]++
		}
	}
	return n
}

// TestOverQuotaWhateverTheMultiplier: a shed request spends quota but not
// admission, so at m = 0.5 a key sending 3× its quota gets mostly 429 after
// its burst (shed only about what passes its quota beyond base × m), while a
// key sending 0.8× its quota is never 429'd, only shed by the multiplier.
func TestOverQuotaWhateverTheMultiplier(t *testing.T) {
	const m, dur, skip = 0.5, 10 * time.Second, time.Second
	forEachStore(t, func(t *testing.T, newStore storeFactory) {
		for _, alg := range limiter.Algorithms() {
			t.Run(alg.String(), func(t *testing.T) {
				rule := limiter.Rule{Algorithm: alg, Limit: 10, Period: time.Second, Burst: 10}
				clock := fakeclock.New(t0)
				s := newStore(t, clock.Now)
				// 30/s: after the first second's burst, 20/s over quota,
				// 10/s pass the quota, of which 5/s are admitted.
				g := offered(t, s, clock, "greedy", rule, m, time.Second/30, skip, dur)
				sent := float64(g[limiter.Allowed] + g[limiter.OverQuota] + g[limiter.Shed])
				if float64(g[limiter.OverQuota]) < 0.6*sent {
					t.Errorf("greedy key at 3× quota: %v over_quota of %.0f sent, want ≥ 60%%", g[limiter.OverQuota], sent)
				}
				if maxShed := (1-m)*10*(dur-skip).Seconds() + 10; float64(g[limiter.Shed]) > maxShed {
					t.Errorf("greedy key: %d shed, want ≤ %.0f (quota beyond base × m)", g[limiter.Shed], maxShed)
				}
				clock.Set(t0)
				md := offered(t, s, clock, "modest", rule, m, time.Second/8, 0, dur)
				if md[limiter.OverQuota] != 0 || md[limiter.Shed] == 0 || md[limiter.Allowed] == 0 {
					t.Errorf("modest key at 0.8× quota: %v (allowed, over_quota, shed), want no over_quota, some allowed and shed", md)
				}
			})
		}
	})
}

// TestPropertyExtremeRules: for rules at the edges of what Validate accepts
// and any multiplier, ResetAfter and RetryAfter are never negative and never
// overflow a Duration, on every store and algorithm.
func TestPropertyExtremeRules(t *testing.T) {
	const year = 366 * 24 * time.Hour
	rules := []limiter.Rule{
		{Limit: 1e12, Period: time.Millisecond, Burst: 1e12},
		{Limit: 1, Period: year},
		{Limit: 1, Period: year, Burst: 100},
		{Limit: 1e12, Period: year, Burst: 1e12},
		{Limit: 3, Period: time.Millisecond, Burst: 1e9},
		{Limit: 40, Period: 24 * time.Hour, Burst: 1e6}, // refills in 68 years
	}
	// A burst that takes longer to refill than a Duration can say is refused.
	if err := (limiter.Rule{Limit: 1, Period: 24 * time.Hour, Burst: 1e6}).Validate(); !errors.Is(err, limiter.ErrInvalid) {
		t.Fatalf("a burst refilling in 2,738 years: %v, want ErrInvalid", err)
	}
	limitOf := func(r limiter.Rule) time.Duration { // the longest figure a rule may report
		return max(2*r.Period, time.Duration(float64(r.Capacity())*float64(r.Period)/float64(r.Limit)))
	}
	forEachStore(t, func(t *testing.T, newStore storeFactory) {
		clock := fakeclock.New(t0)
		s := newStore(t, clock.Now)
		for i, base := range rules {
			for _, alg := range limiter.Algorithms() {
				rule := base
				rule.Algorithm = alg
				if alg == limiter.SlidingWindowLog {
					rule.Limit = min(rule.Limit, limiter.MaxLogLimit)
				}
				if err := rule.Validate(); err != nil {
					t.Fatalf("rule %d: %v", i, err)
				}
				for j, m := range []float64{1, 0.5, 1e-6, 1e-300, 5e-324, 1e6, 1e300} {
					key := fmt.Sprintf("x%d:%v:%d", i, alg, j)
					for k, st := range []struct {
						at   time.Duration
						cost int64
					}{{0, 1}, {0, rule.Capacity()}, {time.Microsecond, 1}, {rule.Period / 2, 1}} {
						clock.Set(t0.Add(st.at))
						d, err := s.Decide(context.Background(), limiter.Request{Key: key, Rule: rule, Cost: st.cost, Multiplier: m})
						if err != nil {
							t.Fatalf("rule %d %v m %v step %d: %v", i, alg, m, k, err)
						}
						if d.ResetAfter < 0 || d.RetryAfter < 0 || d.ResetAfter > limitOf(rule) || d.RetryAfter > limiter.MaxWait {
							t.Errorf("rule %d %+v m %v step %d: %+v: negative or past %v", i, rule, m, k, d, limitOf(rule))
						}
					}
				}
			}
		}
	})
}
