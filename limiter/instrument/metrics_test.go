package instrument_test

import (
	"context"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/throttledhq/throttled/internal/fakeclock"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/instrument"
	"github.com/throttledhq/throttled/limiter/redisstore"
)

// t0 is aligned to a second, so 1 s windows start at t0.
var t0 = time.Unix(1_700_000_000, 0)

// TestMetricsStoreTimesAndCountsErrors: the store wrapper times every
// decision and counts errors by kind, every kind exported at 0 from the
// start; it counts no decision (the enforcer does, as clients saw them).
func TestMetricsStoreTimesAndCountsErrors(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := instrument.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	zero := `
# HELP throttled_store_errors_total Store errors by kind (timeout, canceled, invalid, redis).
# TYPE throttled_store_errors_total counter
throttled_store_errors_total{kind="canceled"} 0
throttled_store_errors_total{kind="invalid"} 0
throttled_store_errors_total{kind="redis"} 0
throttled_store_errors_total{kind="timeout"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(zero), "throttled_store_errors_total"); err != nil {
		t.Fatalf("before any error: %v", err)
	}
	clock := fakeclock.New(t0)
	s := instrument.Store(limiter.NewMemory(limiter.WithClock(clock.Now)), m, "memory")
	rule := limiter.Rule{Name: "per-key", Limit: 2, Period: time.Minute, Burst: 2}
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if _, err := s.Decide(ctx, limiter.Request{Key: "a", Rule: rule, Tier: "free"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Decide(ctx, limiter.Request{Key: "", Rule: rule}); err == nil {
		t.Fatal("empty key accepted")
	}
	want := strings.Replace(zero, `{kind="invalid"} 0`, `{kind="invalid"} 1`, 1)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "throttled_decisions_total", "throttled_store_errors_total"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(reg, "throttled_decision_duration_seconds"); n != 1 {
		t.Fatalf("latency series: %d, want 1", n)
	}
	// Registering twice on one registry is an error, not a panic.
	if _, err := instrument.NewMetrics(reg); err == nil {
		t.Fatal("second NewMetrics on one registry succeeded")
	}
}

// TestMetricsCount: the first store decision label of a tier and rule
// exports all six at 0; other labels (shadow, delayed, bulkhead) only
// their own series.
func TestMetricsCount(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := instrument.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.Count("free", "per-key", "allowed")
	m.Count("free", "per-key", "allowed")
	m.Count("free", "per-key", "over_quota")
	m.Count("free", "per-key", "shadow_over_quota")
	m.Count("free", "tier:free", instrument.DecisionBulkhead)
	m.Count("premium", "upstream:default", instrument.DecisionBreakerOpen)
	want := `
# HELP throttled_decisions_total Decisions as clients saw them, by tier, rule and decision: allowed, over_quota (429), shed (503), fallback_*, shadow_over_quota and shadow_shed (a shadow rule would have refused; the request passed), delayed (held, then admitted), bulkhead and breaker_open (503 after the rules admitted).
# TYPE throttled_decisions_total counter
throttled_decisions_total{decision="allowed",rule="per-key",tier="free"} 2
throttled_decisions_total{decision="breaker_open",rule="upstream:default",tier="premium"} 1
throttled_decisions_total{decision="bulkhead",rule="tier:free",tier="free"} 1
throttled_decisions_total{decision="fallback_allowed",rule="per-key",tier="free"} 0
throttled_decisions_total{decision="fallback_over_quota",rule="per-key",tier="free"} 0
throttled_decisions_total{decision="fallback_shed",rule="per-key",tier="free"} 0
throttled_decisions_total{decision="over_quota",rule="per-key",tier="free"} 1
throttled_decisions_total{decision="shadow_over_quota",rule="per-key",tier="free"} 1
throttled_decisions_total{decision="shed",rule="per-key",tier="free"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "throttled_decisions_total"); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkMetricsCount(b *testing.B) {
	m, err := instrument.NewMetrics(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	m.Count("free", "per-key", "allowed")
	b.ReportAllocs()
	for b.Loop() {
		m.Count("free", "per-key", "allowed")
	}
}

// BenchmarkMetricsStore is the timing and error counting around a
// decision of the in-memory store.
func BenchmarkMetricsStore(b *testing.B) {
	m, err := instrument.NewMetrics(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	s := instrument.Store(limiter.NewMemory(), m, "memory")
	req := limiter.Request{Key: "k", Rule: limiter.Rule{Name: "r", Limit: 1e9, Period: time.Second}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Decide(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}

// TestMetricsCountConcurrent: counts made at once from many goroutines,
// on label sets first seen while others count, all arrive.
func TestMetricsCountConcurrent(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := instrument.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	rules := []string{"a", "b", "c", "d"}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 100 {
				m.Count("free", rules[(g+i)%len(rules)], "allowed")
			}
		})
	}
	wg.Wait()
	got, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]float64{}
	for _, f := range got {
		for _, c := range f.Metric {
			if f.GetName() == "throttled_decisions_total" && c.Label[0].GetValue() == "allowed" {
				allowed[c.Label[1].GetValue()] = c.GetCounter().GetValue()
			}
		}
	}
	if want := map[string]float64{"a": 200, "b": 200, "c": 200, "d": 200}; !maps.Equal(allowed, want) {
		t.Errorf("allowed by rule %v, want %v", allowed, want)
	}
}

// BenchmarkMetricsCountParallel is Count from every core at once, as the
// handlers of concurrent requests call it.
func BenchmarkMetricsCountParallel(b *testing.B) {
	m, err := instrument.NewMetrics(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	m.Count("free", "per-key", "allowed")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.Count("free", "per-key", "allowed")
		}
	})
}

func TestMetricsCountRedisErrors(t *testing.T) {
	r := testenv.StartRedis(t)
	reg := prometheus.NewRegistry()
	m, err := instrument.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	s := instrument.Store(redisstore.New(r.Client()), m, "redis")
	r.Kill()
	rule := limiter.Rule{Limit: 1, Period: time.Second}
	if _, err := s.Decide(context.Background(), limiter.Request{Key: "k", Rule: rule}); err == nil {
		t.Fatal("decision succeeded with redis down")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	if _, err := s.Decide(ctx, limiter.Request{Key: "k", Rule: rule}); err == nil {
		t.Fatal("decision succeeded past its deadline")
	}
	want := `
# HELP throttled_store_errors_total Store errors by kind (timeout, canceled, invalid, redis).
# TYPE throttled_store_errors_total counter
throttled_store_errors_total{kind="canceled"} 0
throttled_store_errors_total{kind="invalid"} 0
throttled_store_errors_total{kind="redis"} 1
throttled_store_errors_total{kind="timeout"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "throttled_store_errors_total"); err != nil {
		t.Fatal(err)
	}
}
