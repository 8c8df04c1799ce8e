package pipeline_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/throttledhq/throttled/bulkhead"
	"github.com/throttledhq/throttled/limiter/enforce"
	"github.com/throttledhq/throttled/limiter/instrument"
	"github.com/throttledhq/throttled/limiter/pipeline"
)

// tally sends requests through a front and keeps what their clients saw,
// as (tier, code, reason) of throttled_requests_total.
type tally struct {
	f        *fixture
	reg      *prometheus.Registry
	seen     map[[3]string]float64
	sent     int
	admitted string // the reason of an admitted answer: admitted, or fallback with the store down
}

// newTally gives f a request counter on a registry of its own.
func newTally(f *fixture, admitted string) *tally {
	reg := prometheus.NewRegistry()
	req, err := instrument.NewRequests(reg)
	if err != nil {
		f.t.Fatal(err)
	}
	f.s.Requests = req
	return &tally{f: f, reg: reg, seen: map[[3]string]float64{}, admitted: admitted}
}

// send sends n GETs of path as key, and keeps what the client saw of each.
func (ty *tally) send(key, path string, n int) {
	for range n {
		r := request(path)
		r.Header.Set("X-API-Key", key)
		ty.keep(key, ty.f.send(r))
	}
}

// keep reads an answer as its client does: the status, and a refusal's
// JSON reason and rule; the tier is the refusal's, else the key's (a path
// no rule matches is the unmatched tier's, free).
func (ty *tally) keep(key string, rec *httptest.ResponseRecorder) {
	ref := refusal(rec)
	tier := ref.Tier
	if tier == "" {
		tier = ty.f.control.tiers[key]
	}
	reason := ty.admitted
	switch {
	case rec.Code == http.StatusTooManyRequests:
		reason = instrument.ReasonOverQuota
	case rec.Code == pipeline.StatusClientGone:
		reason = instrument.ReasonClientGone
	case ref.Reason == "shed" && ref.Rule == enforce.TierAdmissionRule:
		reason = instrument.ReasonTierCap
	case ref.Reason == "shed" && ref.Rule == "concurrency":
		reason = instrument.ReasonConcurrency
	case ref.Reason != "":
		reason = ref.Reason // shed, bulkhead, breaker_open
	case rec.Code >= 500:
		reason = instrument.ReasonUpstreamError
	}
	ty.seen[[3]string{tier, strconv.Itoa(rec.Code), reason}]++
	ty.sent++
}

// judge asserts that throttled_requests_total holds exactly what the
// clients saw: one series per (tier, code, reason) seen, each at its
// count, and wantReasons among them.
func (ty *tally) judge(t *testing.T, wantReasons ...string) {
	t.Helper()
	got := map[[3]string]float64{}
	mfs, err := ty.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			got[[3]string{l["tier"], l["code"], l["reason"]}] = m.GetCounter().GetValue()
			total += m.GetCounter().GetValue()
		}
	}
	if !equalTallies(got, ty.seen) || total != float64(ty.sent) {
		t.Errorf("throttled_requests_total %v (%v in all), want what the clients saw: %v (%d requests)", got, total, ty.seen, ty.sent)
	}
	if n, err := testutil.GatherAndCount(ty.reg, instrument.RequestsMetric); err != nil || n != len(ty.seen) {
		t.Errorf("%d series (%v), want %d", n, err, len(ty.seen))
	}
	reasons := map[string]bool{}
	for k := range ty.seen {
		reasons[k[2]] = true
	}
	for _, r := range wantReasons {
		if !reasons[r] {
			t.Errorf("the mix gave no answer for reason %s: %v", r, ty.seen)
		}
	}
}

