package throttled

import (
	"fmt"
	"math"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/throttledhq/throttled/config"
	"github.com/throttledhq/throttled/internal/testenv"
)

// TestRequestsCountedOnEveryFront: the Instance gives its one request
// counter to every front, the middleware, POST /v1/check and the rate limit
// service, which count each request or check once; a check that cannot be
// asked is counted as invalid. throttled_limit has each tier's limit in
// force.
func TestRequestsCountedOnEveryFront(t *testing.T) {
	cfg, err := config.Parse([]byte(fmt.Sprintf(unassignedConfig, testenv.WriteToken, "anonymous")), nil)
	if err != nil {
		t.Fatal(err)
	}
	s := run(t, cfg)
	middlewareTier(t, s, "k-premium")
	checkTier(t, s, "k-premium")
	rlsTier(t, s, "k-premium")
	w := httptest.NewRecorder()
	s.AdminHandler().ServeHTTP(w, httptest.NewRequest("POST", "/v1/check", strings.NewReader(`{"rule":`)))
	if w.Code != 400 {
		t.Fatalf("a broken check: %d %s", w.Code, w.Body)
	}
	got := gathered(t, s, "throttled_requests_total", "tier", "code", "reason")
	want := map[string]float64{"premium 204 admitted": 1, "premium 200 admitted": 2, "none 400 invalid": 1} // the handler answers 204
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("throttled_requests_total %v, want %v", got, want)
	}
	limits := gathered(t, s, "throttled_limit", "tier", "rule")
	for tier, perMinute := range map[string]float64{"premium": 100, "free": 10, "anon": 3} {
		if v := limits[tier+" per-client"]; math.Abs(v-perMinute/60) > 1e-9 {
			t.Errorf("throttled_limit{tier=%q,rule=\"per-client\"} %v, want %v (all: %v)", tier, v, perMinute/60, limits)
		}
	}
}

// gathered is metric's series on s's registry, by its label values
// joined with spaces.
func gathered(t *testing.T, s *Instance, metric string, labels ...string) map[string]float64 {
	t.Helper()
	mfs, err := s.gather.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != metric {
			continue
		}
		for _, m := range mf.GetMetric() {
			byName := map[string]string{}
			for _, lp := range m.GetLabel() {
				byName[lp.GetName()] = lp.GetValue()
			}
			vals := make([]string, len(labels))
			for i, l := range labels {
				vals[i] = byName[l]
			}
			v := m.GetCounter().GetValue() + m.GetGauge().GetValue()
			out[strings.Join(vals, " ")] = v
		}
	}
	return out
}
