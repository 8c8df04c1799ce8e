package bulkhead

import (
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// fakeClock is a settable clock for Settings.Now / BreakerSettings.Now.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func newFakeClock() *fakeClock { return &fakeClock{t: t0} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// eventually waits, bounded, for cond to hold; the test fails if it never does.
// It synchronises with other goroutines; it asserts nothing about speed.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		runtime.Gosched()
		time.Sleep(100 * time.Microsecond)
	}
}

// help is each metric's HELP text, as the exposition format needs it.
var help = map[string]string{
	MetricBreakerState:     "Circuit breaker state: 0 closed, 1 half-open, 2 open.",
	MetricBulkheadInFlight: "Permits held now in a bulkhead.",
	MetricBulkheadRejected: "Calls refused by a full bulkhead (ErrFull) or shed by a gate (ErrShed).",
	MetricConcurrencyLimit: "Current limit on permits held at once in a bulkhead or gate.",
}

// expectMetric checks every series of one metric in g (testutil), given as
// name label → value; an empty want means the metric has no series.
func expectMetric(t testing.TB, g prometheus.Gatherer, metric string, want map[string]float64) {
	t.Helper()
	kind := "gauge"
	if strings.HasSuffix(metric, "_total") {
		kind = "counter"
	}
	var sb strings.Builder
	if len(want) > 0 {
		fmt.Fprintf(&sb, "# HELP %s %s\n# TYPE %s %s\n", metric, help[metric], metric, kind)
		names := make([]string, 0, len(want))
		for n := range want {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			fmt.Fprintf(&sb, "%s{name=%q} %g\n", metric, n, want[n])
		}
	}
	if err := testutil.GatherAndCompare(g, strings.NewReader(sb.String()), metric); err != nil {
		t.Errorf("%s: %v", metric, err)
	}
}

func mustMetrics(t testing.TB) (*Metrics, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	return m, reg
}

func mustNew(t testing.TB, name string, s Settings, m *Metrics) *Bulkhead {
	t.Helper()
	b, err := New(name, s, m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
