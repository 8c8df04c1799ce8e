package controller

import (
	"math"
	"strings"
	"testing"
	"time"
)

// lagging is an Input whose Signals come through a long window (a
// Prometheus rate window, measured at d) while Fresh is this instance's own
// latency over the last period; NaN leaves a reading out.
func lagging(slow, fresh float64, d time.Duration) Input {
	var in Input
	if !math.IsNaN(slow) {
		in.Signals = []Signal{{Name: "latency", Value: slow, Target: 1, Valid: true, At: at(d)}}
	}
	if !math.IsNaN(fresh) {
		in.Fresh = []Signal{{Name: "latency", Value: fresh, Target: 1, Valid: true, At: at(d)}}
	}
	return in
}

// TestStepOnStaleOrLaggingSignals: a window that still averages an
// overload which ended (or has not yet seen one which began) neither cuts,
// holds nor raises against this instance's own fresh measurement; without
// a usable fresh one the window decides, as before.
func TestStepOnStaleOrLaggingSignals(t *testing.T) {
	nan := math.NaN()
	ov, band, h, ns := ConditionOverloaded, ConditionBand, ConditionHealthy, ConditionNoSignal
	cases := []struct {
		name string
		from []float64
		step step
	}{
		// The overload ended: the window still reads 2× the target, the
		// instance reads a tenth of it. Raise (deep room: by the growth factor, 4), not cut.
		{"window over, fresh healthy: release", []float64{1, 1, 0.1},
			step{5 * s, lagging(2, 0.1, 5*s), []float64{1, 1, 0.4}, hhi, h, 1}},
		// The inner loop already holds the service within its target: a
		// cut the window asks for would only shed what the service can serve.
		{"window over, fresh in band: hold", []float64{1, 1, 0.5},
			step{5 * s, lagging(2, 0.95, 5*s), []float64{1, 1, 0.5}, hhh, band, 0}},
		{"window in band, fresh healthy: release", []float64{1, 1, 0.5},
			step{5 * s, lagging(0.95, 0.1, 5*s), []float64{1, 1, 1}, hhi, h, 1}},
		// The overload began: the window has not seen it yet.
		{"window healthy, fresh over: cut", []float64{1, 1, 1},
			step{5 * s, lagging(0.1, 2, 5*s), []float64{1, 1, 0.5}, hhd, ov, 1}},
		{"window healthy, fresh in band: hold", []float64{1, 1, 0.5},
			step{5 * s, lagging(0.1, 0.95, 5*s), []float64{1, 1, 0.5}, hhh, band, 0}},
		// A window whose last sample is older than SignalStaleAfter is
		// unusable; the fresh reading decides alone.
		{"window stale, fresh healthy", []float64{1, 1, 0.5},
			step{20 * s, Input{Signals: []Signal{{Name: "latency", Value: 2, Target: 1, Valid: true, At: at(0)}},
				Fresh: lagging(nan, 0.1, 20*s).Fresh}, []float64{1, 1, 1}, hhi, h, 1}},
		// No fresh reading (no traffic here, or a controller-only
		// replica): the window decides.
		{"fresh missing, window over: cut", []float64{1, 1, 1},
			step{5 * s, lagging(2, nan, 5*s), []float64{1, 1, 0.5}, hhd, ov, 1}},
		{"fresh invalid, window over: cut", []float64{1, 1, 1},
			step{5 * s, Input{Signals: lagging(2, nan, 5*s).Signals, Fresh: []Signal{{Name: "latency", Target: 1}}},
				[]float64{1, 1, 0.5}, hhd, ov, 1}},
		{"fresh stale, window healthy: raise", []float64{1, 1, 0.5},
			step{20 * s, Input{Signals: lagging(0.1, nan, 20*s).Signals, Fresh: []Signal{{Name: "latency", Value: 2, Target: 1, Valid: true, At: at(0)}}},
				[]float64{1, 1, 1}, hhi, h, 1}},
		{"nothing usable: hold", []float64{1, 1, 0.5},
			step{5 * s, Input{Fresh: []Signal{{Name: "latency", Target: 1}}}, []float64{1, 1, 0.5}, hhh, ns, 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			runSteps(t, mustLaw(t, threeTiers()), state(c.from...), []step{c.step})
		})
	}
}

// TestStepReleaseDoesNotWaitForTheWindow: a slowdown ends at t = 10 s;
// the window reads the overload for 10 s more. The tier cut during it
// climbs back from the first fresh healthy reading (halfway to the knee it
// was cut from each step, then past it), and the window's late overload
// never cuts it again.
func TestStepReleaseDoesNotWaitForTheWindow(t *testing.T) {
	law := mustLaw(t, threeTiers())
	ov, h := ConditionOverloaded, ConditionHealthy
	runSteps(t, law, state(1, 1, 1), []step{
		{0, lagging(2, 2, 0), []float64{1, 1, 0.5}, hhd, ov, 1},
		{10 * s, lagging(2, 0.1, 10*s), []float64{1, 1, 0.75}, hhi, h, 2},
		{11 * s, lagging(2, 0.1, 11*s), []float64{1, 1, 0.875}, hhi, h, 3},
		{12 * s, lagging(2, 0.1, 12*s), []float64{1, 1, 0.9375}, hhi, h, 4},
		{13 * s, lagging(2, 0.1, 13*s), []float64{1, 1, 1}, hhi, h, 5},
		{15 * s, lagging(2, 0.1, 15*s), []float64{1, 1, 1}, hhh, h, 5},
	})
}

