package overload

import (
	"strings"
	"testing"
	"time"
)

const target = 250 * time.Millisecond

// lat is n 2xx answered in d.
type lat struct {
	n int
	d time.Duration
}

// load builds one load's counts of a second: 2xx at the given latencies,
// then the other classes.
func load(oks []lat, other map[Class]int64) *Counts {
	c := &Counts{}
	for _, l := range oks {
		for range l.n {
			c.Class[OK]++
			c.Latency.Observe(l.d)
			if l.d <= target {
				c.WithinTarget++
			}
		}
	}
	for cl, n := range other {
		c.Class[cl] += n
	}
	return c
}

func fast(n int) []lat { return []lat{{n, 20 * time.Millisecond}} }

// steady is a normal second: premium 50/50, free 25/25, greedy 10 of 15.
func steady(k int, p Phase, capacity float64) Row {
	return Row{Second: k, Phase: p, Capacity: capacity, Loads: map[string]*Counts{
		"premium": load(fast(50), nil), "free": load(fast(25), nil),
		"greedy": load(fast(10), map[Class]int64{OverQuota: 5})}}
}

// surgeRows: 9 s; in the overload, second 3 is slow (400 ms), second 4
// is fine, second 5 loses 2 premium requests to backend 503s.
func surgeRows(capDuring float64) []Row {
	rows := make([]Row, 9)
	lay := layout{seconds: 9, third: 3}
	for k := range rows {
		rows[k] = steady(k, lay.phaseOf(k), 100)
	}
	slow := []lat{{50, 400 * time.Millisecond}}
	rows[3].Capacity, rows[4].Capacity, rows[5].Capacity = capDuring, capDuring, capDuring
	rows[3].Loads["premium"] = load(slow, nil)
	rows[3].Loads["free"] = load(slow, map[Class]int64{Shed: 200})
	rows[4].Loads["free"] = load(fast(40), map[Class]int64{Shed: 210})
	rows[5].Loads["premium"] = load(fast(48), map[Class]int64{Backend503: 2})
	rows[5].Loads["free"] = load(fast(30), map[Class]int64{Shed: 220, Bulkhead: 1, Breaker: 3})
	return rows
}

func TestSummarize(t *testing.T) {
	lay := layout{seconds: 9, third: 3}
	steadyPhase := PhaseReport{GoodputRatio: 0.85, PremiumAdmittedPct: 100, FreeAdmittedPct: 100, P99MS: 20,
		Status: Status{OverQuota: 15}}
	for _, tc := range []struct {
		name      string
		rows      func() []Row
		during    PhaseReport
		settle    float64
		lowest    float64
		wantAfter PhaseReport
	}{
		{"surge", func() []Row { return surgeRows(100) }, PhaseReport{
			// within: 10 + 100 + 88 over 300; premium 148/150; free 120/754;
			// 2xx: 100 at 400 ms, 198 at 20 ms: rank ⌈0.99·298⌉ = 296 is 400 ms.
			GoodputRatio: 0.66, PremiumAdmittedPct: 98.67, FreeAdmittedPct: 15.92, P99MS: 400,
			Status: Status{Backend503: 2, Shed: 630, OverQuota: 15, Breaker: 3, Bulkhead: 1}}, 1, 0.88, steadyPhase},
		{"slowdown halves capacity", func() []Row { return surgeRows(50) }, PhaseReport{
			GoodputRatio: 1.32, PremiumAdmittedPct: 98.67, FreeAdmittedPct: 15.92, P99MS: 400,
			Status: Status{Backend503: 2, Shed: 630, OverQuota: 15, Breaker: 3, Bulkhead: 1}}, 1, 1.76, steadyPhase},
		{"settled from the first second", func() []Row {
			r := surgeRows(100)
			r[3] = steady(3, During, 100)
			return r
		}, PhaseReport{GoodputRatio: 0.91, PremiumAdmittedPct: 98.67, FreeAdmittedPct: 17.96, P99MS: 20,
			Status: Status{Backend503: 2, Shed: 430, OverQuota: 15, Breaker: 3, Bulkhead: 1}}, 0, 0.88, steadyPhase},
		{"never settles", func() []Row {
			r := surgeRows(100)
			r[5].Loads["premium"] = load([]lat{{48, 300 * time.Millisecond}}, map[Class]int64{Backend503: 2})
			return r
		}, PhaseReport{GoodputRatio: 0.5, PremiumAdmittedPct: 98.67, FreeAdmittedPct: 15.92, P99MS: 400,
			Status: Status{Backend503: 2, Shed: 630, OverQuota: 15, Breaker: 3, Bulkhead: 1}}, -1, 0.4, steadyPhase},
		{"a second without 2xx is not settled", func() []Row {
			r := surgeRows(100)
			r[5].Loads = map[string]*Counts{"premium": load(nil, map[Class]int64{Backend503: 50}),
				"free": load(nil, map[Class]int64{Shed: 250})}
			return r
		}, PhaseReport{GoodputRatio: 0.367, PremiumAdmittedPct: 66.67, FreeAdmittedPct: 12, P99MS: 400,
			Status: Status{Backend503: 50, Shed: 660, OverQuota: 10}}, -1, 0, steadyPhase},
		{"nothing sent counts as all admitted", func() []Row {
			r := surgeRows(100)
			for k := 6; k < 9; k++ {
				r[k].Loads = map[string]*Counts{"premium": {}, "free": {}}
			}
			return r
		}, PhaseReport{GoodputRatio: 0.66, PremiumAdmittedPct: 98.67, FreeAdmittedPct: 15.92, P99MS: 400,
			Status: Status{Backend503: 2, Shed: 630, OverQuota: 15, Breaker: 3, Bulkhead: 1}}, 1, 0.88,
			PhaseReport{PremiumAdmittedPct: 100, FreeAdmittedPct: 100}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := summarize(Scenarios(100)["surge"], Controller, target, lay, tc.rows(), nil)
			if r.Phases.Before != steadyPhase {
				t.Errorf("before = %+v, want %+v", r.Phases.Before, steadyPhase)
			}
			if r.Phases.During != tc.during {
				t.Errorf("overload = %+v\nwant        %+v", r.Phases.During, tc.during)
			}
			if r.Phases.After != tc.wantAfter {
				t.Errorf("after = %+v, want %+v", r.Phases.After, tc.wantAfter)
			}
			if r.SettleS != tc.settle || r.LowestGoodputRatio != tc.lowest {
				t.Errorf("settle %v lowest %v, want %v and %v", r.SettleS, r.LowestGoodputRatio, tc.settle, tc.lowest)
			}
			if r.Scenario != "surge" || r.Mode != "controller" || r.CapacityRPS != 100 || r.TargetMS != 250 {
				t.Errorf("header %q %q %v %v", r.Scenario, r.Mode, r.CapacityRPS, r.TargetMS)
			}
		})
	}
}

