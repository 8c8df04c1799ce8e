package controller

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// t0 is the first fixed instant of the table tests; steps are offsets from it.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

const s = time.Second

// threeTiers: premium, standard, free, in that priority, listed out of order
// so that the law's own ordering is exercised.
func threeTiers() Settings {
	return Settings{
		Tiers: []Tier{
			{Name: "free", Priority: 2, Beta: 0.5, Floor: 0.1, Alpha: 0.25},
			{Name: "premium", Priority: 0, Beta: 0.9, Floor: 0.5, Alpha: 0.125},
			{Name: "standard", Priority: 1, Beta: 0.7, Floor: 0.3, Alpha: 0.2},
		},
		Headroom:         0.2,
		Cooldown:         10 * s,
		HoldTimeout:      30 * s,
		SignalStaleAfter: 15 * s,
	}
}

func mustLaw(t *testing.T, st Settings) *Law {
	t.Helper()
	law, err := NewLaw(st)
	if err != nil {
		t.Fatalf("NewLaw: %v", err)
	}
	return law
}

// latency is one latency signal against a target of 1, measured at d.
func latency(v float64, d time.Duration) Input {
	return Input{Signals: []Signal{{Name: "latency_p99", Value: v, Target: 1, Valid: true, At: at(d)}}}
}

// state builds a State at t0 (LastValid t0) with the given multipliers.
func state(m ...float64) State {
	names := []string{"premium", "standard", "free"}
	st := State{LastValid: t0, At: t0}
	for i, v := range m {
		st.Tiers = append(st.Tiers, TierState{Name: names[i], Multiplier: v})
	}
	return st
}

// step is one row of a law table: the input at offset d and what must follow.
type step struct {
	d     time.Duration
	in    Input
	want  []float64 // multipliers in priority order
	acts  string    // actions in priority order, space separated
	cond  Condition
	epoch uint64
}

func runSteps(t *testing.T, law *Law, st State, steps []step) State {
	t.Helper()
	for i, c := range steps {
		st = law.Step(st, c.in, at(c.d))
		var got []float64
		var acts []string
		for _, ts := range st.Tiers {
			got = append(got, ts.Multiplier)
			acts = append(acts, ts.LastAction.String())
		}
		if !near(got, c.want) || strings.Join(acts, " ") != c.acts || st.Condition != c.cond || st.Epoch != c.epoch {
			t.Fatalf("step %d (t0+%v): got %v [%s] %v epoch %d; want %v [%s] %v epoch %d",
				i, c.d, got, strings.Join(acts, " "), st.Condition, st.Epoch, c.want, c.acts, c.cond, c.epoch)
		}
	}
	return st
}

func near(a, b []float64) bool {
	return slices.EqualFunc(a, b, func(x, y float64) bool { return math.Abs(x-y) < 1e-9 })
}

const (
	hhh = "hold hold hold"
	hhd = "hold hold decrease"
	hdh = "hold decrease hold"
	dhh = "decrease hold hold"
	ihh = "increase hold hold"
	hih = "hold increase hold"
	hhi = "hold hold increase"
	hhr = "hold hold recover"
	rhh = "recover hold hold"
)

func TestStepSustainedOverloadCutsLowestTierToFloorFirst(t *testing.T) {
	law := mustLaw(t, threeTiers())
	over := func(d time.Duration) Input { return latency(2, d) }
	ov := ConditionOverloaded
	runSteps(t, law, law.Init(t0), []step{
		{0 * s, over(0), []float64{1, 1, 0.5}, hhd, ov, 1},
		{10 * s, over(10 * s), []float64{1, 1, 0.25}, hhd, ov, 2},
		{20 * s, over(20 * s), []float64{1, 1, 0.125}, hhd, ov, 3},
		{30 * s, over(30 * s), []float64{1, 1, 0.1}, hhd, ov, 4}, // max(floor, 0.0625)
		{40 * s, over(40 * s), []float64{1, 0.7, 0.1}, hdh, ov, 5},
		{50 * s, over(50 * s), []float64{1, 0.49, 0.1}, hdh, ov, 6},
		{60 * s, over(60 * s), []float64{1, 0.343, 0.1}, hdh, ov, 7},
		{70 * s, over(70 * s), []float64{1, 0.3, 0.1}, hdh, ov, 8},
		{80 * s, over(80 * s), []float64{0.9, 0.3, 0.1}, dhh, ov, 9},
		{90 * s, over(90 * s), []float64{0.81, 0.3, 0.1}, dhh, ov, 10},
	})
}