// TestStepHoldsWhileStarved: while this process waits for a CPU a quarter
// of its runnable time more than usual, its latency readings measure its own slowness as much as
// the backend's: an overload reading cuts nothing, a healthy one still
// raises, and the cut resumes once the CPU is back.
func TestStepHoldsWhileStarved(t *testing.T) {
	law := mustLaw(t, threeTiers()) // StarvedAt 0.25
	starved := func(in Input, wait float64) Input { in.CPUWait = wait; return in }
	ov, h := ConditionOverloaded, ConditionHealthy
	runSteps(t, law, state(1, 1, 0.5), []step{
		{0, starved(lagging(2, 2, 0), 0.25), []float64{1, 1, 0.5}, hhh, ov, 0},
		{10 * s, starved(lagging(9, 9, 10*s), 0.9), []float64{1, 1, 0.5}, hhh, ov, 0},
		{12 * s, starved(lagging(0.1, 0.1, 12*s), 0.9), []float64{1, 1, 1}, hhi, h, 1},
		{14 * s, starved(lagging(2, 2, 14*s), 0.24), []float64{1, 1, 0.5}, hhd, ov, 2},
	})
}

func TestStarvedAtMustBeAFraction(t *testing.T) {
	for _, v := range []float64{-0.1, 1.5, math.NaN()} {
		st := threeTiers()
		st.StarvedAt = v
		if err := st.Validate(); err == nil || !strings.Contains(err.Error(), "starved_at") {
			t.Errorf("StarvedAt %v: %v, want an error naming starved_at", v, err)
		}
	}
}

// TestStepReleaseJumpsWhenTheInnerLoopIsIdle: the backend came back from a
// slowdown that cut free to its floor and capped it. A period later the
// fresh reading has deep room (latency at a tenth of the target, room 8)
// and the inner loop refused nothing: the overload is over, and free goes
// back to its ceiling in one step rather than ×4 a period (0.1, 0.4, 1:
// two periods of shedding a healthy backend). A refusal by the inner loop,
// room under kneeRelease, or no inner loop to ask keeps the climb as it
// was.
func TestStepReleaseJumpsWhenTheInnerLoopIsIdle(t *testing.T) {
	law := mustLaw(t, threeTiers()) // free: floor 0.1, α 0.25, growth 4; headroom 0.2
	cut := state(1, 1, 0.1)
	cut.Tiers[2].Knee, cut.Tiers[2].Rate, cut.Tiers[2].LastDecrease = 0.1+0.25/4, 12, t0
	fresh := func(lat, refused float64) Input {
		in := lagging(2, lat, 2*s) // the window still reads the slowdown
		sat := Signal{Name: "saturation", Value: refused, Target: 0.05, Valid: true, At: at(2 * s), Keep: 1 - refused}
		in.Fresh = append(in.Fresh, sat)
		return in
	}
	h, band := ConditionHealthy, ConditionBand
	cases := []struct {
		name string
		in   Input
		want []float64
		acts string
		cond Condition
	}{
		{"deep room, inner loop idle: ceiling", fresh(0.1, 0), []float64{1, 1, 1}, hhi, h},
		{"deep room, inner loop refused some: ×growth", fresh(0.1, 0.01), []float64{1, 1, 0.4}, hhi, h},
		{"room 3.2, under kneeRelease: hold at the knee", fresh(0.25, 0), []float64{1, 1, 0.1}, hhh, h},
		{"deep room, no inner loop: ×growth", lagging(2, 0.1, 2*s), []float64{1, 1, 0.4}, hhi, h},
		{"inner loop idle, latency in band: hold", fresh(0.9, 0), []float64{1, 1, 0.1}, hhh, band},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			epoch := uint64(0)
			if c.acts != hhh {
				epoch = 1
			}
			runSteps(t, law, cut, []step{{2 * s, c.in, c.want, c.acts, c.cond, epoch}})
		})
	}
}

// TestStepReleaseJumpsEveryTier: when the overload is over (deep room, the
// inner loop idle) every tier that was cut goes back to its ceiling in
// the same step, not one tier a period in priority order.
func TestStepReleaseJumpsEveryTier(t *testing.T) {
	law := mustLaw(t, threeTiers())
	cut := state(1, 0.5, 0.1)
	cut.Tiers[1].Rate, cut.Tiers[1].LastDecrease = 40, t0
	cut.Tiers[2].Knee, cut.Tiers[2].Rate, cut.Tiers[2].LastDecrease = 0.1+0.25/4, 12, t0
	in := lagging(2, 0.1, 2*s)
	in.Fresh = append(in.Fresh, Signal{Name: "saturation", Value: 0, Target: 0.05, Valid: true, At: at(2 * s), Keep: 1})
	st := runSteps(t, law, cut, []step{{2 * s, in, []float64{1, 1, 1}, "hold increase increase", ConditionHealthy, 1}})
	for _, ts := range st.Tiers {
		if ts.Rate != 0 || ts.Knee != 0 {
			t.Errorf("%s: rate cap %v, knee %v after the release; want neither", ts.Name, ts.Rate, ts.Knee)
		}
	}
}
