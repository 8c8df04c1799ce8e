package dashboards

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/throttledhq/throttled/internal/testenv"
)

// TestLivePromQL runs every PromQL expression of the dashboards, the alert
// rules and the compose controller config against a real Prometheus that
// scrapes a running `throttled serve` proxy under free and premium load,
// and requires the key series to return data: once with the README's
// minimal config (in-memory store, in-process signals), once with a real
// Redis and bulkheads, which brings the breaker, fallback, bulkhead and
// multiplier-age series.
func TestLivePromQL(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		runLive(t, "", slices.Concat(keyChecks, []keyCheck{storeCheck("memory")}))
	})
	t.Run("redis", func(t *testing.T) {
		r := testenv.StartRedis(t)
		extra := fmt.Sprintf("redis:\n  url: %s\nbulkheads:\n  free: { limit: 4 }\n  premium: { limit: 64 }\n", r.URL())
		runLive(t, extra, slices.Concat(keyChecks, []keyCheck{storeCheck("redis")}, redisChecks))
	})
}

// runLive starts throttled with liveConfig+extra and Prometheus scraping
// it, drives traffic while it runs every query, and applies checks.
func runLive(t *testing.T, extra string, checks []keyCheck) {
	in := startThrottled(t, upstream(t).URL, extra)
	prom := testenv.StartPrometheusWith(t, testenv.PrometheusConfig{
		Targets: []string{in.adminAddr}, RuleFiles: []string{alertsFile}})
	assign(t, in, "free-a", "free")
	assign(t, in, "free-b", "free")
	assign(t, in, "premium-a", "premium")
	pin(t, in, "premium", 0.3)

	// free keys: 40 req/s each against a 10/s quota (429s); premium: 50/s,
	// inside its 100/s quota but over the 30/s its pinned multiplier of
	// 0.3 admits (503s). The upstream stays healthy, so the controller
	// leaves free alone and its refusals stay 429s.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var got codes
	var transport atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		drive(ctx, in.proxy, []client{{"free-a", 4}, {"free-b", 4}, {"premium-a", 5}}, 900, &got, &transport)
	}()
	defer func() { cancel(); <-done }()

	prom.WaitForSeries(t, `sum(rate(throttled_decisions_total{decision="over_quota"}[15s])) > 0`, 45*time.Second)
	prom.WaitForSeries(t, `count_over_time(throttled_controller_leader[1m]) >= 5`, 30*time.Second)

	api := prom.API()
	checkVariableValues(t, api, in.adminAddr)
	runAll(t, api)
	checkKeySeries(t, api, checks)
	checkRules(t, api)
	checkExported(t, api)

	cancel()
	<-done
	t.Logf("responses by code: %v; transport errors: %d", &got, transport.Load())
	for _, code := range []int{http.StatusOK, http.StatusTooManyRequests, http.StatusServiceUnavailable} {
		if got.get(code) == 0 {
			t.Errorf("no %d responses through the proxy (got %v):\n%s", code, &got, in.log())
		}
	}
}

// runAll runs every query; none may fail.
func runAll(t *testing.T, api v1.API) {
	t.Helper()
	var all []query
	all = append(all, dashboardQueries(t)...)
	all = append(all, ruleQueries(t)...)
	all = append(all, configQueries(t)...)
	for _, q := range all {
		v, err := instant(api, q.expr)
		if err != nil {
			t.Errorf("%s: %s\n  expr: %s", q.where, err, q.expr)
			continue
		}
		t.Logf("%s: %d series", q.where, len(v))
	}
}

var labelValues = regexp.MustCompile(`^label_values\((.+), (\w+)\)$`)

// checkVariableValues runs each dashboard's job and instance variable
// queries as Grafana would (the series API, $job set to the test job) and
// requires the scraped throttled among their values.
func checkVariableValues(t *testing.T, api v1.API, instance string) {
	t.Helper()
	want := map[string]string{"job": testenv.DefaultJob, "instance": instance}
	for _, d := range loadDashboards(t) {
		for name, value := range want {
			v := d.variable(name)
			if v == nil {
				t.Errorf("%s: no %s variable", d.file, name)
				continue
			}
			m := labelValues.FindStringSubmatch(v.queryText())
			if m == nil {
				t.Errorf("%s: variable %s: query %q is not label_values(selector, label)", d.file, name, v.queryText())
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			got, _, _, err := api.LabelValues(ctx, m[2], []string{grafanaMacros.Replace(m[1])}, time.Now().Add(-time.Hour), time.Now())
			cancel()
			if err != nil || !slices.Contains(got, model.LabelValue(value)) {
				t.Errorf("%s: variable %s: %s gives %v (err %v), want %q among them", d.file, name, v.queryText(), got, err, value)
			}
		}
	}
}

// upstream is the protected service: it answers 200.
func upstream(t *testing.T) *httptest.Server {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "upstream ok\n")
	}))
	t.Cleanup(up.Close)
	return up
}