// Near the band (0.79 against a band edge of 0.8) the room is a factor of
// 1.013, less than α: the increase is additive.
func TestStepHealthyRaisesHighestPriorityFirstUpToCeiling(t *testing.T) {
	law := mustLaw(t, threeTiers())
	ok := func(d time.Duration) Input { return latency(0.79, d) }
	h := ConditionHealthy
	runSteps(t, law, state(0.5, 0.3, 0.1), []step{
		{5 * s, ok(5 * s), []float64{0.625, 0.3, 0.1}, ihh, h, 1},
		{10 * s, ok(10 * s), []float64{0.75, 0.3, 0.1}, ihh, h, 2},
		{15 * s, ok(15 * s), []float64{0.875, 0.3, 0.1}, ihh, h, 3},
		{20 * s, ok(20 * s), []float64{1, 0.3, 0.1}, ihh, h, 4},
		{25 * s, ok(25 * s), []float64{1, 0.5, 0.1}, hih, h, 5},
		{30 * s, ok(30 * s), []float64{1, 0.7, 0.1}, hih, h, 6},
		{35 * s, ok(35 * s), []float64{1, 0.9, 0.1}, hih, h, 7},
		{40 * s, ok(40 * s), []float64{1, 1, 0.1}, hih, h, 8}, // min(ceiling, 1.1)
		{45 * s, ok(45 * s), []float64{1, 1, 0.35}, hhi, h, 9},
		{50 * s, ok(50 * s), []float64{1, 1, 0.6}, hhi, h, 10},
		{55 * s, ok(55 * s), []float64{1, 1, 0.85}, hhi, h, 11},
		{60 * s, ok(60 * s), []float64{1, 1, 1}, hhi, h, 12},
		{65 * s, ok(65 * s), []float64{1, 1, 1}, hhh, h, 12}, // all at ceiling: epoch unchanged
	})
}

func TestStepRoundingNeverCostsAStep(t *testing.T) {
	// 0.5 + 5 × 0.1 is 0.9999999999999999 in float64; the law snaps to 1.
	law := mustLaw(t, Settings{Tiers: []Tier{{Name: "x", Alpha: 0.1}}})
	st := State{Tiers: []TierState{{Name: "x", Multiplier: 0.5}}}
	for i := range 5 {
		st = law.Step(st, latency(0.1, time.Duration(i)*s), at(time.Duration(i)*s))
	}
	if m, _ := st.Multiplier("x"); m != 1 {
		t.Fatalf("after 5 increases of 0.1 from 0.5: %v, want exactly 1", m)
	}
}

func TestStepPriorityTiesBrokenByName(t *testing.T) {
	law := mustLaw(t, Settings{Cooldown: s, Tiers: []Tier{
		{Name: "beta", Priority: 1, Floor: 0.5, Alpha: 0.5},
		{Name: "zeta", Priority: 0, Floor: 0.5, Alpha: 0.5},
		{Name: "alpha", Priority: 1, Floor: 0.5, Alpha: 0.5},
	}})
	st := law.Init(t0)
	if got := st.String(); got != "zeta=1.00 alpha=1.00 beta=1.00 epoch=0" {
		t.Fatalf("order: %s", got)
	}
	var cut []string
	for i := range 4 {
		d := time.Duration(i) * s
		st = law.Step(st, latency(2, d), at(d))
		cut = append(cut, changed(st, ActionDecrease))
	}
	if want := []string{"beta", "alpha", "zeta", ""}; !slices.Equal(cut, want) {
		t.Fatalf("cut order %v, want %v (lowest priority first, ties: later name first)", cut, want)
	}
	for i := range st.Tiers {
		st.Tiers[i].Knee = 0 // each would be approached in parts, over more steps
	}
	var raised []string
	for i := range 4 {
		d := time.Duration(10+i) * s
		st = law.Step(st, latency(0.1, d), at(d))
		raised = append(raised, changed(st, ActionIncrease))
	}
	if want := []string{"zeta", "alpha", "beta", ""}; !slices.Equal(raised, want) {
		t.Fatalf("raise order %v, want %v", raised, want)
	}
}

// changed names the tier that got action a in the last step, or "".
func changed(st State, a Action) string {
	for _, ts := range st.Tiers {
		if ts.LastAction == a {
			return ts.Name
		}
	}
	return ""
}

func TestStepAtFloorsAndCeilingsHolds(t *testing.T) {
	law := mustLaw(t, threeTiers())
	runSteps(t, law, state(0.5, 0.3, 0.1), []step{
		{0, latency(9, 0), []float64{0.5, 0.3, 0.1}, hhh, ConditionOverloaded, 0},
		{20 * s, latency(9, 20*s), []float64{0.5, 0.3, 0.1}, hhh, ConditionOverloaded, 0},
	})
	runSteps(t, law, state(1, 1, 1), []step{
		{0, latency(0, 0), []float64{1, 1, 1}, hhh, ConditionHealthy, 0},
	})
}

