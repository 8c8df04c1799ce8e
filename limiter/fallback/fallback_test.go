package fallback_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/bulkhead"
	"github.com/throttledhq/throttled/internal/fakeclock"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/fallback"
	"github.com/throttledhq/throttled/limiter/instrument"
	"github.com/throttledhq/throttled/limiter/redisstore"
)

// fbDeadline is the per-decision deadline of the breakers in these tests
// (bulkhead's default, stated here because the latency bound uses it).
const fbDeadline = 50 * time.Millisecond

// fbBreaker is a real circuit breaker with a short open period, so tests see
// it half-open quickly.
func fbBreaker(t testing.TB, name string) *bulkhead.Breaker {
	b, err := bulkhead.NewBreaker(name, bulkhead.BreakerSettings{
		ConsecutiveFailures: 3, OpenTimeout: 200 * time.Millisecond, Deadline: fbDeadline,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newFallback(t testing.TB, shared limiter.Store, s fallback.Settings, reg prometheus.Registerer) *fallback.Store {
	t.Helper()
	f, err := fallback.New(shared, s, reg)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestFallbackSettingsErrors(t *testing.T) {
	shared := limiter.NewMemory()
	br := fbBreaker(t, "x")
	for _, tc := range []struct {
		s    fallback.Settings
		want string
	}{
		{fallback.Settings{Deadline: -1}, "Deadline"},
		{fallback.Settings{Guard: br, Deadline: time.Second}, "Deadline is set with a Guard"},
		{fallback.Settings{Instances: -2}, "Instances -2"},
		{fallback.Settings{Instances: 2, Counter: fbCount(3)}, "Instances or Counter"},
		{fallback.Settings{DenyRetryAfter: -time.Second}, "DenyRetryAfter"},
	} {
		_, err := fallback.New(shared, tc.s, nil)
		if !errors.Is(err, fallback.ErrBadConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want ErrBadConfig naming %q", tc.s, err, tc.want)
		}
	}
	if _, err := fallback.New(nil, fallback.Settings{}, nil); !errors.Is(err, fallback.ErrBadConfig) {
		t.Errorf("nil store: err = %v, want ErrBadConfig", err)
	}
	// A client that ignores deadlines would stall on a paused Redis.
	for _, c := range []redis.UniversalClient{
		redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}),
		redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}}),
	} {
		_, err := fallback.New(redisstore.New(c), fallback.Settings{}, nil)
		if !errors.Is(err, fallback.ErrBadConfig) || !strings.Contains(err.Error(), "ContextTimeoutEnabled") {
			t.Errorf("%T without ContextTimeoutEnabled: err = %v, want ErrBadConfig naming it", c, err)
		}
		_ = c.Close()
	}
	reg := prometheus.NewRegistry()
	newFallback(t, shared, fallback.Settings{}, reg)
	if _, err := fallback.New(shared, fallback.Settings{}, reg); err == nil ||
		!strings.Contains(err.Error(), "throttled_fallback_active") {
		t.Errorf("second gauge on one registry: err = %v, want a registration error", err)
	}
}

func TestFallbackLocalRule(t *testing.T) {
	for _, tc := range []struct {
		rule  limiter.Rule
		n     int
		cost  int64
		limit int64
		burst int64
	}{
		{limiter.Rule{Limit: 30, Burst: 30}, 3, 1, 10, 10},
		{limiter.Rule{Limit: 10, Burst: 20}, 3, 1, 4, 7},                                  // rounded up
		{limiter.Rule{Limit: 10}, 4, 1, 3, 3},                                             // Burst 0 means Limit
		{limiter.Rule{Limit: 2, Burst: 2}, 5, 1, 1, 1},                                    // at least 1
		{limiter.Rule{Limit: 100, Burst: 100}, 50, 5, 5, 5},                               // at least cost
		{limiter.Rule{Limit: 7, Burst: 9}, 0, 1, 7, 9},                                    // n < 1 is 1
		{limiter.Rule{Algorithm: limiter.FixedWindow, Limit: 10, Burst: 99}, 3, 1, 4, 99}, // windows ignore Burst
		{limiter.Rule{Algorithm: limiter.SlidingWindowLog, Limit: 10}, 4, 6, 6, 0},
	} {
		got := fallback.LocalRule(tc.rule, tc.n, tc.cost)
		if got.Limit != tc.limit || got.Burst != tc.burst {
			t.Errorf("LocalRule(%+v, %d, %d) = limit %d burst %d, want %d %d",
				tc.rule, tc.n, tc.cost, got.Limit, got.Burst, tc.limit, tc.burst)
		}
	}
}

