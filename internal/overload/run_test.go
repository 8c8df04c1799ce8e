package overload

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// small is a backend of capacity 100 (2 workers × 20 ms), so that runs
// stay light under -race.
var small = BackendSettings{Workers: 2, ServiceTime: 20 * time.Millisecond}

// patient is long enough that no request times out on a starved machine
// (a timed-out request the backend served would fail the reconciliation).
const patient = 30 * time.Second

// passThrough is a Stack of n plain reverse proxies (with Front Proxy) or
// n servers of the backend's handler (other fronts), counting what each
// passed on.
type passThrough struct {
	srvs  []*httptest.Server
	count []atomic.Int64
	mults map[string]float64
}

func (p *passThrough) URLs() []string {
	var u []string
	for _, s := range p.srvs {
		u = append(u, s.URL)
	}
	return u
}

func (p *passThrough) Multipliers() map[string]float64 { return p.mults }

func (p *passThrough) Close() error {
	for _, s := range p.srvs {
		s.Close()
	}
	return nil
}

func passThroughStack(got **passThrough) StackFunc {
	return func(_ context.Context, spec StackSpec) (Stack, error) {
		u, err := url.Parse(spec.Backend)
		if err != nil {
			return nil, err
		}
		p := &passThrough{count: make([]atomic.Int64, spec.Scenario.Instances), mults: map[string]float64{"free": 1, "premium": 1}}
		for i := range spec.Scenario.Instances {
			rp := httputil.NewSingleHostReverseProxy(u)
			// DefaultTransport keeps 2 idle connections per host: under a
			// surge the proxy would open and close connections all the time.
			rp.Transport = &http.Transport{MaxIdleConnsPerHost: 1024}
			var next http.Handler = rp
			if spec.Front != Proxy { // the backend's handler in process
				next = spec.Handler
			}
			p.srvs = append(p.srvs, httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				p.count[i].Add(1)
				next.ServeHTTP(w, r)
			})))
		}
		*got = p
		return p, nil
	}
}

func keysOf(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	var k []string
	for name := range m {
		k = append(k, name)
	}
	sort.Strings(k)
	return k
}

func sorted(s ...string) []string { sort.Strings(s); return s }

