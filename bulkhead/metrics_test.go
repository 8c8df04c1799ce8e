package bulkhead

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestNewMetricsTwiceOnOneRegistryShares(t *testing.T) {
	reg := prometheus.NewRegistry()
	m1, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := NewMetrics(reg)
	if err != nil {
		t.Fatalf("second NewMetrics on the same registry: %v", err)
	}
	a := mustNew(t, "a", Settings{Limit: 1}, m1)
	_ = mustNew(t, "b", Settings{Limit: 1}, m2)
	p, _ := a.TryAcquire()
	defer p.Release()
	expectMetric(t, reg, MetricBulkheadInFlight, map[string]float64{"a": 1, "b": 0})
	if _, err := New("a", Settings{}, m2); err == nil || !strings.Contains(err.Error(), `a bulkhead named "a" is already attached`) {
		t.Fatalf("same name through the second Metrics: err = %v", err)
	}
	if _, err := NewMetrics(nil); err == nil {
		t.Fatal("NewMetrics(nil): no error")
	}
	// Someone else's collector under one of our names is an error, not a panic.
	other := prometheus.NewRegistry()
	other.MustRegister(prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricBulkheadRejected, Help: "x"}, []string{"name"}))
	if _, err := NewMetrics(other); err == nil || !strings.HasPrefix(err.Error(), "bulkhead: registering metrics: ") {
		t.Fatalf("a clashing collector: err = %v", err)
	}
}

func TestBulkheadMetrics(t *testing.T) {
	m, reg := mustMetrics(t)
	b := mustNew(t, "free", Settings{Limit: 2}, m)
	expectMetric(t, reg, MetricBulkheadInFlight, map[string]float64{"free": 0})
	p1, _ := b.TryAcquire()
	p2, _ := b.Acquire(context.Background())
	expectMetric(t, reg, MetricBulkheadInFlight, map[string]float64{"free": 2})
	for range 3 {
		_, _ = b.TryAcquire()
	}
	_, _ = b.Acquire(context.Background())
	if got := testutil.ToFloat64(m.rejected.WithLabelValues("free")); got != 4 {
		t.Fatalf("%s{name=free} = %v, want 4", MetricBulkheadRejected, got)
	}
	expectMetric(t, reg, MetricBulkheadRejected, map[string]float64{"free": 4})
	p1.Release()
	p2.Release()
	p2.Release()
	expectMetric(t, reg, MetricBulkheadInFlight, map[string]float64{"free": 0})

	b.Close()
	expectMetric(t, reg, MetricBulkheadInFlight, nil)
	expectMetric(t, reg, MetricBulkheadRejected, nil)
	if _, err := New("free", Settings{}, m); err != nil {
		t.Fatalf("name reused after Close: %v", err)
	}
}

func TestBreakerStateMetric(t *testing.T) {
	m, reg := mustMetrics(t)
	b, err := NewBreaker("redis", BreakerSettings{ConsecutiveFailures: 1, OpenTimeout: time.Millisecond, Deadline: time.Hour}, m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewBreaker("redis", BreakerSettings{}, m); err == nil {
		t.Fatal("duplicate breaker name: no error")
	}
	expectMetric(t, reg, MetricBreakerState, map[string]float64{"redis": 0})
	_ = b.Call(context.Background(), fail)
	// Open (2) for 1 ms, then half-open (1): the scrape itself reads the
	// state, so it never shows a stale open.
	expectMetricIn(t, reg, "redis", 2, 1)
	eventually(t, "half_open", func() bool { return b.State() == StateHalfOpen })
	expectMetric(t, reg, MetricBreakerState, map[string]float64{"redis": 1})
	if err := b.Call(context.Background(), ok); err != nil {
		t.Fatal(err)
	}
	expectMetric(t, reg, MetricBreakerState, map[string]float64{"redis": 0})
	b.Close()
	expectMetric(t, reg, MetricBreakerState, nil)
}

// expectMetricIn checks the state gauge of name is one of want.
func expectMetricIn(t *testing.T, reg *prometheus.Registry, name string, want ...float64) {
	t.Helper()
	for _, w := range want {
		text := fmt.Sprintf("# HELP %[1]s %[2]s\n# TYPE %[1]s gauge\n%[1]s{name=%[3]q} %[4]g\n",
			MetricBreakerState, help[MetricBreakerState], name, w)
		if testutil.GatherAndCompare(reg, strings.NewReader(text), MetricBreakerState) == nil {
			return
		}
	}
	t.Errorf("%s{name=%q} not in %v", MetricBreakerState, name, want)
}

func TestSetGetOrCreateAndResize(t *testing.T) {
	m, reg := mustMetrics(t)
	s, err := NewSet(Settings{Limit: 3}, m)
	if err != nil {
		t.Fatal(err)
	}
	a1, _ := s.Get("route:/upload")
	a2, _ := s.Get("route:/upload")
	if a1 != a2 {
		t.Fatal("Get made a second bulkhead for the same name")
	}
	if err := s.Resize("tier:free", 7); err != nil {
		t.Fatal(err)
	}
	if err := s.Resize("tier:free", 0); err == nil || !strings.Contains(err.Error(), `"tier:free": limit must be at least 1`) {
		t.Fatalf("Resize to 0: %v", err)
	}
	if _, err := s.Get(""); err == nil {
		t.Fatal("Get(\"\"): no error")
	}
	want := []Stats{{Name: "route:/upload", Limit: 3}, {Name: "tier:free", Limit: 7}}
	if got := s.Stats(); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("Stats = %+v, want %+v", got, want)
	}
	expectMetric(t, reg, MetricBulkheadInFlight, map[string]float64{"route:/upload": 0, "tier:free": 0})
	if _, err := NewSet(Settings{Limit: -1}, m); err == nil {
		t.Fatal("NewSet with bad defaults: no error")
	}
	if _, err := NewBreakerSet(BreakerSettings{Deadline: -1}, m); err == nil {
		t.Fatal("NewBreakerSet with bad defaults: no error")
	}
}

func TestSetConcurrentGet(t *testing.T) {
	s, _ := NewSet(Settings{}, nil)
	got := make(chan *Bulkhead, 50)
	for range 50 {
		go func() { b, _ := s.Get("x"); got <- b }()
	}
	first := <-got
	for range 49 {
		if b := <-got; b != first {
			t.Fatal("concurrent Get made two bulkheads")
		}
	}
}
