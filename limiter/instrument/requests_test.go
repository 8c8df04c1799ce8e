package instrument_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/throttledhq/throttled/limiter/instrument"
)

// TestRequestsCount: one increment per Count, by tier (none for ""),
// status code and reason, and no allocation for a label set seen before.
func TestRequestsCount(t *testing.T) {
	reg := prometheus.NewRegistry()
	r, err := instrument.NewRequests(reg)
	if err != nil {
		t.Fatal(err)
	}
	r.Count("free", 200, instrument.ReasonAdmitted)
	r.Count("free", 200, instrument.ReasonAdmitted)
	r.Count("free", 503, instrument.ReasonTierCap)
	r.Count("", 400, instrument.ReasonInvalid)
	// 101 calls: AllocsPerRun warms up once.
	if n := testing.AllocsPerRun(100, func() { r.Count("free", 200, instrument.ReasonAdmitted) }); n != 0 {
		t.Errorf("Count of a label set seen before allocates %v times", n)
	}
	want := `
# HELP throttled_requests_total Requests (and gateway checks), each counted once with the answer its client got: by tier, HTTP status code and reason (admitted, fallback, over_quota, shed, tier_cap, concurrency, bulkhead, breaker_open, upstream_error, client_gone, invalid, store_error; dry_run_* when a dry run let it pass).
# TYPE throttled_requests_total counter
throttled_requests_total{code="200",reason="admitted",tier="free"} 103
throttled_requests_total{code="400",reason="invalid",tier="none"} 1
throttled_requests_total{code="503",reason="tier_cap",tier="free"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), instrument.RequestsMetric); err != nil {
		t.Error(err)
	}
}
