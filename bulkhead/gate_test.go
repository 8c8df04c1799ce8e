package bulkhead

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func mustGate(t testing.TB, s GateSettings, m *Metrics) *Gate {
	t.Helper()
	g, err := NewGate("upstream", s, m)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// result is the outcome of one Acquire run in its own goroutine.
type result struct {
	id  int
	p   Permit
	err error
}

// arrive starts Acquire(prio) in a goroutine and waits until it is queued or
// answered, so that arrivals are ordered. Outcomes go to out.
func arrive(t *testing.T, g *Gate, ctx context.Context, id, prio int, out chan<- result) {
	t.Helper()
	before := len(out)
	waiting := int(g.waiting.Load())
	go func() {
		p, err := g.Acquire(ctx, prio)
		out <- result{id, p, err}
	}()
	eventually(t, "the arrival queued or answered", func() bool {
		return int(g.waiting.Load()) != waiting || len(out) != before
	})
}

// holdAll takes every permit of g.
func holdAll(t *testing.T, g *Gate) []Permit {
	t.Helper()
	var ps []Permit
	for range g.Limit() {
		p, err := g.Acquire(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	return ps
}

func TestGateSettingsDefaultsAndErrors(t *testing.T) {
	got, err := GateSettings{}.normalize()
	if err != nil {
		t.Fatal(err)
	}
	if got.Limit != DefaultGateLimit || got.MinLimit != 1 || got.MaxQueue != DefaultGateMaxQueue ||
		got.MaxWait != 50*time.Millisecond || got.Now == nil {
		t.Errorf("zero GateSettings normalised to %+v", got)
	}
	if got, _ := (GateSettings{MinLimit: 100}).normalize(); got.Limit != 100 {
		t.Errorf("MinLimit 100 and no Limit: Limit = %d, want 100", got.Limit)
	}
	for _, tc := range []struct {
		s    GateSettings
		want string
	}{
		{GateSettings{Limit: -1}, "GateSettings.Limit must not be negative, got -1"},
		{GateSettings{MinLimit: -2}, "GateSettings.MinLimit"},
		{GateSettings{MaxQueue: -3}, "GateSettings.MaxQueue"},
		{GateSettings{MaxWait: -time.Millisecond}, "GateSettings.MaxWait"},
		{GateSettings{Limit: 2, MinLimit: 3}, "GateSettings.Limit (2) is below GateSettings.MinLimit (3)"},
	} {
		_, err := NewGate("g", tc.s, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "bulkhead: ") {
			t.Errorf("NewGate(%+v) error = %v, want one naming %q", tc.s, err, tc.want)
		}
	}
	if _, err := NewGate("", GateSettings{}, nil); err == nil {
		t.Error("NewGate with an empty name: no error")
	}
}

// TestGateGrantsByPriorityThenArrival: each released permit goes to the
// most important waiter, the oldest among equals.
func TestGateGrantsByPriorityThenArrival(t *testing.T) {
	g := mustGate(t, GateSettings{Limit: 1, MaxWait: time.Hour}, nil)
	held := holdAll(t, g)
	out := make(chan result, 8)
	prios := []int{2, 0, 1, 0, 2, -5} // -5 counts as 0
	for id, p := range prios {
		arrive(t, g, context.Background(), id, p, out)
	}
	want := []int{1, 3, 5, 2, 0, 4}
	held[0].Release()
	for i, id := range want {
		r := <-out
		if r.err != nil || r.id != id {
			t.Fatalf("grant %d went to arrival %d (err %v), want %d", i, r.id, r.err, id)
		}
		r.p.Release()
	}
	if s := g.Stats(); s.InFlight != 0 || s.Waiting != 0 {
		t.Fatalf("after all released: %+v", s)
	}
}

// TestGateShedsLeastImportantFirst: a full queue evicts its least
// important, newest waiter for a more important newcomer, and refuses a
// newcomer no more important than that waiter. Premium (0) is refused only
// once every place is held by premium.
func TestGateShedsLeastImportantFirst(t *testing.T) {
	g := mustGate(t, GateSettings{Limit: 1, MaxQueue: 3, MaxWait: time.Hour}, nil)
	held := holdAll(t, g)
	out := make(chan result, 16)
	for id, p := range []int{1, 2, 2} { // queue (id:priority): 0:1 1:2 2:2
		arrive(t, g, context.Background(), id, p, out)
	}
	steps := []struct {
		id, prio int
		shed     int // the arrival answered ErrShed
	}{
		{3, 2, 3},   // as important as the last waiter (2:2): refused
		{4, 1, 2},   // more important: evicts the newest of priority 2 → 0:1 4:1 1:2
		{5, 0, 1},   // evicts 1 → 5:0 0:1 4:1
		{6, 1, 6},   // the last waiter is a 1: a 1 is refused
		{7, 0, 4},   // evicts the newest 1 → 5:0 7:0 0:1
		{8, 0, 0},   // evicts 0 → 5:0 7:0 8:0
		{9, 0, 9},   // all premium: premium refused
		{10, 3, 10}, // free refused
	}
	for _, st := range steps {
		arrive(t, g, context.Background(), st.id, st.prio, out)
		r := <-out
		if r.id != st.shed || !errors.Is(r.err, ErrShed) {
			t.Fatalf("arrival %d (priority %d): %d answered %v, want %d shed", st.id, st.prio, r.id, r.err, st.shed)
		}
	}
	// Left: 5, 7, 8, granted in arrival order.
	held[0].Release()
	for _, id := range []int{5, 7, 8} {
		r := <-out
		if r.err != nil || r.id != id {
			t.Fatalf("grant went to %d (err %v), want %d", r.id, r.err, id)
		}
		r.p.Release()
	}
}

func TestGateMaxWaitSheds(t *testing.T) {
	g := mustGate(t, GateSettings{Limit: 1, MaxWait: time.Millisecond}, nil)
	held := holdAll(t, g)
	defer held[0].Release()
	if _, err := g.Acquire(context.Background(), 0); !errors.Is(err, ErrShed) {
		t.Fatalf("err = %v, want ErrShed after MaxWait", err)
	}
	if s := g.Stats(); s.Waiting != 0 || s.InFlight != 1 {
		t.Fatalf("after the wait ran out: %+v", s)
	}
}

func TestGateHonoursContext(t *testing.T) {
	g := mustGate(t, GateSettings{Limit: 1, MaxWait: time.Hour}, nil)
	held := holdAll(t, g)
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan result, 1)
	arrive(t, g, ctx, 0, 0, out)
	cancel()
	if r := <-out; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", r.err)
	}
	if _, err := g.Acquire(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("ended ctx: err = %v", err)
	}
	held[0].Release()
	if s := g.Stats(); s.Waiting != 0 || s.InFlight != 0 {
		t.Fatalf("after cancel: %+v, want nothing queued or held", s)
	}
}

func TestGateSetLimitGrowAdmitsWaiters(t *testing.T) {
	g := mustGate(t, GateSettings{Limit: 1, MaxWait: time.Hour}, nil)
	held := holdAll(t, g)
	out := make(chan result, 3)
	for id := range 3 {
		arrive(t, g, context.Background(), id, id, out)
	}
	g.SetLimit(4)
	for range 3 {
		r := <-out
		if r.err != nil {
			t.Fatalf("waiter %d: %v", r.id, r.err)
		}
		defer r.p.Release()
	}
	held[0].Release()
	if got := g.InFlight(); got != 3 {
		t.Fatalf("in flight = %d, want 3", got)
	}
}

func TestGateSetLimitShrinkTakesNothing(t *testing.T) {
	g := mustGate(t, GateSettings{Limit: 4, MinLimit: 2, MaxWait: time.Millisecond}, nil)
	held := holdAll(t, g)
	g.SetLimit(1) // below MinLimit: 2
	if got := g.Limit(); got != 2 {
		t.Fatalf("limit = %d, want MinLimit 2", got)
	}
	if got := g.InFlight(); got != 4 {
		t.Fatalf("in flight = %d after shrinking, want the 4 still held", got)
	}
	for i, p := range held[:2] {
		p.Release()
		if _, err := g.Acquire(context.Background(), 0); !errors.Is(err, ErrShed) {
			t.Fatalf("%d held, limit 2: err = %v, want ErrShed", 3-i, err)
		}
	}
	held[2].Release()
	p, err := g.Acquire(context.Background(), 0)
	if err != nil {
		t.Fatalf("1 held, limit 2: %v", err)
	}
	p.Release()
	held[3].Release()
}

func TestGateTakeWindow(t *testing.T) {
	c := newFakeClock()
	g := mustGate(t, GateSettings{Limit: 8, Now: c.Now}, nil)
	ctx := context.Background()
	a, _ := g.Acquire(ctx, 0)
	b, _ := g.Acquire(ctx, 1)
	d, _ := g.Acquire(ctx, 2)
	c.Set(t0.Add(10 * time.Millisecond))
	a.Release()
	a.Release() // no second sample
	e, _ := g.Acquire(ctx, 0)
	c.Set(t0.Add(30 * time.Millisecond))
	b.Release()
	d.Discard() // no sample
	n, avg, fastest, peak := g.TakeWindow()
	if n != 2 || avg != 20*time.Millisecond || fastest != 10*time.Millisecond || peak != 3 {
		t.Fatalf("TakeWindow = (%d, %v, %v, %d), want (2, 20ms, 10ms, 3)", n, avg, fastest, peak)
	}
	n, avg, fastest, peak = g.TakeWindow()
	if n != 0 || avg != 0 || fastest != 0 || peak != 1 {
		t.Fatalf("empty TakeWindow = (%d, %v, %v, %d), want (0, 0, 0, 1 held now)", n, avg, fastest, peak)
	}
	c.Set(t0.Add(35 * time.Millisecond))
	e.Release()
	if n, avg, fastest, _ = g.TakeWindow(); n != 1 || avg != 25*time.Millisecond || fastest != avg {
		t.Fatalf("TakeWindow = (%d, %v, %v), want (1, 25ms, 25ms)", n, avg, fastest)
	}
}

func TestGateMetrics(t *testing.T) {
	m, reg := mustMetrics(t)
	g, err := NewGate("api", GateSettings{Limit: 1, MaxQueue: 1, MaxWait: time.Hour}, m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewGate("api", GateSettings{}, m); err == nil || !strings.Contains(err.Error(), `a gate named "api" is already attached`) {
		t.Fatalf("a second gate named api: err = %v", err)
	}
	_ = mustNew(t, "route", Settings{Limit: 3}, m)
	held := holdAll(t, g)
	out := make(chan result, 4)
	arrive(t, g, context.Background(), 0, 9, out) // queued
	arrive(t, g, context.Background(), 1, 2, out) // evicts 0 (priority 9, label 7)
	arrive(t, g, context.Background(), 2, 5, out) // refused
	expectMetric(t, reg, MetricBulkheadInFlight, map[string]float64{"api": 1, "route": 0})
	expectMetric(t, reg, MetricConcurrencyLimit, map[string]float64{"api": 1, "route": 3})
	expectMetric(t, reg, MetricBulkheadRejected, map[string]float64{"api": 2, "route": 0})
	for p, want := range map[string]float64{"0": 0, "2": 0, "5": 1, "7": 1} {
		if got := testutil.ToFloat64(m.shed.WithLabelValues("api", p)); got != want {
			t.Errorf("%s{name=api,priority=%s} = %v, want %v", MetricBulkheadShed, p, got, want)
		}
	}
	if n := testutil.CollectAndCount(m.shed, MetricBulkheadShed); n != shedLabels {
		t.Errorf("%d shed series, want %d (priority labels are bounded)", n, shedLabels)
	}
	g.SetLimit(2)
	if r := <-out; r.err == nil {
		r.p.Release()
	}
	expectMetric(t, reg, MetricConcurrencyLimit, map[string]float64{"api": 2, "route": 3})
	held[0].Release()
	g.Close()
	expectMetric(t, reg, MetricConcurrencyLimit, map[string]float64{"route": 3})
	expectMetric(t, reg, MetricBulkheadRejected, map[string]float64{"route": 0})
	if n := testutil.CollectAndCount(m.shed, MetricBulkheadShed); n != 0 {
		t.Errorf("%d shed series after Close, want 0", n)
	}
	if _, err := NewGate("api", GateSettings{}, m); err != nil {
		t.Fatalf("the name after Close: %v", err)
	}
}

// The Gate shares take with the Bulkhead: a SetLimit that shrinks the limit
// between an acquisition's read of it and its count leaves no permit above
// the new limit (as TestShrinkDuringAcquireAdmitsNothingAbove), and the
// peak counts only permits kept.
func TestGateShrinkDuringAcquireAdmitsNothingAbove(t *testing.T) {
	g := mustGate(t, GateSettings{Limit: 2, MinLimit: 1}, nil)
	held, err := g.Acquire(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	hookBeforeCount = func() { hookBeforeCount = nil; g.SetLimit(1) }
	defer func() { hookBeforeCount = nil }()
	p, err := g.Acquire(context.Background(), 0)
	if err == nil {
		p.Release()
		t.Fatalf("a permit was taken above the shrunk limit %d (want a refusal)", g.Limit())
	}
	if g.InFlight() != 1 || g.peak.Load() != 1 {
		t.Errorf("err %v, %d in flight, peak %d; want 1 and 1", err, g.InFlight(), g.peak.Load())
	}
}

// TestGateCountsTopPriorityCalls: TopAsked counts every call of priority 0
// (a negative priority is 0), admitted or refused, and no other.
func TestGateCountsTopPriorityCalls(t *testing.T) {
	g := mustGate(t, GateSettings{Limit: 1, MaxWait: time.Millisecond, TopMaxWait: time.Millisecond}, nil)
	held, err := g.Acquire(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	for _, p := range []int{-1, 1, 0, 2} { // all at the limit: shed
		if _, err := g.Acquire(context.Background(), p); !errors.Is(err, ErrShed) {
			t.Fatalf("priority %d at the limit: err = %v, want ErrShed", p, err)
		}
	}
	if got := g.TopAsked(); got != 3 {
		t.Errorf("TopAsked = %d after 3 calls of priority 0 (one admitted, one of priority -1) and 2 others, want 3", got)
	}
	if asked, refused := g.Refusals(); asked != 5 || refused != 4 {
		t.Errorf("Refusals = %d asked, %d refused, want 5, 4", asked, refused)
	}
}
