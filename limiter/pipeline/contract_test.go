package pipeline_test

import (
	"context"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/throttledhq/throttled/limiter/enforce"
	"github.com/throttledhq/throttled/limiter/instrument"
)

// A loadState is one way the load loops refuse a request that its quota
// allows, and the 503 it gives.
type loadState struct {
	name         string
	handler      bool             // a stage after the decision: needs a front that handles
	setup        func(f *fixture) // before the pipeline is made
	prime        func(f *fixture) // after: brings the state about through the front
	reason, rule string           // of its refusal
}

var loadStates = []loadState{
	{name: "tier cap", setup: func(f *fixture) { f.control.rates = map[string]float64{"free": 1} },
		prime: takeTierToken, reason: "shed", rule: enforce.TierAdmissionRule},
	{name: "multiplier cut", setup: func(f *fixture) { f.control.mults = map[string]float64{"free": 0.01} },
		reason: "shed", rule: "per-key"},
	{name: "gate congested", handler: true, setup: gateHeld(time.Millisecond), reason: "shed", rule: "concurrency"},
	{name: "bulkhead full", handler: true, setup: bulkheadHeld("free", 0),
		reason: instrument.DecisionBulkhead, rule: "tier:free"},
	{name: "breaker open", handler: true, setup: breakers(time.Minute), prime: openBreaker,
		reason: instrument.DecisionBreakerOpen, rule: "upstream:/api"},
}

// takeTierToken spends the capped free tier's admission token (its burst)
// with a request of another free client, k3.
func takeTierToken(f *fixture) {
	f.control.tiers["k3"] = "free"
	f.sendAs("k3")
}

// openBreaker opens /api's breaker with two failures of a premium client,
// k2, whose quota is not the one judged.
func openBreaker(f *fixture) {
	f.app.status.Store(http.StatusInternalServerError)
	f.sendAs("k2")
	f.sendAs("k2")
	f.app.status.Store(http.StatusOK)
}

// sendAs sends a GET of /api/items by key.
func (f *fixture) sendAs(key string) int {
	r := request("/api/items")
	r.Header.Set("X-API-Key", key)
	return f.send(r).Code
}

// quotaLeft is what the quota side of k1's per-key bucket holds, read
// without spending by an enforcer on the same store and policy with no
// multipliers (under a cut, a peek reports the admission side).
func (f *fixture) quotaLeft() int64 {
	f.t.Helper()
	e, err := enforce.New(f.store, f.policy, enforce.Settings{Tiers: &f.control})
	if err != nil {
		f.t.Fatal(err)
	}
	b, err := e.Inspect(context.Background(), "k1")
	if err != nil || len(b) != 1 {
		f.t.Fatalf("k1's buckets: %+v, %v", b, err)
	}
	return b[0].Remaining
}

// TestLoadRefusalsSpendQuota: a request refused for load, by whichever
// stage, keeps its quota spent, exactly as an admitted one does: k1's
// bucket holds its quota less every request k1 sent. A bulkhead's 503 and
// an open breaker's are alike in this.
func TestLoadRefusalsSpendQuota(t *testing.T) {
	for _, st := range loadStates {
		for _, fr := range fronts {
			if st.handler && !fr.handles() {
				continue
			}
			t.Run(st.name+"/"+fr.name(), func(t *testing.T) {
				f := newFixture(t)
				st.setup(f)
				f.build(fr)
				if st.prime != nil {
					st.prime(f)
				}
				sent, code := 0, 0
				var last enforce.Refusal
				for sent < quota && code != http.StatusServiceUnavailable { // the tier cap may have refilled: bounded
					r := f.send(request("/api/items"))
					sent, code, last = sent+1, r.Code, refusal(r)
				}
				if code != http.StatusServiceUnavailable || last.Reason != st.reason || last.Rule != st.rule {
					t.Fatalf("after %d requests: %d %+v, want 503 %s by %s", sent, code, last, st.reason, st.rule)
				}
				if got := f.quotaLeft(); got != int64(quota-sent) {
					t.Errorf("k1 sent %d (the last one refused for load): %d of its quota of %d left, want %d",
						sent, got, quota, quota-sent)
				}
			})
		}
	}
}

// The quota contract's run: a greedy and a modest free client send in one
// run, under a load state, against a quota of contractQuota that does not
// refill during it.
const (
	contractQuota = 20
	greedySends   = 50 // 2.5 × the quota
	modestSends   = 18 // 0.9 × the quota
)

// TestQuotaContract: over quota is 429 whatever the load state; under
// quota is never 429 because of load. Under each load state, on every
// front it applies to, a client sending 2.5× its quota gets 429 for at
// least 90 % of its excess, and a client sending 0.9× its quota, in the
// same run, gets no 429 (and is shed: the state was in force).
func TestQuotaContract(t *testing.T) {
	for _, st := range loadStates {
		for _, fr := range fronts {
			if st.handler && !fr.handles() {
				continue
			}
			t.Run(st.name+"/"+fr.name(), func(t *testing.T) {
				f := newFixture(t)
				f.policy.Tiers[0].Limit, f.policy.Tiers[0].Burst, f.policy.Tiers[0].Period = contractQuota, contractQuota, time.Hour
				f.control.tiers["k4"] = "free"
				st.setup(f)
				f.build(fr)
				if st.prime != nil {
					st.prime(f)
				}
				greedy, modest := map[int]int{}, map[int]int{}
				for i := range greedySends {
					greedy[f.sendAs("k1")]++
					if (i+1)*modestSends/greedySends > i*modestSends/greedySends { // spread evenly
						modest[f.sendAs("k4")]++
					}
				}
				excess := greedySends - contractQuota
				if want := int(math.Ceil(0.9 * float64(excess))); greedy[http.StatusTooManyRequests] < want {
					t.Errorf("greedy (%d sent, quota %d): answers %v; want ≥ %d × 429 (90 %% of its excess)",
						greedySends, contractQuota, greedy, want)
				}
				if modest[http.StatusTooManyRequests] != 0 || modest[http.StatusServiceUnavailable] == 0 {
					t.Errorf("modest (%d sent, quota %d): answers %v; want no 429, and some 503 (the state in force)",
						modestSends, contractQuota, modest)
				}
				t.Logf("greedy %v, modest %v", greedy, modest)
			})
		}
	}
}

// TestUpstreamFailureSpendsQuota: a request the upstream failed (500)
// keeps its quota spent, on every front: it was sent and not refused for
// quota.
func TestUpstreamFailureSpendsQuota(t *testing.T) {
	for _, fr := range fronts {
		t.Run(fr.name(), func(t *testing.T) {
			f := newFixture(t)
			f.build(fr)
			f.app.status.Store(http.StatusInternalServerError)
			if code := f.sendAs("k1"); code != http.StatusInternalServerError {
				t.Fatalf("answer %d, want the app's 500", code)
			}
			if got := f.quotaLeft(); got != quota-1 {
				t.Errorf("%d of k1's quota of %d left after one failed request, want %d", got, quota, quota-1)
			}
		})
	}
}