// instant runs expr at the present moment and returns its vector (a
// scalar as a one-sample vector).
func instant(api v1.API, expr string) (model.Vector, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v, _, _, err := api.Query(ctx, expr, time.Now())
	if err != nil {
		return nil, err
	}
	switch v := v.(type) {
	case model.Vector:
		return v, nil
	case *model.Scalar:
		return model.Vector{{Value: v.Value, Timestamp: v.Timestamp}}, nil
	}
	return nil, fmt.Errorf("query returned a %s, want a vector or a scalar", v.Type())
}

// series finds the sample with all labels in want.
func series(v model.Vector, want model.LabelSet) (*model.Sample, bool) {
	for _, s := range v {
		match := true
		for k, val := range want {
			if s.Metric[k] != val {
				match = false
			}
		}
		if match {
			return s, true
		}
	}
	return nil, false
}

// keyCheck is a panel whose query must return data during the load, and
// what the data must hold.
type keyCheck struct {
	panel, refID string
	want         []model.LabelSet     // each must be present...
	ok           func(v float64) bool // ...with a value ok accepts
}

func positive(v float64) bool { return v > 0 && !math.IsInf(v, 0) }
func ratio(v float64) bool    { return v > 0 && v <= 1 }
func finite(v float64) bool   { return !math.IsNaN(v) && !math.IsInf(v, 0) }
func is(x float64) func(float64) bool {
	return func(v float64) bool { return v == x }
}

// keyChecks hold for every store.
var keyChecks = []keyCheck{
	{panel: "Decisions by tier and decision", refID: "A", ok: positive, want: []model.LabelSet{
		{"tier": "free", "decision": "allowed"}, {"tier": "free", "decision": "over_quota"},
		{"tier": "premium", "decision": "allowed"}, {"tier": "premium", "decision": "shed"}}},
	{panel: "Refused share by tier (429 vs 503)", refID: "A", ok: ratio, want: []model.LabelSet{{"tier": "free"}}},
	{panel: "Refused share by tier (429 vs 503)", refID: "B", ok: ratio, want: []model.LabelSet{{"tier": "premium"}}},
	{panel: "Refused share", refID: "A", ok: ratio, want: []model.LabelSet{{}}},
	{panel: "Refused share by reason", refID: "A", ok: ratio,
		want: []model.LabelSet{{"reason": "over_quota"}, {"reason": "shed"}}},
	{panel: "Upstream error share", refID: "A", ok: is(0), want: []model.LabelSet{{}}},
	{panel: "Requests/s", refID: "A", ok: positive, want: []model.LabelSet{{}}},
	{panel: "Multipliers in force by tier", refID: "A", ok: func(v float64) bool { return v > 0 && v <= 1 },
		want: []model.LabelSet{{"tier": "free"}, {"tier": "premium"}}},
	{panel: "Upstream latency against target", refID: "A", ok: positive, want: []model.LabelSet{{}}},
	{panel: "Limits in force by tier and rule", refID: "A", ok: positive, want: []model.LabelSet{
		{"tier": "free", "rule": "per-key"}, {"tier": "premium", "rule": "per-key"}}},
	{panel: "Tier multipliers", refID: "A", ok: func(v float64) bool { return v > 0 && v <= 1 },
		want: []model.LabelSet{{"tier": "free"}, {"tier": "premium"}}},
	{panel: "Leaders", refID: "A", ok: is(1), want: []model.LabelSet{{}}},
	{panel: "Control steps by tier and action", refID: "A", ok: finite,
		want: []model.LabelSet{{"tier": "free", "action": "hold"}, {"tier": "premium", "action": "hold"}}},
	{panel: "Control steps/s", refID: "A", ok: positive, want: []model.LabelSet{{}}},
	{panel: "Top consumers (refused)", refID: "A", ok: positive, want: []model.LabelSet{{}}},
	{panel: "Upstream responses by code", refID: "A", ok: positive, want: []model.LabelSet{{"code": "200"}}},
	{panel: "Upstream latency (p50 / p99)", refID: "B", ok: positive, want: []model.LabelSet{{}}},
	{panel: "Near limit by tier and rule", refID: "A", ok: positive, want: []model.LabelSet{{"tier": "free"}}},
	{panel: "Concurrency limit (lowest instance)", refID: "A", ok: positive, want: []model.LabelSet{{}}},
	{panel: "Concurrency limit vs in flight", refID: "A", ok: positive, want: []model.LabelSet{{}}},
	{panel: "Inner-loop latency vs baseline", refID: "A", ok: positive, want: []model.LabelSet{{}}},
	{panel: "Admitted request latency (p50 / p99)", refID: "B", ok: positive, want: []model.LabelSet{{}}},
	{panel: "Degraded instances", refID: "A", ok: is(0), want: []model.LabelSet{{}}},
	{panel: "Config version (oldest / newest)", refID: "A", ok: positive, want: []model.LabelSet{{}}},
	{panel: "Build by instance", refID: "A", ok: is(1), want: []model.LabelSet{{}}},
	{panel: "Admin API requests by code", refID: "A", ok: finite, want: []model.LabelSet{{}}},
}

