package controller

import (
	"math"
	"testing"
	"time"
)

// Tests of how far one step moves: cuts in proportion to the overload,
// growth in proportion to the headroom, and the tier-wide rate caps.

// admitted is in with measured admitted rates for free, standard, premium.
func admitted(in Input, free, standard, premium float64) Input {
	in.Admitted = map[string]float64{"free": free, "standard": standard, "premium": premium}
	return in
}

// rateStep is a table row that also checks the rate caps.
type rateStep struct {
	step
	rates []float64 // in priority order
}

func runRateSteps(t *testing.T, law *Law, st State, steps []rateStep) State {
	t.Helper()
	for i, c := range steps {
		st = runSteps(t, law, st, []step{c.step})
		if got := rates(st); !near(got, c.rates) {
			t.Fatalf("step %d (t0+%v): rates %v, want %v (%v)", i, c.d, got, c.rates, st)
		}
	}
	return st
}

// rates lists the rate caps of st in priority order.
func rates(st State) []float64 {
	var r []float64
	for _, ts := range st.Tiers {
		r = append(r, ts.Rate)
	}
	return r
}

func TestStepCutIsProportionalToOverload(t *testing.T) {
	law := mustLaw(t, threeTiers()) // free β 0.5, standard β 0.7
	ov := ConditionOverloaded
	cases := []struct {
		name    string
		latency float64 // against a target of 1
		from    []float64
		want    []float64
		acts    string
	}{
		{"small overload, small cut", 1.25, []float64{1, 1, 1}, []float64{1, 1, 0.8}, hhd},
		{"larger overload, larger cut", 1.6, []float64{1, 1, 1}, []float64{1, 1, 0.625}, hhd},
		{"at the β bound", 2, []float64{1, 1, 1}, []float64{1, 1, 0.5}, hhd},
		{"beyond it, β", 4, []float64{1, 1, 1}, []float64{1, 1, 0.5}, hhd},
		{"+Inf, β", math.Inf(1), []float64{1, 1, 1}, []float64{1, 1, 0.5}, hhd},
		{"never below the floor", 1.25, []float64{1, 1, 0.12}, []float64{1, 1, 0.1}, hhd},
		{"floor, then the next tier in proportion", 1.25, []float64{1, 1, 0.1}, []float64{1, 0.8, 0.1}, hdh},
		{"next tier bounded by its own β", 3, []float64{1, 1, 0.1}, []float64{1, 0.7, 0.1}, hdh},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			runSteps(t, law, state(c.from...), []step{{0, latency(c.latency, 0), c.want, c.acts, ov, 1}})
		})
	}
}

func TestStepCutFollowsWorstSignal(t *testing.T) {
	law := mustLaw(t, threeTiers())
	in := Input{Signals: []Signal{
		{Name: "latency", Value: 1.25, Target: 1, Valid: true},
		{Name: "error_ratio", Value: 0.016, Target: 0.01, Valid: true}, // 1.6× its target
	}}
	runSteps(t, law, state(1, 1, 1), []step{{0, in, []float64{1, 1, 0.625}, hhd, ConditionOverloaded, 1}})
}

// With the default settings (α 0.1, growth 4, headroom 0.1) a tier at 0.1
// is back at 1 within two periods when the signals are far below target:
// the inner loop catches an overshoot within its interval, so the outer
// loop may recover fast.
func TestStepRecoversFastWithDeepHeadroom(t *testing.T) {
	law := mustLaw(t, Settings{Tiers: []Tier{{Name: "free"}}})
	h := ConditionHealthy
	st := State{LastValid: t0, Tiers: []TierState{{Name: "free", Multiplier: 0.1}}}
	runSteps(t, law, st, []step{
		{1 * s, latency(0.2, 1*s), []float64{0.4}, "increase", h, 1}, // room 0.9/0.2 = 4.5: growth 4
		{2 * s, latency(0.2, 2*s), []float64{1}, "increase", h, 2},
	})
}

// Just below the band (0.85 against an edge at 0.9), the room (×1.06) is
// less than α: the tier gains α per period, as additive increase does.
// Between the two, the room sets the factor.
func TestStepRecoversCautiouslyNearTheBand(t *testing.T) {
	law := mustLaw(t, Settings{Tiers: []Tier{{Name: "free"}}})
	h := ConditionHealthy
	st := State{LastValid: t0, Tiers: []TierState{{Name: "free", Multiplier: 0.1}}}
	runSteps(t, law, st, []step{
		{1 * s, latency(0.85, 1*s), []float64{0.2}, "increase", h, 1},
		{2 * s, latency(0.85, 2*s), []float64{0.3}, "increase", h, 2},
		{3 * s, latency(0.85, 3*s), []float64{0.4}, "increase", h, 3},
		{4 * s, latency(0.6, 4*s), []float64{0.6}, "increase", h, 4},   // room 1.5
		{5 * s, latency(0.75, 5*s), []float64{0.72}, "increase", h, 5}, // room 1.2
	})
}