// The totals are the sums of the rows, class by class.
func TestSummarizeTotalsAreRowSums(t *testing.T) {
	rows := surgeRows(100)
	r := summarize(Scenarios(100)["surge"], Off, target, layout{9, 3}, rows, nil)
	for name, tot := range r.Totals {
		var sum Counts
		for i := range rows {
			sum.Add(rows[i].Loads[name])
		}
		if sum.Class != tot.Class || sum.WithinTarget != tot.WithinTarget || sum.Latency.Count() != tot.Latency.Count() {
			t.Errorf("%s: totals %v, rows sum to %v", name, tot.Class, sum.Class)
		}
	}
	if got := r.Totals["free"].Class[Shed]; got != 630 {
		t.Fatalf("free shed total %d, want 630", got)
	}
}

func TestSummarizeMultipliers(t *testing.T) {
	s := func(at float64, free float64) sample {
		return sample{time.Duration(at * float64(time.Second)), map[string]float64{"free": free, "premium": 1}}
	}
	// 9 s: steady-state windows [1.5,3) [4.5,6) [7.5,9), 4.5 s in all.
	samples := []sample{s(0, 1), s(3.2, 0.5), s(4.6, 0.6), s(5, 0.3), s(5.5, 0.4), s(7, 0.5), s(8, 1)}
	r := summarize(Scenarios(100)["surge"], Controller, target, layout{9, 3}, surgeRows(100), samples)
	// In [4.5, 6): 0.5 → 0.6 up, 0.3 down (flip), 0.4 up (flip); [7.5, 9): 0.5 → 1 up, no flip.
	if r.FlipsPerMin != round(2/0.075, 2) {
		t.Errorf("flips/min %v, want %v", r.FlipsPerMin, round(2/0.075, 2))
	}
	if r.RecoveryS != 2 {
		t.Errorf("recovery %v s, want 2 (overload ends at 6 s, whole again at 8 s)", r.RecoveryS)
	}
	// Still below 1 when the run ends: −1 (it read −0 when −1 ns became seconds).
	never := summarize(Scenarios(100)["surge"], Controller, target, layout{9, 3}, surgeRows(100), samples[:6])
	if never.RecoveryS != -1 {
		t.Errorf("recovery %v s with free still at 0.5 at the end, want -1", never.RecoveryS)
	}
}

