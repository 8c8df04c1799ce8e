package instrument_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/throttledhq/throttled/internal/fakeclock"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/instrument"
)

// TestNearLimit: of 10 requests at one instant on a capacity of 5, the 4th
// and 5th leave 80 % and 100 % in use and are counted; the refused ones,
// the refund and the peek are not.
func TestNearLimit(t *testing.T) {
	reg := prometheus.NewRegistry()
	n, err := instrument.NewNearLimit(reg)
	if err != nil {
		t.Fatal(err)
	}
	clock := fakeclock.New(t0)
	s := n.Store(limiter.NewMemory(limiter.WithClock(clock.Now)))
	ctx := context.Background()
	rule := limiter.Rule{Name: "api", Limit: 5, Period: time.Minute}
	for i := range 10 {
		d, err := s.Decide(ctx, limiter.Request{Key: "k", Rule: rule, Tier: "free"})
		if err != nil || d.Allowed != (i < 5) {
			t.Fatalf("request %d: %+v %v", i, d, err)
		}
	}
	for _, req := range []limiter.Request{{Key: "k", Rule: rule, Tier: "free", Refund: true},
		{Key: "k", Rule: rule, Tier: "free", Peek: true}} {
		if _, err := s.Decide(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	window := limiter.Rule{Name: "day", Algorithm: limiter.FixedWindow, Limit: 10, Period: limiter.Day,
		Align: limiter.AlignCalendar}
	for range 8 {
		if _, err := s.Decide(ctx, limiter.Request{Key: "w", Rule: window, Tier: "free"}); err != nil {
			t.Fatal(err)
		}
	}
	want := `
# HELP throttled_near_limit_total Admitted decisions that left their key with at least 80% of its capacity in use, by tier and rule.
# TYPE throttled_near_limit_total counter
throttled_near_limit_total{rule="api",tier="free"} 2
throttled_near_limit_total{rule="day",tier="free"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "throttled_near_limit_total"); err != nil {
		t.Fatal(err)
	}
}