// With the shared store down, each policy decides at fixed instants on the
// fallback's clock.
func TestFallbackPolicies(t *testing.T) {
	c := testenv.DeadRedis(t)
	clock := fakeclock.New(t0)
	reg := prometheus.NewRegistry()
	m, err := instrument.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	f := newFallback(t, fbStore(c), fallback.Settings{Instances: 2, Now: clock.Now, Errors: m}, reg)
	fbActive(t, reg, 0)
	// Limit 4/s, burst 4 on 2 instances: a local share of 2/s, burst 2.
	rule := limiter.Rule{Name: "r", Limit: 4, Period: time.Second, Burst: 4}
	allow, deny := rule, rule
	allow.Fallback, deny.Fallback = limiter.FallbackAllow, limiter.FallbackDeny
	ms := time.Millisecond
	for i, tc := range []struct {
		at     time.Duration
		rule   limiter.Rule
		reason limiter.Reason
		remain int64
		limit  int64
		retry  time.Duration
	}{
		{0, rule, limiter.Allowed, 1, 2, 0},
		{0, rule, limiter.Allowed, 0, 2, 0},
		{0, rule, limiter.OverQuota, 0, 2, 500 * ms},
		{250 * ms, rule, limiter.OverQuota, 0, 2, 250 * ms},
		{500 * ms, rule, limiter.Allowed, 0, 2, 0},
		{500 * ms, allow, limiter.Allowed, 3, 4, 0}, // not counted: a full bucket less this cost
		{500 * ms, allow, limiter.Allowed, 3, 4, 0},
		{500 * ms, deny, limiter.Shed, 0, 4, time.Second},
		{1500 * ms, rule, limiter.Allowed, 1, 2, 0},
	} {
		clock.Set(t0.Add(tc.at))
		d, err := f.Decide(context.Background(), limiter.Request{Key: "k", Rule: tc.rule})
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if !d.Fallback || d.Reason != tc.reason || d.Allowed != (tc.reason == limiter.Allowed) ||
			d.Remaining != tc.remain || d.Limit != tc.limit || d.RetryAfter != tc.retry {
			t.Errorf("step %d (t0+%v, %s): got %+v, want fallback %s remaining %d limit %d retry %v",
				i, tc.at, tc.rule.Fallback, d, tc.reason, tc.remain, tc.limit, tc.retry)
		}
	}
	if !f.FallbackActive() {
		t.Error("FallbackActive() = false with the store down")
	}
	fbActive(t, reg, 1)
	// No guard: every decision tried the store and failed (as "timeout":
	// go-redis retries the dial until the deadline).
	if got := fbSum(t, reg, "throttled_store_errors_total"); got != 9 {
		t.Errorf("throttled_store_errors_total = %v, want 9", got)
	}
}

// fbSum adds up the counters of a metric family on reg.
func fbSum(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// fbActive checks the throttled_fallback_active gauge on reg.
func fbActive(t *testing.T, reg *prometheus.Registry, want int) {
	t.Helper()
	exp := fmt.Sprintf(`
# HELP throttled_fallback_active 1 while decisions come from the fallback path (the shared store failed or its breaker is open), else 0.
# TYPE throttled_fallback_active gauge
throttled_fallback_active %d
`, want)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(exp), "throttled_fallback_active"); err != nil {
		t.Error(err)
	}
}

// fbCount is a fixed InstanceCounter.
type fbCount int

func (n fbCount) Instances() int { return int(n) }

// A live store decides; the fallback stays out of it.
func TestFallbackSharedWhenHealthy(t *testing.T) {
	r := testenv.StartRedis(t)
	reg := prometheus.NewRegistry()
	f := newFallback(t, fbStore(r.DeadlineClient(0)), fallback.Settings{Guard: fbBreaker(t, "redis")}, reg)
	rule := limiter.Rule{Limit: 2, Period: time.Minute, Burst: 2, Fallback: limiter.FallbackAllow}
	want := []limiter.Reason{limiter.Allowed, limiter.Allowed, limiter.OverQuota}
	for i, w := range want {
		d, err := f.Decide(context.Background(), limiter.Request{Key: "k", Rule: rule})
		if err != nil || d.Fallback || d.Reason != w {
			t.Fatalf("decision %d: %+v, %v; want shared %s", i, d, err, w)
		}
	}
	if f.FallbackActive() {
		t.Error("fallback active with a healthy store")
	}
	fbActive(t, reg, 0)
}

// Invalid requests are errors, never fallback decisions, and never count
// against the shared store.
func TestFallbackInvalidIsAnError(t *testing.T) {
	c := testenv.DeadRedis(t)
	br := fbBreaker(t, "redis")
	f := newFallback(t, fbStore(c), fallback.Settings{Guard: br}, nil)
	ok := limiter.Rule{Limit: 5, Period: time.Second}
	for _, req := range []limiter.Request{
		{Key: "", Rule: ok},
		{Key: "k", Rule: limiter.Rule{Limit: 0, Period: time.Second}},
		{Key: "k", Rule: ok, Cost: 6},
		{Key: "k", Rule: limiter.Rule{Limit: 5, Period: time.Second, Fallback: 9}},
	} {
		for range 5 {
			d, err := f.Decide(context.Background(), req)
			if !errors.Is(err, limiter.ErrInvalid) || d.Fallback || d.Allowed {
				t.Fatalf("%+v: %+v, %v; want an ErrInvalid error", req, d, err)
			}
		}
	}
	if br.State() != bulkhead.StateClosed || f.FallbackActive() {
		t.Errorf("after invalid requests: breaker %s, fallback active %v; want closed, false", br.State(), f.FallbackActive())
	}
}