func TestStepHysteresisBand(t *testing.T) {
	law := mustLaw(t, threeTiers()) // headroom 0.2: healthy below 0.8 × target
	two := func(a, b float64) Input {
		return Input{Signals: []Signal{
			{Name: "latency_p99", Value: a, Target: 1, Valid: true},
			{Name: "error_ratio", Value: b, Target: 0.01, Valid: true},
		}}
	}
	cases := []struct {
		name string
		in   Input
		want float64 // free tier, from 0.5
		cond Condition
	}{
		{"at target", latency(1, 0), 0.5, ConditionBand},
		{"at band edge", latency(0.8, 0), 0.5, ConditionBand},
		{"inside band", latency(0.9, 0), 0.5, ConditionBand},
		{"just below band", latency(0.79, 0), 0.75, ConditionHealthy},
		{"just above target", latency(1.01, 0), 0.5 / 1.01, ConditionOverloaded},
		{"+Inf value is overload", latency(math.Inf(1), 0), 0.25, ConditionOverloaded},
		{"healthy and band", two(0.1, 0.009), 0.5, ConditionBand},
		{"healthy and over", two(0.1, 0.02), 0.25, ConditionOverloaded},
		{"both healthy", two(0.1, 0.001), 1, ConditionHealthy},
		{"healthy and unusable", two(0.1, math.NaN()), 1, ConditionHealthy},
		{"worst healthy sizes the growth", two(0.5, 0.001), 0.8, ConditionHealthy},
		{"over and unusable", two(math.NaN(), 0.5), 0.25, ConditionOverloaded},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := law.Step(state(1, 1, 0.5), c.in, t0)
			if m, _ := st.Multiplier("free"); math.Abs(m-c.want) > 1e-12 || st.Condition != c.cond {
				t.Fatalf("free %v (%v), want %v (%v)", m, st.Condition, c.want, c.cond)
			}
		})
	}
}

func TestStepCooldownBetweenDecreasesOnly(t *testing.T) {
	law := mustLaw(t, threeTiers()) // cooldown 10 s
	ov, h := ConditionOverloaded, ConditionHealthy
	runSteps(t, law, law.Init(t0), []step{
		{0, latency(2, 0), []float64{1, 1, 0.5}, hhd, ov, 1},
		{5 * s, latency(2, 5*s), []float64{1, 1, 0.5}, hhh, ov, 1},
		{9999 * time.Millisecond, latency(2, 9*s), []float64{1, 1, 0.5}, hhh, ov, 1},
		{10 * s, latency(2, 10*s), []float64{1, 1, 0.25}, hhd, ov, 2},
		// Increases have no cool-down: one right after a cut (halfway back to the 0.5 it was cut from).
		{11 * s, latency(0.1, 11*s), []float64{1, 1, 0.375}, hhi, h, 3},
		{12 * s, latency(0.1, 12*s), []float64{1, 1, 0.4375}, hhi, h, 4},
		// The cool-down counts from the last cut (t0+10 s), whatever happened since.
		{13 * s, latency(2, 13*s), []float64{1, 1, 0.4375}, hhh, ov, 4},
		{20 * s, latency(2, 20*s), []float64{1, 1, 0.21875}, hhd, ov, 5},
		// A clock that steps backwards never allows an early cut.
		{15 * s, latency(2, 15*s), []float64{1, 1, 0.21875}, hhh, ov, 5},
	})
}

func TestStepCooldownSpansTiers(t *testing.T) {
	law := mustLaw(t, threeTiers())
	runSteps(t, law, state(1, 1, 0.1), []step{
		{0, latency(2, 0), []float64{1, 0.7, 0.1}, hdh, ConditionOverloaded, 1},
		{5 * s, latency(2, 5*s), []float64{1, 0.7, 0.1}, hhh, ConditionOverloaded, 1},
	})
}

func BenchmarkStep(b *testing.B) {
	law, err := NewLaw(threeTiers())
	if err != nil {
		b.Fatal(err)
	}
	in := Input{Signals: []Signal{
		{Name: "latency_p99", Value: 2, Target: 1, Valid: true, At: t0},
		{Name: "error_ratio", Value: 0.001, Target: 0.01, Valid: true, At: t0},
	}}
	st := law.Init(t0)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		st = law.Step(st, in, t0.Add(time.Duration(i)*time.Second))
	}
}