func equalTallies(a, b map[[3]string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestRequestsCountedOnce sends a known mix through every front and
// asserts that throttled_requests_total counts each request (each check,
// at a gateway) once, as its client saw the answer: within quota, over
// quota, shed by a multiplier, refused by the tier cap, and on the fronts
// that handle, a path no rule matches, the upstream's 500, a full
// bulkhead, a client gone while it waited, the gate's shed and an open
// breaker; with the store down, the fallback's answers.
func TestRequestsCountedOnce(t *testing.T) {
	for _, fr := range fronts {
		t.Run(fr.name(), func(t *testing.T) {
			f := newFixture(t)
			for _, k := range []string{"k3", "k4", "k5", "k6", "k7", "k8"} {
				f.control.tiers[k] = "free"
			}
			ty := newTally(f, instrument.ReasonAdmitted)
			held := holdAll(f)
			f.build(fr)
			ty.send("k1", "/api/items", quota+2)
			f.control.mults = map[string]float64{"premium": 0.01}
			ty.send("k2", "/api/items", 3)
			f.control.mults, f.control.rates = nil, map[string]float64{"free": 1}
			ty.send("k3", "/api/items", 3)
			f.control.rates = nil
			want := []string{instrument.ReasonAdmitted, instrument.ReasonOverQuota, instrument.ReasonShed, instrument.ReasonTierCap}
			if fr.handles() {
				handlerMix(ty, held)
				want = append(want, instrument.ReasonUpstreamError, instrument.ReasonBulkhead, instrument.ReasonClientGone,
					instrument.ReasonConcurrency, instrument.ReasonBreakerOpen)
			}
			ty.judge(t, want...)
		})
		t.Run(fr.name()+"/redis down", func(t *testing.T) {
			f := newFixture(t)
			f.redisDown()
			ty := newTally(f, instrument.ReasonFallback)
			f.build(fr)
			ty.send("k1", "/api/items", quota+1)
			ty.judge(t, instrument.ReasonFallback, instrument.ReasonOverQuota)
		})
	}
}

// held are the permits the test holds of the stages after the decision.
type held struct {
	gate *bulkhead.Gate
	wait *bulkhead.Bulkhead // of /api/wait, where a request queues
}

// holdAll gives f's pipeline a gate of limit 1 (not held), the bulkheads
// of /api/export (full, no queue) and /api/wait (full, one place in its
// queue), and a breaker for /api that opens on the second failure.
func holdAll(f *fixture) held {
	g, err := bulkhead.NewGate("upstream", bulkhead.GateSettings{Limit: 1, MinLimit: 1, MaxWait: time.Millisecond}, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	f.s.Gate, f.s.RouteBulkheads = g, map[string]*bulkhead.Bulkhead{}
	for path, queue := range map[string]int{"/api/export": 0, "/api/wait": 1} {
		bh, err := bulkhead.New("route:"+path, bulkhead.Settings{Limit: 1, MaxQueue: queue, MaxWait: time.Minute}, nil)
		if err != nil {
			f.t.Fatal(err)
		}
		pm, err := bh.Acquire(context.Background())
		if err != nil {
			f.t.Fatal(err)
		}
		f.t.Cleanup(pm.Release)
		f.s.RouteBulkheads[path] = bh
	}
	breakers(time.Minute)(f)
	return held{gate: g, wait: f.s.RouteBulkheads["/api/wait"]}
}

// handlerMix sends what only a front that handles answers: a path no rule
// matches, the app's 500, a full bulkhead, a client gone while queued,
// the gate's shed, then the app's failures until the breaker opens.
func handlerMix(ty *tally, h held) {
	f := ty.f
	ty.send("k4", "/health", 1)
	f.app.status.Store(http.StatusInternalServerError)
	ty.send("k4", "/api/items", 1)
	f.app.status.Store(http.StatusOK)
	ty.send("k4", "/api/items", 1) // the breaker's failures in a row start again
	ty.send("k5", "/api/export", 1)
	ctx, cancel := context.WithCancel(context.Background())
	answer := make(chan *httptest.ResponseRecorder, 1)
	r := request("/api/wait").WithContext(ctx)
	r.Header.Set("X-API-Key", "k6")
	go func() { answer <- f.send(r) }()
	eventually(f.t, "the request to queue", func() bool { return h.wait.Stats().Waiting == 1 })
	cancel()
	ty.keep("k6", <-answer)
	pm, err := h.gate.Acquire(context.Background(), 0)
	if err != nil {
		f.t.Fatal(err)
	}
	ty.send("k7", "/api/items", 1)
	pm.Release()
	f.app.status.Store(http.StatusInternalServerError)
	ty.send("k8", "/api/items", 3)
}

// TestDryRunCountedAsWouldBe: a request a dry run lets pass is counted
// once with the answer its client got (200) and the refusal it would have
// had: dry_run_over_quota under a dry run of all, dry_run_shed for the
// gate's shed under a dry run of the load; on every front.
func TestDryRunCountedAsWouldBe(t *testing.T) {
	for _, fr := range fronts {
		t.Run(fr.name()+"/all", func(t *testing.T) {
			f := newFixture(t)
			f.es.DryRun = enforce.DryRunAll
			ty := newTally(f, instrument.ReasonAdmitted)
			f.build(fr)
			ty.send("k1", "/api/items", quota+2)
			ty.seen = map[[3]string]float64{{"free", "200", "admitted"}: quota, {"free", "200", "dry_run_over_quota"}: 2}
			ty.judge(t)
		})
		if !fr.handles() {
			continue
		}
		t.Run(fr.name()+"/load, the gate", func(t *testing.T) {
			f := newFixture(t)
			f.es.DryRun = enforce.DryRunLoad
			gateHeld(time.Millisecond)(f)
			ty := newTally(f, instrument.ReasonAdmitted)
			f.build(fr)
			ty.send("k1", "/api/items", 1)
			for _, undo := range f.undo {
				undo()
			}
			ty.seen = map[[3]string]float64{{"free", "200", "dry_run_shed"}: 1}
			ty.judge(t)
		})
	}
}