// A caller that gave up gets its context's error, not a decision.
func TestFallbackCallerCanceled(t *testing.T) {
	r := testenv.StartRedis(t)
	f := newFallback(t, fbStore(r.DeadlineClient(0)), fallback.Settings{Guard: fbBreaker(t, "redis")}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d, err := f.Decide(ctx, limiter.Request{Key: "k", Rule: limiter.Rule{Limit: 5, Period: time.Second}})
	if !errors.Is(err, context.Canceled) || d.Fallback {
		t.Errorf("canceled: %+v, %v; want context.Canceled", d, err)
	}
}

// With the local policy, N instances while Redis is down admit together at
// most n×ceil(burst/n) + n×ceil(limit/n)×t/period over t (see LocalRule):
// the rule's own bound plus less than one token per instance in burst and
// rate, far from n times the quota that a fallback with the full quota on
// each instance would allow.
func TestFallbackLocalShareAcrossInstances(t *testing.T) {
	const n, burst, limit = 3, 30, 30
	c := testenv.DeadRedis(t)
	rule := limiter.Rule{Name: "r", Limit: limit, Period: time.Second, Burst: burst}
	var fs [n]*fallback.Store
	for i := range fs {
		fs[i] = newFallback(t, fbStore(c), fallback.Settings{
			Guard: fbBreaker(t, fmt.Sprint("redis", i)), Instances: n}, nil)
	}
	var admitted, decided atomic.Int64
	var wg sync.WaitGroup
	begin := time.Now()
	for w := range 4 * n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20_000 && time.Since(begin) < 600*time.Millisecond; i++ {
				d, err := fs[w%n].Decide(context.Background(), limiter.Request{Key: "shared", Rule: rule})
				if err != nil || !d.Fallback {
					t.Errorf("instance %d: %+v, %v; want a fallback decision", w%n, d, err)
					return
				}
				decided.Add(1)
				if d.Allowed {
					admitted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(begin)
	share := int64((burst + n - 1) / n)
	bound := float64(n*share) + float64(n*((limit+n-1)/n))*elapsed.Seconds()
	got := admitted.Load()
	if float64(got) > bound || got < n*share {
		t.Errorf("admitted %d of %d over %v, want between %d (every burst share) and %.1f",
			got, decided.Load(), elapsed, n*share, bound)
	}
	t.Logf("admitted %d of %d over %v (bound %.1f; the full quota on each instance would allow %.1f)",
		got, decided.Load(), elapsed, bound, float64(n*burst)+float64(n*limit)*elapsed.Seconds())
}

// The guard adds no allocation to a shared decision; a detached call
// (CallTimeout) adds its goroutine, channel and timer; the local path (open
// breaker) costs one in-memory decision.
func BenchmarkFallbackDecide(b *testing.B) {
	r := testenv.StartRedis(b)
	c := r.DeadlineClient(0)
	req := limiter.Request{Key: "k", Rule: limiter.Rule{Limit: 1e9, Period: time.Second}}
	run := func(b *testing.B, s limiter.Store, wantFallback bool) {
		b.ReportAllocs()
		for b.Loop() {
			d, err := s.Decide(context.Background(), req)
			if err != nil || d.Fallback != wantFallback {
				b.Fatalf("%+v, %v", d, err)
			}
		}
	}
	b.Run("redis", func(b *testing.B) { run(b, fbStore(c), false) })
	b.Run("shared", func(b *testing.B) {
		run(b, newFallback(b, fbStore(c), fallback.Settings{Guard: fbBreaker(b, "shared")}, nil), false)
	})
	b.Run("shared-detached", func(b *testing.B) {
		run(b, newFallback(b, fbStore(c), fallback.Settings{Guard: fbBreaker(b, "detached"), CallTimeout: time.Second}, nil), false)
	})
	b.Run("local", func(b *testing.B) {
		br, err := bulkhead.NewBreaker("local", bulkhead.BreakerSettings{ConsecutiveFailures: 1, OpenTimeout: time.Hour}, nil)
		if err != nil {
			b.Fatal(err)
		}
		_ = br.Call(context.Background(), func(context.Context) error { return errors.New("trip") })
		run(b, newFallback(b, fbStore(c), fallback.Settings{Guard: br}, nil), true)
	})
}
