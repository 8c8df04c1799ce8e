package throttled

import (
	"context"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/testenv"
)

// leaseConfig is the README's configuration with one rule, "hot", per API
// key at limit/s with burst, and lease (a YAML line, or ""). The fallback
// waits 5 s for Redis, so that no decision of a slow test run is local.
func leaseConfig(limit, burst int, lease string) string {
	head := testenv.ReadmeConfig[:strings.Index(testenv.ReadmeConfig, "tiers:")]
	return head + `fallback: { deadline: 5s }
tiers:
  free: { rate: 1000000, period: 1s, burst: 1000000, priority: 1 }
default_tier: free
rules:
  - name: hot
    match: { path: / }
    key: header:X-API-Key
    limit: ` + strconv.Itoa(limit) + `
    period: 1s
    burst: ` + strconv.Itoa(burst) + "\n" + lease
}

// admit reports whether s admits one request of API key k.
func admit(t *testing.T, s *Instance, k string) bool {
	t.Helper()
	req := httptest.NewRequest("GET", "/", nil)
	req.Header.Set("X-API-Key", k)
	res := s.enforcer.Check(context.Background(), req)
	if res.Err != nil || res.Decision.Fallback {
		t.Errorf("decision %+v (%v): want one of the shared store", res.Decision, res.Err) // Error: called from goroutines
		return false
	}
	return res.Allowed
}

// TestLeaseRuleDecidesLocally: a rule with `lease: {size: 20}` decides 200
// requests of one key with about one script call per 21 (the first
// decision is exact, then each lease takes 1 + 20 tokens); the same rule
// without lease makes one call per request.
func TestLeaseRuleDecidesLocally(t *testing.T) {
	r := testenv.StartRedis(t)
	c := r.Client()
	for _, tc := range []struct {
		lease    string
		min, max int
	}{
		{"    lease: { size: 20, ttl: 10s }\n", 1, 200/21 + 2},
		{"", 200, 200},
	} {
		s := onRedis(t, r, leaseConfig(1000, 1000, tc.lease))
		if err := c.ConfigResetStat(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
		for i := range 200 {
			if !admit(t, s, "k"+tc.lease) {
				t.Fatalf("lease %q: request %d refused under a quota of 1000", tc.lease, i)
			}
		}
		if n := testenv.EvalshaCalls(t, c); n < tc.min || n > tc.max {
			t.Errorf("lease %q: %d script calls for 200 decisions, want %d..%d", tc.lease, n, tc.min, tc.max)
		}
	}
}

// TestLeaseBoundAcrossInstances: two instances on one Redis, rule 20/s
// with burst 40 and leases of 10. Each leases 10 tokens, then the bucket
// refills; from then on the two admit the full bucket plus the 2 × 10
// tokens they hold, and never more than burst + rate × elapsed + N × size.
func TestLeaseBoundAcrossInstances(t *testing.T) {
	const rate, burst, size = 20, 40, 10
	r := testenv.StartRedis(t)
	src := leaseConfig(rate, burst, "    lease: { size: 10, ttl: 30s }\n")
	inst := []*Instance{onRedis(t, r, src), onRedis(t, r, src)}
	for _, s := range inst { // exact (the key becomes hot), then a lease of 1 + 10
		for range 2 {
			if !admit(t, s, "k") {
				t.Fatal("refused while warming up")
			}
		}
	}
	time.Sleep(2 * time.Second) // 24 tokens spent at 20/s: full again after 1.2 s
	start := time.Now()
	var mu sync.Mutex
	admitted := 0
	var wg sync.WaitGroup
	for _, s := range inst {
		for range 4 {
			wg.Go(func() {
				for range 40 {
					if admit(t, s, "k") {
						mu.Lock()
						admitted++
						mu.Unlock()
					}
				}
			})
		}
	}
	wg.Wait()
	el := time.Since(start).Seconds()
	bound := burst + rate*el + 2*size
	t.Logf("%d admitted in %.2fs: bound burst + rate × %.2fs + 2 × size = %.1f", admitted, el, el, bound)
	if float64(admitted) > bound {
		t.Errorf("%d admitted in %.2fs, over the bound %.1f", admitted, el, bound)
	}
	if admitted < burst+2*size {
		t.Errorf("%d admitted, want at least the full bucket and both leases, %d", admitted, burst+2*size)
	}
}
