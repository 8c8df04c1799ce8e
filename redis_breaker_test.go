package throttled

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/throttledhq/throttled/bulkhead"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
)

// TestConfigRedisBreaker: the store breaker's failure count and open time
// come from fallback.consecutive_failures and fallback.open_timeout.
func TestConfigRedisBreaker(t *testing.T) {
	r := testenv.StartRedis(t)
	src := testenv.ReadmeConfig + "fallback:\n  instances: 1\n  consecutive_failures: 2\n  open_timeout: 1m\n"
	s := onRedis(t, r, src)
	defer s.Close()
	r.Kill()
	req := limiter.Request{Key: "k", Rule: limiter.Rule{Name: "r", Limit: 10, Period: time.Second}}
	state := func() float64 {
		return gaugeOf(t, s.gather, bulkhead.MetricBreakerState, "redis")
	}
	for i := range 2 {
		if state() != float64(bulkhead.StateClosed) {
			t.Fatalf("breaker not closed after %d failures", i)
		}
		if _, err := s.store.Decide(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	if state() != float64(bulkhead.StateOpen) {
		t.Fatalf("breaker state %v after 2 failures, want open (consecutive_failures: 2)", state())
	}
}

// gaugeOf is the value of the gauge name{name=label} in reg.
func gaugeOf(t *testing.T, reg prometheus.Gatherer, name, label string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "name" && l.GetValue() == label {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("no %s{name=%q}", name, label)
	return 0
}