func TestStepGrowthOneIsAdditive(t *testing.T) {
	law := mustLaw(t, Settings{Tiers: []Tier{{Name: "free", Growth: 1}}})
	st := State{LastValid: t0, Tiers: []TierState{{Name: "free", Multiplier: 0.1}}}
	runSteps(t, law, st, []step{
		{1 * s, latency(0, 1*s), []float64{0.2}, "increase", ConditionHealthy, 1},
		{2 * s, latency(0.01, 2*s), []float64{0.3}, "increase", ConditionHealthy, 2},
	})
}

// TestStepSteadyInBandDoesNotMove: ten steps with the signals anywhere in
// the band [0.8, 1] (headroom 0.2) change nothing, caps included.
func TestStepSteadyInBandDoesNotMove(t *testing.T) {
	law := mustLaw(t, threeTiers())
	st := state(1, 0.6, 0.2)
	st.Tiers[1].Rate, st.Tiers[2].Rate = 300, 40
	b, band := hhh, ConditionBand
	steps := []rateStep{}
	for i, v := range []float64{0.8, 0.85, 1, 0.9, 0.95, 0.8, 0.99, 0.81, 1, 0.9} {
		d := time.Duration(i) * s
		in := admitted(latency(v, d), 45, 290, 500)
		steps = append(steps, rateStep{step{d, in, []float64{1, 0.6, 0.2}, b, band, 0}, []float64{0, 300, 40}})
	}
	runRateSteps(t, law, st, steps)
}

func TestStepRateCapFollowsMultiplier(t *testing.T) {
	law := mustLaw(t, threeTiers()) // cooldown 10 s, headroom 0.2
	ov, h := ConditionOverloaded, ConditionHealthy
	third := 50.0 * 2 / 3
	st := runRateSteps(t, law, state(1, 1, 1), []rateStep{
		// Keep 0.8 of 800 req/s: free (400 of them) sheds the whole excess,
		// 1 − 0.2 × 800/400 = 0.6; its cap the measured 400 × 0.6.
		{step{0, admitted(latency(1.25, 0), 400, 300, 100), []float64{1, 1, 0.6}, hhd, ov, 1}, []float64{0, 0, 240}},
		// Keep 0.5: more than free carries; β bounds the cut. The cap (240)
		// is lower than the measured 350 (a 1 m window still full of the
		// uncapped rate).
		{step{10 * s, admitted(latency(2, 10*s), 350, 300, 100), []float64{1, 1, 0.3}, hhd, ov, 2}, []float64{0, 0, 120}},
		// Cut again: the measured 100 is lower than the cap.
		{step{20 * s, admitted(latency(4, 20*s), 100, 300, 100), []float64{1, 1, 0.15}, hhd, ov, 3}, []float64{0, 0, 50}},
		// The floor (0.1) bounds the cut: the cap follows 0.1/0.15.
		{step{30 * s, admitted(latency(4, 30*s), 60, 300, 100), []float64{1, 1, 0.1}, hhd, ov, 4}, []float64{0, 0, third}},
		// Free at its floor: the next tier sheds the excess, 1 − 0.2 ×
		// 420/300 = 0.72, and gets its own cap; free's stays.
		{step{40 * s, admitted(latency(1.25, 40*s), 20, 300, 100), []float64{1, 0.72, 0.1}, hdh, ov, 5}, []float64{0, 216, third}},
	})
	// Increases scale the cap by the multiplier's ratio (the knees
	// forgotten: they have tests of their own); at the ceiling it goes.
	st.Tiers[1].Knee, st.Tiers[2].Knee = 0, 0
	runRateSteps(t, law, st, []rateStep{
		{step{41 * s, latency(0.64, 41*s), []float64{1, 0.92, 0.1}, hih, h, 6}, []float64{0, 276, third}},  // room 1.25: +α
		{step{42 * s, latency(0.79, 42*s), []float64{1, 1, 0.1}, hih, h, 7}, []float64{0, 0, third}},       // ceiling: no cap
		{step{43 * s, latency(0.4, 43*s), []float64{1, 1, 0.35}, hhi, h, 8}, []float64{0, 0, third * 3.5}}, // +α beats ×2
		{step{44 * s, latency(0.79, 44*s), []float64{1, 1, 0.6}, hhi, h, 9}, []float64{0, 0, third * 6}},
		{step{45 * s, latency(0.4, 45*s), []float64{1, 1, 1}, hhi, h, 10}, []float64{0, 0, 0}},
	})
}

