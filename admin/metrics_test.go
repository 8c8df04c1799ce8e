package admin

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestMetrics(t *testing.T) {
	f := newFixture(t)
	f.do("GET", "/v1/tiers", "", nil)
	f.do("GET", "/v1/tiers", readTok, nil)
	f.do("GET", "/v1/tiers", readTok, nil)
	f.do("PUT", "/v1/tiers/free", readTok, `{}`)
	f.do("GET", "/v1/nope", readTok, nil)
	want := `
# HELP throttled_admin_requests_total Admin API requests by HTTP status code.
# TYPE throttled_admin_requests_total counter
throttled_admin_requests_total{code="200"} 2
throttled_admin_requests_total{code="401"} 1
throttled_admin_requests_total{code="403"} 1
throttled_admin_requests_total{code="404"} 1
`
	if err := testutil.GatherAndCompare(f.reg, strings.NewReader(want), MetricRequests); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(f.reg, MetricWriteConflicts); n != 1 {
		t.Fatalf("%s: %d series", MetricWriteConflicts, n)
	}
	// One registry per Server: a second one is a clear error.
	if _, err := New(t.Context(), Settings{Tokens: testTokens(), Registerer: f.reg}); err == nil || !strings.Contains(err.Error(), "already registered") {
		t.Fatalf("second registration: %v", err)
	}
	if _, err := New(t.Context(), Settings{Tokens: testTokens(), Registerer: prometheus.NewRegistry()}); err != nil {
		t.Fatal(err)
	}
}
