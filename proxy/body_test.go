package proxy_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/enforce"
	"github.com/throttledhq/throttled/limiter/instrument"
	"github.com/throttledhq/throttled/limiter/pipeline"
	"github.com/throttledhq/throttled/proxy"
)

// TestBodyLimitCounted: every 413 is in throttled_requests_total once. A
// declared body over the bound is refused before a rule counts it (tier
// none, reason invalid); one that grows past it while streaming was
// admitted by the rules, and its 413 is the answer the client got.
func TestBodyLimitCounted(t *testing.T) {
	reg := prometheus.NewRegistry()
	reqs, err := instrument.NewRequests(reg)
	if err != nil {
		t.Fatal(err)
	}
	e, err := enforce.New(limiter.NewMemory(), enforce.Policy{Tiers: []enforce.Tier{{Name: "free", Limit: 10,
		Period: time.Second, Burst: 10}}}, enforce.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := pipeline.New(pipeline.Settings{Enforcer: e, Requests: reqs})
	if err != nil {
		t.Fatal(err)
	}
	px, err := proxy.New(proxy.Settings{Upstream: echoForwarded(t), Pipeline: p, MaxBodyBytes: 8,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	declared := httptest.NewRequest(http.MethodPost, "/", strings.NewReader("0123456789"))
	streamed := httptest.NewRequest(http.MethodPost, "/", io.NopCloser(strings.NewReader("0123456789")))
	streamed.ContentLength = -1
	for _, r := range []*http.Request{declared, streamed} {
		px.ServeHTTP(httptest.NewRecorder(), r)
	}
	want := `
# HELP throttled_requests_total ` + helpOf(t, reg) + `
# TYPE throttled_requests_total counter
throttled_requests_total{code="413",reason="admitted",tier="free"} 1
throttled_requests_total{code="413",reason="invalid",tier="none"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), instrument.RequestsMetric); err != nil {
		t.Error(err)
	}
}

// helpOf is the help text of the one metric gathered from reg.
func helpOf(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil || len(mfs) == 0 {
		t.Fatalf("gather: %v (%d families)", err, len(mfs))
	}
	return mfs[0].GetHelp()
}