// A short run through a pass-through stack: the JSON has exactly the
// report's names, the rows add up to the totals, every scheduled request
// is counted once, and the clients reconcile with the backend.
func TestRunEndToEnd(t *testing.T) {
	sc, err := Lookup("surge", small.Capacity())
	if err != nil {
		t.Fatal(err)
	}
	var stack *passThrough
	var mu sync.Mutex
	var seen []int
	rep, err := Run(context.Background(), sc, RunSettings{Duration: 3 * time.Second, Timeout: patient, Mode: Off, Backend: small,
		Stack: passThroughStack(&stack), OnRow: func(r Row) { mu.Lock(); seen = append(seen, r.Second); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", raw)
	assertReportNames(t, raw)
	if !slices.Equal(seen, []int{0, 1, 2}) || len(rep.Rows) != 3 {
		t.Fatalf("OnRow saw seconds %v, report has %d rows; want 0, 1, 2", seen, len(rep.Rows))
	}
	if m := rep.Rows[2].Multipliers; m["free"] != 1 || m["premium"] != 1 {
		t.Errorf("the last row's multipliers %v, want the stack's", m)
	}
	// premium 50/s, free 25, 250, 25, greedy 15/s: the schedule is exact.
	wantSent := map[string]int64{"premium": 150, "free": 300, "greedy": 45}
	var proxied int64
	for i := range stack.count {
		proxied += stack.count[i].Load()
	}
	var sent int64
	for name, tot := range rep.Totals {
		var sum Counts
		for i := range rep.Rows {
			sum.Add(rep.Rows[i].Loads[name])
		}
		if sum.Class != tot.Class || tot.Sent() != wantSent[name] {
			t.Errorf("%s: rows sum to %v, totals %v (%d sent, want %d)", name, sum.Class, tot.Class, tot.Sent(), wantSent[name])
		}
		sent += tot.Sent() - tot.Class[Dropped]
	}
	if proxied != sent {
		t.Errorf("the stack saw %d requests, the clients sent %d", proxied, sent)
	}
	if rep.RecoveryS != 0 || rep.FlipsPerMin != 0 || rep.CapacityRPS != 100 || rep.TargetMS != 250 || rep.Front != "proxy" {
		t.Errorf("recovery %v flips %v capacity %v target %v front %q", rep.RecoveryS, rep.FlipsPerMin, rep.CapacityRPS, rep.TargetMS, rep.Front)
	}
}

// assertReportNames checks that a report's JSON has exactly the names of
// `throttled bench overload --json`.
func assertReportNames(t *testing.T, raw []byte) {
	t.Helper()
	top := keysOf(t, raw)
	want := sorted("scenario", "mode", "front", "capacity_rps", "target_ms", "phases", "settle_s", "lowest_goodput_ratio",
		"recovery_s", "after_shed_late", "flips_per_min", "cpu_seconds")
	if !slices.Equal(top, want) {
		t.Fatalf("report keys %v, want %v", top, want)
	}
	var doc struct {
		Scenario, Mode string
		Phases         map[string]json.RawMessage
	}
	_ = json.Unmarshal(raw, &doc)
	if doc.Scenario != "surge" || doc.Mode != "off" || !slices.Equal(keysOf(t, mustJSON(t, doc.Phases)), sorted("before", "overload", "after")) {
		t.Fatalf("scenario %q mode %q phases %v", doc.Scenario, doc.Mode, keysOf(t, mustJSON(t, doc.Phases)))
	}
	for name, ph := range doc.Phases {
		if got := keysOf(t, ph); !slices.Equal(got, sorted("goodput_ratio", "premium_admitted_pct", "free_admitted_pct", "p99_ms", "status")) {
			t.Fatalf("phase %s keys %v", name, got)
		}
		var p struct{ Status json.RawMessage }
		_ = json.Unmarshal(ph, &p)
		if got := keysOf(t, p.Status); !slices.Equal(got, sorted("backend_503", "shed", "over_quota", "breaker", "bulkhead")) {
			t.Fatalf("phase %s status keys %v", name, got)
		}
	}
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A stack that serves the backend's handler in process (the middleware
// fronts) reconciles with the backend's counts like a proxy, and the report
// names its front.
func TestRunInProcessFront(t *testing.T) {
	sc, _ := Lookup("surge", small.Capacity())
	var stack *passThrough
	rep, err := Run(context.Background(), sc, RunSettings{Duration: 3 * time.Second, Timeout: patient, Backend: small,
		Front: Echo, Stack: passThroughStack(&stack)})
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := stack.count[0].Load(), rep.Totals["premium"].Class[OK]; rep.Front != "echo" || n == 0 || ok == 0 {
		t.Fatalf("front %q: %d requests served, %d premium 2xx", rep.Front, n, ok)
	}
}

// The instances scenario's traffic reaches the three instances 60/30/10.
func TestRunSplitsOverInstances(t *testing.T) {
	sc, _ := Lookup("instances", small.Capacity())
	sc.Loads[1].Rate = sc.Loads[0].Rate // no overload: this is about the split
	var stack *passThrough
	rep, err := Run(context.Background(), sc, RunSettings{Duration: 3 * time.Second, Timeout: patient, Backend: small, Stack: passThroughStack(&stack)})
	if err != nil {
		for name, c := range rep.Totals {
			t.Logf("%s: %v", name, c.Class)
		}
		t.Fatal(err)
	}
	var total int64
	for _, c := range rep.Totals {
		total += c.Sent() - c.Class[Dropped]
	}
	for i, share := range sc.Split {
		if got, want := float64(stack.count[i].Load()), share*float64(total); got < want-3 || got > want+3 {
			t.Errorf("instance %d got %v requests, want %v ± 3 (one per load)", i, got, want)
		}
	}
}

// Requests beyond MaxInFlight are dropped, counted, and still sent in
// their second's row.
func TestRunCountsDropped(t *testing.T) {
	sc, _ := Lookup("surge", small.Capacity())
	var stack *passThrough
	rep, err := Run(context.Background(), sc, RunSettings{Duration: 3 * time.Second, Timeout: patient, Backend: small, MaxInFlight: 1,
		Stack: passThroughStack(&stack)})
	if err != nil {
		t.Fatal(err)
	}
	var dropped, sent int64
	for _, c := range rep.Totals {
		dropped += c.Class[Dropped]
		sent += c.Sent()
	}
	if dropped == 0 || sent != 495 {
		t.Fatalf("%d dropped of %d sent; want some dropped of 495", dropped, sent)
	}
}

func TestRunRefusesBadSetups(t *testing.T) {
	sc, _ := Lookup("instances", small.Capacity())
	var stack *passThrough
	wrongCount := func(ctx context.Context, spec StackSpec) (Stack, error) {
		spec.Scenario.Instances = 1
		return passThroughStack(&stack)(ctx, spec)
	}
	for _, tc := range []struct {
		name string
		sc   Scenario
		rs   RunSettings
		want error
	}{
		{"no stack", sc, RunSettings{Backend: small}, ErrSettings},
		{"too short", sc, RunSettings{Backend: small, Duration: 2 * time.Second, Stack: passThroughStack(&stack)}, ErrSettings},
		{"capacity mismatch", sc, RunSettings{Stack: passThroughStack(&stack)}, ErrScenario},
		{"URLs per instance", sc, RunSettings{Backend: small, Stack: wrongCount}, ErrStack},
		{"stack fails", sc, RunSettings{Backend: small, Stack: func(context.Context, StackSpec) (Stack, error) {
			return nil, errors.New("no redis")
		}}, ErrStack},
		{"invalid scenario", Scenario{Name: "empty", Capacity: 100}, RunSettings{Backend: small, Stack: passThroughStack(&stack)}, ErrScenario},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Run(context.Background(), tc.sc, tc.rs); !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
		})
	}
}

// Cancelling ends the run early, with a report on the seconds begun.
func TestRunEndsWithContext(t *testing.T) {
	sc, _ := Lookup("surge", small.Capacity())
	ctx, cancel := context.WithCancel(context.Background())
	var stack *passThrough
	rep, err := Run(ctx, sc, RunSettings{Duration: 30 * time.Second, Timeout: patient, Backend: small, Stack: passThroughStack(&stack),
		OnRow: func(Row) { cancel() }})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if len(rep.Rows) < 1 || len(rep.Rows) >= 30 || rep.Rows[0].Loads["premium"].Sent() != 50 {
		t.Fatalf("%d rows (want 1..29), first row's premium sent %d (want 50)", len(rep.Rows), rep.Rows[0].Loads["premium"].Sent())
	}
}

func TestReconcile(t *testing.T) {
	tot := func(ok, over int64, failed ...int64) map[string]Counts {
		var c Counts
		c.Class[OK], c.Class[Backend503], c.Class[Shed] = ok, over, 1000
		if len(failed) > 0 {
			c.Class[Failed] = failed[0]
		}
		return map[string]Counts{"free": c}
	}
	for _, tc := range []struct {
		name    string
		totals  map[string]Counts
		backend BackendCounts
		ok      bool
	}{
		{"equal", tot(1000, 50), BackendCounts{OK: 1000, Overloaded: 50, Abandoned: 3}, true},
		{"2xx 1 % apart", tot(990, 0), BackendCounts{OK: 1000}, true},
		{"2xx over 1 % apart", tot(989, 0), BackendCounts{OK: 1000}, false},
		{"503s apart", tot(1000, 40), BackendCounts{OK: 1000, Overloaded: 50}, false},
		{"nothing at all", tot(0, 0), BackendCounts{}, true},
		// A request that failed on its client (a timeout, an instance
		// killed mid-call) may still have been answered by the backend.
		{"backend 503 of a request failed on its client", tot(1000, 78, 5), BackendCounts{OK: 1000, Overloaded: 79}, true},
		{"backend answers beyond the failed requests", tot(900, 78, 5), BackendCounts{OK: 1000, Overloaded: 79}, false},
		{"failed requests counted once across 2xx and 503s", tot(1000, 70, 10), BackendCounts{OK: 1016, Overloaded: 76}, false},
		{"clients above the backend whatever failed", tot(1000, 90, 50), BackendCounts{OK: 1000, Overloaded: 79}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Reconcile(tc.totals, tc.backend)
			if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrUnreconciled)) {
				t.Fatalf("Reconcile = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

// The generator sends on schedule over real loopback HTTP: 200 req/s for
// 3 s is 200 requests in each second's row, all of which reach the server.
func TestGeneratorPacing(t *testing.T) {
	var got atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(KeyHeader) != "" {
			got.Add(1)
		}
	}))
	defer srv.Close()
	sc := Scenario{Name: "steady", Capacity: 400, Instances: 1, Split: []float64{1}, ServiceFactor: [3]float64{1, 1, 1},
		Loads: []Load{{Name: "free", Keys: keys("free-", 4), Active: [3]int{4, 4, 4}, Rate: [3]float64{200, 200, 200}}}}
	lay := newLayout(3 * time.Second)
	col := newCollector(sc, lay, target)
	g := newGenerator([]string{srv.URL}, sc.Split, col, lay, RunSettings{Timeout: patient}.withDefaults())
	g.start = time.Now()
	g.drive(context.Background(), 0, sc.Loads[0])
	g.wg.Wait()
	rows := col.finished(lay.seconds, func(time.Duration) map[string]float64 { return nil })
	if len(rows) != 3 || got.Load() != 600 {
		t.Fatalf("%d rows finished, server saw %d requests; want 3 and 600", len(rows), got.Load())
	}
	for _, r := range rows {
		if c := r.Loads["free"]; c.Sent() != 200 || c.Class[OK] != 200 {
			t.Fatalf("second %d: %d sent, %d ok; want 200 and 200", r.Second, c.Sent(), c.Class[OK])
		}
	}
}
