package rls_test

import (
	"context"
	"testing"

	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/rls"
)

// TestHitsBeyondCapacityIsOverLimit: a descriptor asking for more hits
// than its bucket can ever hold (premium's per-key holds 5) is OVER_LIMIT,
// as the reference service answers; it was INVALID_ARGUMENT, an error,
// which Envoy admits by default. Nothing is spent.
func TestHitsBeyondCapacityIsOverLimit(t *testing.T) {
	c, _ := serve(t, testEnforcer(t, limiter.NewMemory()), rls.Settings{}, nil)
	pat := desc("rule", "per-key", "api_key", "pat")
	r, err := c.ShouldRateLimit(context.Background(), request(0, withHits(pat, 6)))
	if err != nil || r.GetOverallCode() != over || r.GetStatuses()[0].GetCode() != over {
		t.Fatalf("hits_addend 6 of 5: %v, %v; want OVER_LIMIT", r, err)
	}
	if r, err := c.ShouldRateLimit(context.Background(), request(0, pat)); err != nil ||
		r.GetStatuses()[0].GetLimitRemaining() != 4 {
		t.Fatalf("the next request: %v, %v; want remaining 4 (nothing spent before)", r, err)
	}
}

// TestExplicitZeroHitsSpendsNothing: a descriptor's hits_addend set to 0
// reads the bucket without spending (the proto's override rule, and the
// reference service's); unset, the rule's cost is spent.
func TestExplicitZeroHitsSpendsNothing(t *testing.T) {
	c, _ := serve(t, testEnforcer(t, limiter.NewMemory()), rls.Settings{}, nil)
	pat := desc("rule", "per-key", "api_key", "pat")
	for i := range 2 {
		r, err := c.ShouldRateLimit(context.Background(), request(0, withHits(pat, 0)))
		if err != nil || r.GetOverallCode() != ok || r.GetStatuses()[0].GetLimitRemaining() != 5 {
			t.Fatalf("peek %d: %v, %v; want OK with 5 remaining", i, r, err)
		}
	}
	if r, err := c.ShouldRateLimit(context.Background(), request(0, pat)); err != nil ||
		r.GetStatuses()[0].GetLimitRemaining() != 4 {
		t.Fatalf("hits_addend unset: %v, %v; want the rule's cost spent (4 remaining)", r, err)
	}
}