// A signal that knows the fraction of the load to keep (the inner loop's
// refused fraction) sizes the cut with it rather than with target/value.
func TestStepCutUsesTheSignalsKeep(t *testing.T) {
	law := mustLaw(t, threeTiers())
	sat := func(v, keep float64) Input {
		return Input{Signals: []Signal{{Name: "saturation", Value: v, Target: 0.05, Valid: true, At: t0, Keep: keep}}}
	}
	ov := ConditionOverloaded
	// 10 % refused: keep 0.9, although 0.1/0.05 alone would say β.
	runSteps(t, law, state(1, 1, 1), []step{{0, sat(0.1, 0.9), []float64{1, 1, 0.9}, hhd, ov, 1}})
	// Keep out of (0, 1]: target/value, bounded by β.
	runSteps(t, law, state(1, 1, 1), []step{{0, sat(0.1, 1.5), []float64{1, 1, 0.5}, hhd, ov, 1}})
	// With the admitted rates, free (100 of 400 req/s) sheds the whole
	// 10 %: 1 − 0.1 × 400/100 = 0.6.
	runSteps(t, law, state(1, 1, 1), []step{{0, admitted(sat(0.1, 0.9), 100, 200, 100), []float64{1, 1, 0.6}, hhd, ov, 1}})
}

func TestStepRecoveryScalesRateCap(t *testing.T) {
	law := mustLaw(t, threeTiers()) // hold timeout 30 s, free α 0.25
	st := state(1, 1, 0.5)
	st.Tiers[2].Rate = 100
	ns := ConditionNoSignal
	runRateSteps(t, law, st, []rateStep{
		{step{30 * s, Input{}, []float64{1, 1, 0.75}, hhr, ns, 1}, []float64{0, 0, 150}},
		{step{35 * s, Input{}, []float64{1, 1, 1}, hhr, ns, 2}, []float64{0, 0, 0}},
	})
}

func TestStepNoRateCapWithoutMeasurement(t *testing.T) {
	law := mustLaw(t, threeTiers())
	ov := ConditionOverloaded
	cases := []struct {
		name string
		in   Input
	}{
		{"no map", latency(2, 0)},
		{"tier absent", Input{Signals: latency(2, 0).Signals, Admitted: map[string]float64{"standard": 300}}},
		{"zero", admitted(latency(2, 0), 0, 300, 100)},
		{"negative", admitted(latency(2, 0), -5, 300, 100)},
		{"NaN", admitted(latency(2, 0), math.NaN(), 300, 100)},
		{"+Inf", admitted(latency(2, 0), math.Inf(1), 300, 100)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			runRateSteps(t, law, state(1, 1, 1), []rateStep{
				{step{0, c.in, []float64{1, 1, 0.5}, hhd, ov, 1}, []float64{0, 0, 0}},
			})
		})
	}
	// Unknown, but capped already: the cap is cut by the multiplier's
	// ratio, here 0.1/0.15 as the floor stops the cut.
	st := state(1, 1, 0.15)
	st.Tiers[2].Rate = 90
	runRateSteps(t, law, st, []rateStep{
		{step{0, latency(2, 0), []float64{1, 1, 0.1}, hhd, ov, 1}, []float64{0, 0, 60}},
	})
}

func TestStepNormalizesRateCaps(t *testing.T) {
	law := mustLaw(t, threeTiers())
	st := state(1, 0.5, 0.5)
	cases := []struct {
		rate, want float64
	}{{math.NaN(), 0}, {math.Inf(1), 0}, {-1, 0}, {0, 0}, {42, 42}}
	for _, c := range cases {
		st.Tiers[0].Rate, st.Tiers[1].Rate, st.Tiers[2].Rate = 7, c.rate, c.rate
		got := rates(law.Step(st, latency(0.9, 0), t0))
		if !near(got, []float64{0, c.want, c.want}) {
			t.Errorf("rate %v: got %v, want [0 %v %v] (a tier at its ceiling has no cap)", c.rate, got, c.want, c.want)
		}
	}
}

