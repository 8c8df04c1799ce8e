package pipeline_test

import (
	"maps"
	"net/http"
	"testing"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/throttledhq/throttled/limiter/enforce"
	"github.com/throttledhq/throttled/limiter/instrument"
	"github.com/throttledhq/throttled/limiter/rls"
)

// A dryRunCase is a situation in a dry run and what every front must do.
type dryRunCase struct {
	name     string
	mode     enforce.DryRun
	handler  bool // needs a front that runs the stages after the decision
	setup    func(f *fixture)
	requests int // GETs of /api/items by k1 (free)
	status   int // the last one's answer
	appCalls int64
	// decisions are the Enforcer's counts (tier/rule/decision) of the
	// dry run's labels; counted are the pipeline's own (Settings.Metrics).
	decisions, counted map[[3]string]int
	refused            bool // a refusal log (the Enforcer's or the pipeline's) heard of one
}

var dryRunCases = []dryRunCase{
	{name: "load: multiplier cut passes", mode: enforce.DryRunLoad, requests: 2, status: 200, appCalls: 2,
		setup:     func(f *fixture) { f.control.mults = map[string]float64{"free": 0.01} },
		decisions: map[[3]string]int{{"free", "per-key", "dry_run_shed"}: 1}},
	{name: "load: tier cap passes", mode: enforce.DryRunLoad, requests: 2, status: 200, appCalls: 2,
		setup:     func(f *fixture) { f.control.rates = map[string]float64{"free": 1} },
		decisions: map[[3]string]int{{"free", enforce.TierAdmissionRule, "dry_run_shed"}: 1}},
	{name: "load: congested gate passes", mode: enforce.DryRunLoad, handler: true, requests: 1, status: 200, appCalls: 1,
		setup:   gateHeld(time.Millisecond),
		counted: map[[3]string]int{{"free", "concurrency", "dry_run_shed"}: 1}},
	{name: "load: over quota is 429", mode: enforce.DryRunLoad, requests: quota + 1, status: 429, appCalls: quota, refused: true},
	{name: "all: over quota passes", mode: enforce.DryRunAll, requests: quota + 1, status: 200, appCalls: quota + 1,
		decisions: map[[3]string]int{{"free", "per-key", "dry_run_over_quota"}: 1}},
	{name: "all: congested gate passes", mode: enforce.DryRunAll, handler: true, requests: 1, status: 200, appCalls: 1,
		setup:   gateHeld(time.Millisecond),
		counted: map[[3]string]int{{"free", "concurrency", "dry_run_shed"}: 1}},
	{name: "all: a full bulkhead still refuses", mode: enforce.DryRunAll, handler: true, requests: 1, status: 503,
		setup:   bulkheadHeld("free", 0),
		counted: map[[3]string]int{{"free", "tier:free", instrument.DecisionBulkhead}: 1}, refused: true},
}

// TestDryRun runs every dry run case through every front it applies to:
// a refusal the dry run covers answers the app's 200 (with the app's
// headers and ours, no Retry-After) and is counted dry_run_<reason>, not
// logged as a refusal; what it does not cover (the quota under a dry run
// of the load, a bulkhead) still refuses.
func TestDryRun(t *testing.T) {
	for _, dc := range dryRunCases {
		for _, fr := range fronts {
			if dc.handler && !fr.handles() {
				continue
			}
			t.Run(dc.name+"/"+fr.name(), func(t *testing.T) {
				f := newFixture(t)
				decisions := newCounter()
				f.es.Decisions, f.es.RefusalLog, f.es.DryRun = decisions, decisions, dc.mode
				if dc.setup != nil {
					dc.setup(f)
				}
				f.build(fr)
				rec := f.get("/api/items", dc.requests)
				if rec.Code != dc.status || rec.Header().Get(enforce.HeaderRetryAfter) != "" && dc.status == 200 {
					t.Errorf("answer %d (Retry-After %q), want %d; body %s", rec.Code,
						rec.Header().Get(enforce.HeaderRetryAfter), dc.status, rec.Body)
				}
				if got := f.app.calls.Load(); got != dc.appCalls {
					t.Errorf("the app was called %d times, want %d", got, dc.appCalls)
				}
				dc.judgeCounts(t, f, decisions)
				for _, undo := range f.undo {
					undo()
				}
			})
		}
	}
}

// judgeCounts checks the dry run's labels among the Enforcer's counts,
// the pipeline's counts and its refusal log.
func (dc dryRunCase) judgeCounts(t *testing.T, f *fixture, decisions *counter) {
	t.Helper()
	decisions.mu.Lock()
	dry := map[[3]string]int{}
	for k, n := range decisions.counted {
		if len(k[2]) > len(enforce.DryRunPrefix) && k[2][:len(enforce.DryRunPrefix)] == enforce.DryRunPrefix {
			dry[k] = n
		}
	}
	refusedByRules := len(decisions.refused)
	decisions.mu.Unlock()
	if !maps.Equal(dry, orEmpty(dc.decisions)) {
		t.Errorf("the Enforcer counted %v of the dry run, want %v", dry, dc.decisions)
	}
	c := f.counter
	c.mu.Lock()
	defer c.mu.Unlock()
	if !maps.Equal(c.counted, orEmpty(dc.counted)) {
		t.Errorf("the pipeline counted %v, want %v", c.counted, dc.counted)
	}
	if refused := len(c.refused) > 0 || refusedByRules > 0; refused != dc.refused {
		t.Errorf("refusal log %v: want it told %v", c.refused, dc.refused)
	}
}

func orEmpty(m map[[3]string]int) map[[3]string]int {
	if m == nil {
		return map[[3]string]int{}
	}
	return m
}

// TestDryRunMarksGatewayAnswers: in a dry run the rate limit service
// answers OK and names the refusal it let pass in its dynamic metadata
// (dry_run), as POST /v1/check does in its JSON (limiter/enforce's
// TestCheckKeysDryRun).
func TestDryRunMarksGatewayAnswers(t *testing.T) {
	f := newFixture(t)
	f.es.DryRun = enforce.DryRunLoad
	f.control.mults = map[string]float64{"free": 0.01}
	f.build(netHTTP{})
	client := serveRLS(f)
	req := &rlsv3.RateLimitRequest{Domain: rls.DefaultDomain, Descriptors: []*ratelimitv3.RateLimitDescriptor{{
		Entries: []*ratelimitv3.RateLimitDescriptor_Entry{{Key: rls.EntryRule, Value: "per-key"}, {Key: "api_key", Value: "k1"}}}}}
	var resp *rlsv3.RateLimitResponse
	for range 2 {
		var err error
		if resp, err = client.ShouldRateLimit(t.Context(), req); err != nil {
			t.Fatal(err)
		}
	}
	meta := resp.GetDynamicMetadata().GetFields()
	if resp.GetOverallCode() != rlsv3.RateLimitResponse_OK || meta["dry_run"].GetStringValue() != "shed" ||
		meta["decision"].GetStringValue() != "allowed" {
		t.Errorf("answer %v, metadata %v: want OK, decision allowed, dry_run shed", resp.GetOverallCode(), meta)
	}
	for _, h := range resp.GetResponseHeadersToAdd() {
		if http.CanonicalHeaderKey(h.GetKey()) == enforce.HeaderRetryAfter || h.GetKey() == enforce.HeaderDecision {
			t.Errorf("header %s: %s on an answer a dry run let pass", h.GetKey(), h.GetValue())
		}
	}
}
