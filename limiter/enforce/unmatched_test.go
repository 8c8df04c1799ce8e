package enforce_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/enforce"
)

// TestUnmatchedTakeTheLowestPriority: a request that matches no rule
// (static files, health checks) is the lowest-priority tier's at the inner
// loop's gate and bulkheads, or the tier UnmatchedTier names; it used to
// take priority 0, the top, and evicted free waiters.
func TestUnmatchedTakeTheLowestPriority(t *testing.T) {
	tiers := []enforce.Tier{
		{Name: "premium", Limit: 100, Period: time.Second, Burst: 100, Priority: 0},
		{Name: "free", Limit: 10, Period: time.Second, Burst: 10, Priority: 2},
		{Name: "internal", Limit: 10, Period: time.Second, Burst: 10, Priority: 1},
	}
	rules := []enforce.Rule{{Name: "per-ip", Path: "/api/", Keys: []string{"ip"}}}
	for _, tc := range []struct {
		unmatched, wantTier string
		wantPriority        int
	}{
		{"", "free", 2},
		{"internal", "internal", 1},
	} {
		e, err := enforce.New(limiter.NewMemory(), enforce.Policy{Tiers: tiers, Rules: rules, UnmatchedTier: tc.unmatched,
			DefaultTier: "premium"}, enforce.Settings{})
		if err != nil {
			t.Fatal(err)
		}
		res := e.Check(context.Background(), httptest.NewRequest("GET", "/static/app.js", nil))
		if !res.Allowed || res.Limited || res.Tier != tc.wantTier || res.Priority != tc.wantPriority {
			t.Errorf("unmatched_tier %q: allowed %v limited %v, tier %q priority %d; want allowed, unlimited, %q at %d",
				tc.unmatched, res.Allowed, res.Limited, res.Tier, res.Priority, tc.wantTier, tc.wantPriority)
		}
	}
	_, err := enforce.New(limiter.NewMemory(), enforce.Policy{Tiers: tiers, Rules: rules, UnmatchedTier: "gold"}, enforce.Settings{})
	if err == nil || !strings.Contains(err.Error(), "unmatched_tier") {
		t.Fatalf("UnmatchedTier naming no tier: %v, want an error naming unmatched_tier", err)
	}
}