func TestStateStringShowsRateCaps(t *testing.T) {
	st := state(1, 0.5)
	st.Tiers[1].Rate = 120
	if got, want := st.String(), "premium=1.00 standard=0.50(120.0/s) epoch=0"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// knees lists the knees of st in priority order.
func knees(st State) []float64 {
	var k []float64
	for _, ts := range st.Tiers {
		k = append(k, ts.Knee)
	}
	return k
}

// cutAgo marks the free tier of st as cut d before t0.
func cutAgo(st State, d time.Duration) State {
	st.Tiers[2].LastDecrease = at(-d)
	return st
}

// capped gives the free tier of st a rate cap.
func capped(st State, rate float64) State {
	st.Tiers[2].Rate = rate
	return st
}

// withAdmitted adds the free tier's measured admitted rate to in.
func withAdmitted(in Input, free float64) Input {
	in.Admitted = map[string]float64{"free": free}
	return in
}

func TestStepKnee(t *testing.T) {
	law := mustLaw(t, threeTiers()) // headroom 0.2, free α 0.25, standard α 0.2
	ov, h, ns := ConditionOverloaded, ConditionHealthy, ConditionNoSignal
	withKnee := func(free, knee float64) State {
		st := state(1, 1, free)
		st.Tiers[2].Knee = knee
		return st
	}
	cases := []struct {
		name  string
		st    State
		c     step
		knees []float64
	}{
		{"a cut sets it", state(1, 1, 0.8), step{0, latency(2, 0), []float64{1, 1, 0.4}, hhd, ov, 1}, []float64{0, 0, 0.8}},
		{"a cut lowers it", withKnee(0.5, 0.9), step{0, latency(1.25, 0), []float64{1, 1, 0.4}, hhd, ov, 1}, []float64{0, 0, 0.5}},
		{"deep headroom: halfway", withKnee(0.2, 0.8), step{0, latency(0.1, 0), []float64{1, 1, 0.5}, hhi, h, 1}, []float64{0, 0, 0.8}},
		{"room 1.5: a quarter", withKnee(0.2, 0.8), step{0, latency(0.8/1.5, 0), []float64{1, 1, 0.35}, hhi, h, 1}, []float64{0, 0, 0.8}},
		{"near the band: little, less than α", withKnee(0.2, 0.8), step{0, latency(0.79, 0), []float64{1, 1, 0.2 + 0.6*(0.8/0.79-1)/2}, hhi, h, 1}, []float64{0, 0, 0.8}},
		{"within α/4 a capped tier holds while a probe is not due", capped(cutAgo(withKnee(0.7, 0.76), 59*s), 100), step{0, latency(0.79, 0), []float64{1, 1, 0.7}, hhh, h, 0}, []float64{0, 0, 0.76}},
		{"deep headroom at the knee: the overload is over, it passes at once", capped(cutAgo(withKnee(0.7, 0.76), 5*s), 100),
			step{0, latency(0.2, 0), []float64{1, 1, 1}, hhi, h, 1}, []float64{0, 0, 0}},
		{"a probe is due ProbeAfter after the cut", capped(cutAgo(withKnee(0.7, 0.76), 60*s), 100), step{0, latency(0.79, 0), []float64{1, 1, 0.95}, hhi, h, 1}, []float64{0, 0, 0}},
		{"without a cap nothing says the cut still binds: it passes", cutAgo(withKnee(0.7, 0.76), 5*s), step{0, latency(0.79, 0), []float64{1, 1, 0.95}, hhi, h, 1}, []float64{0, 0, 0}},
		{"a cap that no longer binds: the surge is over, grow by the room", capped(cutAgo(withKnee(0.2, 0.8), 5*s), 100),
			step{0, withAdmitted(latency(0.1, 0), 40), []float64{1, 1, 0.8}, hhi, h, 1}, []float64{0, 0, 0}},
		{"a cap that binds keeps the knee", capped(cutAgo(withKnee(0.2, 0.8), 5*s), 100),
			step{0, withAdmitted(latency(0.1, 0), 90), []float64{1, 1, 0.5}, hhi, h, 1}, []float64{0, 0, 0.8}},
		{"within α/4 it no longer holds", withKnee(0.7, 0.76), step{0, latency(0.79, 0), []float64{1, 1, 0.95}, hhi, h, 1}, []float64{0, 0, 0}},
		{"passed, forgotten", withKnee(0.7, 0.76), step{0, latency(0.1, 0), []float64{1, 1, 1}, hhi, h, 1}, []float64{0, 0, 0}},
		{"recovery ignores it", withKnee(0.2, 0.8), step{30 * s, Input{}, []float64{1, 1, 0.45}, hhr, ns, 1}, []float64{0, 0, 0.8}},
		{"the band keeps it", withKnee(0.2, 0.8), step{0, latency(0.9, 0), []float64{1, 1, 0.2}, hhh, ConditionBand, 0}, []float64{0, 0, 0.8}},
		{"not above the multiplier: none", withKnee(0.5, 0.5), step{0, latency(0.9, 0), []float64{1, 1, 0.5}, hhh, ConditionBand, 0}, []float64{0, 0, 0}},
		{"above the ceiling: none", withKnee(0.5, 1.5), step{0, latency(0.9, 0), []float64{1, 1, 0.5}, hhh, ConditionBand, 0}, []float64{0, 0, 0}},
		{"NaN: none", withKnee(0.5, math.NaN()), step{0, latency(0.9, 0), []float64{1, 1, 0.5}, hhh, ConditionBand, 0}, []float64{0, 0, 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := runSteps(t, law, c.st, []step{c.c})
			if got := knees(st); !near(got, c.knees) {
				t.Fatalf("knees %v, want %v", got, c.knees)
			}
		})
	}
}

// A cut sized by measurement (the inner loop's refused fraction and the
// tiers' admitted rates) lands where the tier fits; it must not step back
// towards the level it was cut from while that cut still binds, which
// would overload again and cut again (two direction changes per cycle).
// A cut bounded by β lands above the measured fit: it holds there too
// (if it still overloads, the next cut goes on). A cut sized by
// target/value is an estimate, not a measurement: it keeps the old knee.
func TestStepMeasuredCutHoldsAtTheFit(t *testing.T) {
	law := mustLaw(t, threeTiers()) // free α 0.25, β 0.5
	sat := func(v float64, d time.Duration) Input {
		in := Input{Signals: []Signal{{Name: "saturation", Value: v, Target: 0.05, Valid: true, At: at(d), Keep: 1 - v}}}
		return admitted(in, 100, 200, 100)
	}
	ok := func(d time.Duration) Input { // room 1.5: the approach by parts would take a quarter of the gap
		in := latency(0.8/1.5, d)
		in.Signals[0].At = at(d)
		return admitted(in, 60, 200, 100)
	}
	ov, h := ConditionOverloaded, ConditionHealthy
	st := runSteps(t, law, state(1, 1, 1), []step{
		{0, sat(0.1, 0), []float64{1, 1, 0.6}, hhd, ov, 1}, // 1 − 0.1 × 400/100
	})
	if got, want := knees(st), []float64{0, 0, 0.6 + 0.25/4}; !near(got, want) {
		t.Fatalf("knees after a measured cut %v, want %v", got, want)
	}
	runSteps(t, law, st, []step{
		{2 * s, ok(2 * s), []float64{1, 1, 0.6}, hhh, h, 1},   // held at the fit
		{30 * s, ok(30 * s), []float64{1, 1, 0.6}, hhh, h, 1}, // still
		{61 * s, ok(61 * s), []float64{1, 1, 0.9}, hhi, h, 2}, // ProbeAfter since the cut: a probe, 0.6 × room
	})
	// β-bounded: 1 − 0.2 × 400/100 < 0.5, so the cut is 0.5.
	st = runSteps(t, law, state(1, 1, 1), []step{{0, sat(0.2, 0), []float64{1, 1, 0.5}, hhd, ov, 1}})
	if got, want := knees(st), []float64{0, 0, 0.5 + 0.25/4}; !near(got, want) {
		t.Fatalf("knees after a β-bounded cut %v, want %v", got, want)
	}
	// Latency at twice its target: an estimate; the knee is the old level.
	est := admitted(latency(2, 0), 100, 200, 100)
	st = runSteps(t, law, state(1, 1, 1), []step{{0, est, []float64{1, 1, 0.5}, hhd, ov, 1}})
	if got, want := knees(st), []float64{0, 0, 1}; !near(got, want) {
		t.Fatalf("knees after a cut by target/value %v, want %v", got, want)
	}
}

// A knee set α/4 above the multiplier holds whatever the rounding of
// m + α/4 − m (with α = 0.1, 0.3 + 0.025 − 0.3 > 0.025 in float64).
func TestStepKneeAlphaQuarterAboveHoldsDespiteRounding(t *testing.T) {
	set := threeTiers()
	set.Tiers[0].Alpha = 0.1 // free
	law := mustLaw(t, set)
	for _, m := range []float64{0.11, 0.3, 0.53} {
		st := capped(cutAgo(state(1, 1, m), 5*s), 100)
		st.Tiers[2].Knee = m + 0.1/4
		in := withAdmitted(latency(0.8/1.5, 0), 90)
		runSteps(t, law, st, []step{{0, in, []float64{1, 1, m}, hhh, ConditionHealthy, 0}})
	}
}
