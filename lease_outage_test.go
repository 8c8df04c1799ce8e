package throttled

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/testenv"
)

// TestLeaseRuleAdmitsLocalShareWhenRedisIsDown: one of 10 instances
// (fallback.instances: 10) with Redis killed, a rule of 20 per 3 s for one
// API key, a request every 50 ms for 3 s: with `lease: {size: 16}` it
// admits at most its local share, ceil(20/10) = 2 of burst and 2 per 3 s,
// as the same rule without lease does (not a share raised to a renewal's
// 1 + 16).
func TestLeaseRuleAdmitsLocalShareWhenRedisIsDown(t *testing.T) {
	r := testenv.StartRedis(t)
	src := func(lease string) string {
		head := testenv.ReadmeConfig[:strings.Index(testenv.ReadmeConfig, "tiers:")]
		return head + `fallback: { instances: 10 }
tiers:
  free: { rate: 1000000, period: 1s, burst: 1000000, priority: 1 }
default_tier: free
rules:
  - name: hot
    match: { path: / }
    key: header:X-API-Key
    limit: 20
    period: 3s
` + lease
	}
	plain := onRedis(t, r, src(""))
	leased := onRedis(t, r, src("    lease: { size: 16, ttl: 10s }\n"))
	r.Kill()
	start := time.Now()
	var admitted [2]int
	for i := range 60 {
		for j, s := range []*Instance{plain, leased} {
			req := httptest.NewRequest("GET", "/", nil)
			req.Header.Set("X-API-Key", "k")
			res := s.enforcer.Check(context.Background(), req)
			if res.Err != nil || !res.Decision.Fallback {
				t.Fatalf("instance %d, request %d: %+v, %v: want a fallback decision", j, i, res.Decision, res.Err)
			}
			if res.Allowed {
				admitted[j]++
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	el := time.Since(start)
	// A token bucket of the local share admits at most burst + rate × el.
	bound := int(2 + 2*el.Seconds()/3)
	for j, name := range []string{"plain", "lease"} {
		if admitted[j] > bound || admitted[j] < 2 {
			t.Errorf("%s rule with Redis down: %d of 60 admitted in %v, want the local share, 2..%d", name, admitted[j], el, bound)
		}
	}
	t.Logf("admitted in %v: plain %d, lease %d", el, admitted[0], admitted[1])
}