// storeCheck requires decision latency quantiles for store.
func storeCheck(store string) keyCheck {
	return keyCheck{panel: "Decision latency (p50 / p99) by store", refID: "B", ok: positive,
		want: []model.LabelSet{{"store": model.LabelValue(store)}}}
}

// redisChecks hold with a Redis store and bulkheads.
var redisChecks = []keyCheck{
	{panel: "Fallback active", refID: "A", ok: is(0), want: []model.LabelSet{{}}},
	{panel: "Circuit breakers", refID: "A", ok: is(0), want: []model.LabelSet{{"name": "redis"}}},
	{panel: "Bulkheads: in flight and rejected", refID: "A", ok: finite,
		want: []model.LabelSet{{"name": "tier:free"}, {"name": "tier:premium"}}},
	{panel: "Bulkheads: in flight and rejected", refID: "B", ok: finite, want: []model.LabelSet{{"name": "tier:free"}}},
	{panel: "Multiplier age (max)", refID: "A", ok: func(v float64) bool { return v >= 0 && v < 60 }, want: []model.LabelSet{{}}},
	{panel: "Redis memory policy risk", refID: "A", ok: is(0), want: []model.LabelSet{{"policy": "noeviction"}}},
}

func checkKeySeries(t *testing.T, api v1.API, checks []keyCheck) {
	t.Helper()
	for _, kc := range checks {
		expr := panelQuery(t, kc.panel, kc.refID)
		v, err := instant(api, expr)
		if err != nil {
			t.Errorf("%s / %s: %v", kc.panel, kc.refID, err)
			continue
		}
		for _, want := range kc.want {
			s, found := series(v, want)
			switch {
			case !found:
				t.Errorf("%s / %s: no series %v in %v\n  expr: %s", kc.panel, kc.refID, want, v, expr)
			case !kc.ok(float64(s.Value)):
				t.Errorf("%s / %s: series %v has value %v\n  expr: %s", kc.panel, kc.refID, s.Metric, s.Value, expr)
			}
		}
	}
}

// quietAlerts must be neither pending nor firing while one healthy
// controller leads, the store serves every decision and the test Redis
// has no maxmemory (noeviction without a limit is safe).
// ThrottledLimiterLatencyHigh is not among them: whether a decision's p99
// stays under its 10 ms depends on how busy the test's host is (make test
// runs packages side by side on two cores, this one under the race
// detector), so it would be a timed assertion; alerts_test.yml holds it
// quiet below 10 ms and firing above, with promtool.
var quietAlerts = []string{"ThrottledControllerLeaderless", "ThrottledControllerSplitBrain",
	"ThrottledControllerStale", "ThrottledMultipliersStale", "ThrottledFallbackActive",
	"ThrottledStoreErrors", "ThrottledBreakerOpen", "ThrottledRedisMemoryPolicyRisk"}

// checkRules requires every rule of alerts.yml to be loaded and evaluated
// without error, and the quiet ones to be quiet.
func checkRules(t *testing.T, api v1.API) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := api.Rules(ctx, nil)
	if err != nil {
		t.Fatalf("prometheus rules: %v", err)
	}
	seen := map[string]v1.AlertingRule{}
	for _, g := range res.Groups {
		for _, r := range g.Rules {
			if ar, ok := r.(v1.AlertingRule); ok {
				seen[ar.Name] = ar
			}
		}
	}
	for _, want := range loadRules(t) {
		ar, ok := seen[want.Alert]
		switch {
		case !ok:
			t.Errorf("prometheus did not load alert %s", want.Alert)
		case ar.Health != v1.RuleHealthGood || ar.LastError != "":
			t.Errorf("alert %s: health %q, error %q", ar.Name, ar.Health, ar.LastError)
		case ar.LastEvaluation.IsZero():
			t.Errorf("alert %s was never evaluated", ar.Name)
		default:
			t.Logf("alert %s: %s", ar.Name, ar.State)
		}
	}
	for _, name := range quietAlerts {
		if ar, ok := seen[name]; ok && ar.State != "inactive" {
			t.Errorf("alert %s is %s with a healthy controller and store: %+v", name, ar.State, ar.Alerts)
		}
	}
}