func TestRecovery(t *testing.T) {
	at := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	m := func(kv ...float64) map[string]float64 {
		out := map[string]float64{}
		names := []string{"free", "premium"}
		for i, v := range kv {
			out[names[i]] = v
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		samples []sample
		want    time.Duration
	}{
		{"no samples", nil, 0},
		{"never below 1", []sample{{0, m(1, 1)}}, 0},
		{"back before the overload ended", []sample{{0, m(1, 1)}, {at(3), m(0.5, 1)}, {at(4), m(1, 1)}}, 0},
		{"back after 2.5 s", []sample{{at(3), m(0.5, 1)}, {at(7), m(0.8, 1)}, {at(8.5), m(1, 1)}}, at(2.5)},
		{"every tier must be back", []sample{{at(3), m(0.5, 0.9)}, {at(7), m(1, 0.9)}, {at(9), m(1, 1)}}, at(3)},
		{"a later dip counts", []sample{{at(3), m(0.5, 1)}, {at(7), m(1, 1)}, {at(8), m(0.9, 1)}, {at(9.2), m(1, 1)}}, at(3.2)},
		{"a missing tier is at 1", []sample{{at(3), m(0.5)}, {at(7), map[string]float64{}}}, at(1)},
		{"never back", []sample{{at(3), m(0.5, 1)}, {at(7), m(0.9, 1)}}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := recovery(tc.samples, at(6)); got != tc.want {
				t.Fatalf("recovery = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFlips(t *testing.T) {
	at := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	saw := []sample{
		{0, map[string]float64{"free": 1}}, {at(1), map[string]float64{"free": 0.5}},
		{at(2), map[string]float64{"free": 0.6}}, {at(3), map[string]float64{"free": 0.7}},
		{at(4), map[string]float64{"free": 0.35, "premium": 0.9}}, {at(5), map[string]float64{"free": 0.45, "premium": 1}},
		{at(6), map[string]float64{"free": 0.45, "premium": 0.9}},
	}
	for _, tc := range []struct {
		name     string
		from, to float64
		want     int
	}{
		{"whole run", 0, 10, 3 + 2},                 // free: down, up, (up), down, up; premium: (1), 0.9, 1, 0.9
		{"from 2.5 s", 2.5, 10, 2 + 2},              // free from 0.6: up, down, up; premium as above
		{"window ends early", 0, 4.5, 2},            // free: down, up, up, down
		{"flat window", 6.5, 10, 0},                 // nothing changes
		{"a change at from is the start", 4, 10, 1}, // free: 0.35 → 0.45 up; premium 0.9 → 1 → 0.9
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := flips(saw, at(tc.from), at(tc.to)); got != tc.want {
				t.Fatalf("flips = %d, want %d", got, tc.want)
			}
		})
	}
}

// The headline names scenario/mode, and the front unless it is the proxy;
// a settle or recovery of −1 reads never / not within the run.
func TestHeadline(t *testing.T) {
	r := Report{Scenario: "surge", Mode: "controller", TargetMS: 250}
	r.Phases.During.PremiumAdmittedPct = 99.5
	for _, tc := range []struct {
		front            string
		settle, recovery float64
		want             []string
	}{
		{"proxy", 1, 2.5, []string{"surge/controller: premium admitted 99.5%", "settle 1 s, recovery 2.5 s"}},
		{"echo", -1, -1, []string{"surge/controller/echo: ", "settle never, recovery not within the run"}},
	} {
		r.Front, r.SettleS, r.RecoveryS = tc.front, tc.settle, tc.recovery
		for _, w := range tc.want {
			if h := r.Headline(); !strings.Contains(h, w) {
				t.Errorf("%s: headline %q lacks %q", tc.front, h, w)
			}
		}
	}
}

// TestSummarizeAfterShedLate counts what the after phase shed from its
// third second on (multiplier, cap and gate alike), not its first two.
func TestSummarizeAfterShedLate(t *testing.T) {
	rows := make([]Row, 12)
	lay := layout{seconds: 12, third: 4} // after: seconds 8..11
	for k := range rows {
		rows[k] = steady(k, lay.phaseOf(k), 100)
	}
	rows[5].Loads["free"] = load(fast(5), map[Class]int64{Shed: 300})  // the overload: not counted
	rows[8].Loads["free"] = load(fast(5), map[Class]int64{Shed: 100})  // grace
	rows[9].Loads["free"] = load(fast(5), map[Class]int64{Capped: 50}) // grace
	rows[10].Loads["free"] = load(fast(20), map[Class]int64{Shed: 4, Capped: 2, Gated: 1, OverQuota: 9})
	rows[11].Loads["premium"] = load(fast(50), map[Class]int64{Gated: 3})
	r := summarize(Scenarios(100)["slowdown"], Controller, target, lay, rows, nil)
	if r.AfterShedLate != 10 {
		t.Fatalf("after_shed_late = %d, want 10 (4 shed + 2 capped + 1 gated in second 10, 3 gated in 11; not quota, not the grace)", r.AfterShedLate)
	}
}
