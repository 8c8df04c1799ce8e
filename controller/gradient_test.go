package controller

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

const ms = time.Millisecond

// tk is the i-th fixed instant of the concurrency law's tables: t0 + i
// intervals of 100 ms.
func tk(i int) time.Time { return t0.Add(time.Duration(i) * 100 * ms) }

// win is a window of n samples averaging avg (the fastest of them also
// avg), with at most peak calls in flight.
func win(n int, avg time.Duration, peak int) Window {
	return Window{Samples: n, Avg: avg, Min: avg, MaxInFlight: peak}
}

func mustGradient(t *testing.T, gs GradientSettings) *Gradient {
	t.Helper()
	g, err := NewGradient(gs)
	if err != nil {
		t.Fatalf("NewGradient: %v", err)
	}
	return g
}

// gstep is one row of a concurrency law table: the window that ended at
// its instant, and what must follow. A zero limit or base is not checked.
type gstep struct {
	w     Window
	limit float64
	base  time.Duration
	act   Action
}

// runGradient steps g from st through rows, row i at tk(i+1).
func runGradient(t *testing.T, g *Gradient, st GradientState, rows []gstep) GradientState {
	t.Helper()
	for i, r := range rows {
		st = g.Step(st, r.w, tk(i+1))
		okLimit := r.limit == 0 || math.Abs(st.Limit-r.limit) < 1e-9
		okBase := r.base == 0 || (st.Baseline-r.base).Abs() <= time.Microsecond
		if !okLimit || !okBase || st.LastAction != r.act || !st.At.Equal(tk(i+1)) {
			t.Fatalf("t%d %+v: got %v; want limit=%.4f baseline=%v %v", i+1, r.w, st, r.limit, r.base, r.act)
		}
	}
	return st
}

// rise is the baseline's weight towards a slower window over one 100 ms
// interval, for a BaselineWindow of w.
func rise(w time.Duration) float64 { return 1 - math.Exp(-float64(100*ms)/float64(w)) }

// dur scales a duration (for the tables' baseline arithmetic).
func dur(d time.Duration, f float64) time.Duration { return time.Duration(float64(d) * f) }

// With the defaults' Tolerance 0.25, Smoothing 0.5 and Allowance 1: next =
// limit + (limit × gradient + 1 − limit) × 0.5.
func smooth(limit, gradient float64) float64 { return limit + (limit*gradient+1-limit)*0.5 }

// TestGradientQuietLatencyNeverDecreases: the upstream's service time
// doubles (20 → 40 ms) while the baseline still says 20 ms. With a 250 ms
// Target, 40 ms is quiet (≤ 62.5 ms): the limit holds instead of shrinking
// towards MinLimit, and throughput with it. Past the quiet bound the
// gradient cuts as usual; without a Target nothing is quiet.
func TestGradientQuietLatencyNeverDecreases(t *testing.T) {
	g := mustGradient(t, GradientSettings{MaxLimit: 40, BaselineWindow: 10 * s, Target: 250 * ms})
	r := rise(10 * s)
	b2 := 20*ms + dur(20*ms, r)
	b3 := b2 + dur(40*ms-b2, r)
	runGradient(t, g, g.Init(t0), []gstep{
		{win(10, 20*ms, 20), smooth(20, 1.25), 20 * ms, ActionIncrease},
		{win(10, 40*ms, 23), smooth(23, 1), b2, ActionIncrease},                                     // quiet: gradient 0.625 → 1
		{win(10, 40*ms, 12), smooth(23, 1), b3, ActionHold},                                         // quiet, few in use: hold
		{win(10, 80*ms, 20), smooth(smooth(23, 1), 62.5/80), b3 + dur(80*ms-b3, r), ActionDecrease}, // 80 ms is past 62.5 ms
	})
	noTarget := mustGradient(t, GradientSettings{MaxLimit: 40, BaselineWindow: 10 * s})
	runGradient(t, noTarget, noTarget.Init(t0), []gstep{
		{win(10, 20*ms, 20), smooth(20, 1.25), 20 * ms, ActionIncrease},
		{win(10, 40*ms, 23), smooth(23, 0.625), b2, ActionDecrease},
	})
}

// TestGradientQuietBoundIsContinuous: just past the quiet bound (Target ×
// Quiet) the gradient is measured from the bound, not from a baseline
// learned before the upstream slowed down. From the stale 20 ms baseline
// the gradient fell from at least 1 at 62.5 ms to 0.5 at 63 ms, halving
// the limit, which then grew back below the bound: a limit sawing under
// the calls needed to keep a slower upstream busy, capacity lost in every
// trough (bench overload --scenario slowdown). At 70 ms the gradient is
// 62.5/70.
func TestGradientQuietBoundIsContinuous(t *testing.T) {
	g := mustGradient(t, GradientSettings{MaxLimit: 40, Target: 250 * ms})
	st := GradientState{Limit: 12, Baseline: 20 * ms, At: t0}
	next := g.Step(st, win(10, 70*ms, 12), t0.Add(100*ms))
	if want := smooth(12, 62.5/70); math.Abs(next.Limit-want) > 1e-9 || next.LastAction != ActionDecrease {
		t.Fatalf("at 70 ms, just past the quiet bound: %v, want limit %.4f, decrease", next, want)
	}
	// Far past it the bound no longer matters: 250 ms is the Target itself.
	next = g.Step(st, win(10, 200*ms, 12), t0.Add(100*ms))
	if want := smooth(12, 0.5); math.Abs(next.Limit-want) > 1e-9 {
		t.Fatalf("at 200 ms: %v, want limit %.4f (62.5/200 clamped at 0.5)", next, want)
	}
}

func TestGradientDecreasesOnRisingLatency(t *testing.T) {
	g := mustGradient(t, GradientSettings{MaxLimit: 40, BaselineWindow: 10 * s})
	st := g.Init(t0)
	r := rise(10 * s)
	b2 := 20*ms + dur(20*ms, r)
	runGradient(t, g, st, []gstep{
		{win(10, 20*ms, 20), smooth(20, 1.25), 20 * ms, ActionIncrease},                             // first samples: the baseline
		{win(10, 40*ms, 23), smooth(23, 0.625), b2, ActionDecrease},                                 // 20 × 1.25 / 40
		{win(10, 80*ms, 19), smooth(smooth(23, 0.625), 0.5), b2 + dur(80*ms-b2, r), ActionDecrease}, // clamped at 0.5
	})
}

func TestGradientGrowsOnHeadroomOnlyWhenUsed(t *testing.T) {
	g := mustGradient(t, GradientSettings{MaxLimit: 40})
	st := GradientState{Limit: 10, Baseline: 20 * ms, At: t0}
	l3 := smooth(11.75, 1.5625)
	l4 := smooth(l3, 2)
	l5 := smooth(l4, 1.25)
	l6 := smooth(l5, 1.25)
	l7 := smooth(l6, 1.25)
	runGradient(t, g, st, []gstep{
		{win(10, 20*ms, 7), 10, 20 * ms, ActionHold},                      // 7 < 10 × 3/4 in use: no evidence for more
		{win(10, 20*ms, 8), smooth(10, 1.25), 20 * ms, ActionIncrease},    // three quarters in use: 11.75
		{win(10, 16*ms, 12), l3, 18 * ms, ActionIncrease},                 // gradient 25/16; the baseline falls halfway
		{win(10, 5*ms, 16), l4, 11500 * time.Microsecond, ActionIncrease}, // gradient clamped at 2
		{win(10, 11500*time.Microsecond, 24), l5, 0, ActionIncrease},
		{win(10, 11500*time.Microsecond, 28), l6, 0, ActionIncrease},
		{win(10, 11500*time.Microsecond, 32), l7, 0, ActionIncrease},
		{win(10, 11500*time.Microsecond, 36), 40, 0, ActionIncrease}, // MaxLimit
		{win(10, 11500*time.Microsecond, 40), 40, 0, ActionHold},
	})
}

func TestGradientHoldsWithoutSamples(t *testing.T) {
	g := mustGradient(t, GradientSettings{MinSamples: 5})
	st := GradientState{Limit: 10, Baseline: 20 * ms, Latency: 21 * ms, At: t0}
	st = runGradient(t, g, st, []gstep{
		{win(0, 0, 10), 10, 20 * ms, ActionHold},
		{win(4, 100*ms, 10), 10, 20 * ms, ActionHold}, // too few samples
		{win(7, 0, 10), 10, 20 * ms, ActionHold},      // no latency
		{win(0, 0, 0), 10, 20 * ms, ActionHold},
	})
	if st.Latency != 21*ms {
		t.Errorf("latency = %v after holding, want the last measured 21ms", st.Latency)
	}
	runGradient(t, g, st, []gstep{{win(5, 100*ms, 10), smooth(10, 0.5), 0, ActionDecrease}})
}

func TestGradientStaysWithinBounds(t *testing.T) {
	g := mustGradient(t, GradientSettings{MinLimit: 3, MaxLimit: 50})
	slow := win(10, 200*ms, 4)
	runGradient(t, g, GradientState{Limit: 4, Baseline: 20 * ms, At: t0}, []gstep{
		{slow, smooth(4, 0.5), 0, ActionDecrease},           // 3.5
		{slow, smooth(3.5, 0.5), 0, ActionDecrease},         // 3.125
		{slow, 3, 0, ActionDecrease},                        // 2.84 → MinLimit
		{slow, 3, 0, ActionHold},                            // at MinLimit
		{win(10, 1*ms, 3), smooth(3, 2), 0, ActionIncrease}, // 4
	})
	for _, tc := range []struct {
		in   GradientState
		want float64
	}{
		{GradientState{Limit: math.NaN()}, 20},
		{GradientState{Limit: math.Inf(1)}, 50},
		{GradientState{Limit: 1e12}, 50},
		{GradientState{Limit: -5}, 3},
		{GradientState{}, 3},
	} {
		st := g.Step(tc.in, Window{}, t0)
		if st.Limit != tc.want || st.Permits() != int(tc.want) {
			t.Errorf("Step(%v, no samples) limit = %v (%d permits), want %v", tc.in, st.Limit, st.Permits(), tc.want)
		}
	}
	st := g.Step(GradientState{Limit: 10, Baseline: -time.Second}, win(10, 20*ms, 10), t0)
	if st.Baseline != 20*ms {
		t.Errorf("a negative baseline then a 20ms window: baseline %v, want 20ms", st.Baseline)
	}
}

func TestGradientBaselineTracking(t *testing.T) {
	g := mustGradient(t, GradientSettings{BaselineWindow: time.Second})
	r := rise(time.Second)
	b1 := 20*ms + dur(10*ms, r)
	b2 := b1 + dur(30*ms-b1, r)
	b3 := b2 + (10*ms-b2)/2
	b4 := b3 + (10*ms-b3)/2
	b6 := b4 + dur(40*ms-b4, r)
	// 5 of 10 in flight: too few to grow on, enough to keep the limit
	// (2 × 5 + allowance; see TestGradientLimitFollowsTheCallsInFlight).
	runGradient(t, g, GradientState{Limit: 10, Baseline: 20 * ms, At: t0}, []gstep{
		{win(10, 30*ms, 5), 0, b1, ActionDecrease}, // slower: rises slowly
		{win(10, 30*ms, 5), 0, b2, ActionDecrease},
		{win(10, 10*ms, 5), 0, b3, ActionHold}, // faster: falls halfway at once
		{win(10, 10*ms, 5), 0, b4, ActionHold},
		{Window{}, 0, b4, ActionHold}, // no samples: unchanged
		{win(10, 40*ms, 5), 0, b6, ActionDecrease},
		{win(10, b6, 5), 0, b6, ActionHold}, // on the baseline: unchanged (growth needs use)
	})
	// The rise is exponential in the time passed: one step 1 s after the
	// previous one covers 1 − 1/e of the way.
	st := g.Step(GradientState{Limit: 10, Baseline: 20 * ms, At: t0}, win(10, 30*ms, 5), t0.Add(time.Second))
	if want := 20*ms + dur(10*ms, 1-math.Exp(-1)); (st.Baseline - want).Abs() > time.Microsecond {
		t.Errorf("one step after 1s: baseline %v, want %v", st.Baseline, want)
	}
}

func TestGradientTargetAlwaysDecreases(t *testing.T) {
	g := mustGradient(t, GradientSettings{Target: 50 * ms})
	runGradient(t, g, GradientState{Limit: 10, Baseline: 100 * ms, At: t0}, []gstep{
		// 60ms is well under the baseline, but above Target: 10 × 50/60, no allowance.
		{win(10, 60*ms, 10), 10 + (10*50.0/60-10)*0.5, 80 * ms, ActionDecrease},
		{win(10, 50*ms, 10), smooth(10+(10*50.0/60-10)*0.5, 2), 65 * ms, ActionIncrease}, // at Target: the gradient rules
		{win(10, 500*ms, 10), 0, 0, ActionDecrease},
	})
}

func TestGradientRelearnsBaselineAtMinLimit(t *testing.T) {
	g := mustGradient(t, GradientSettings{RelearnAfter: 300 * ms})
	slow := win(10, 50*ms, 2)
	l1 := smooth(2.5, 0.5) // 2.375: 2 permits, at MinLimit since t1
	l2 := smooth(l1, 0.5)
	l3 := smooth(l2, 0.5)
	l4 := smooth(l3, 0.5)
	st := runGradient(t, g, GradientState{Limit: 2.5, Baseline: 10 * ms, At: t0}, []gstep{
		{slow, l1, 0, ActionDecrease},
		{slow, l2, 0, ActionDecrease},
		{slow, l3, 0, ActionDecrease},
		{slow, l4, 50 * ms, ActionDecrease}, // 300 ms at MinLimit: the baseline is taken afresh
	})
	if !st.Relearned || !st.AtMinSince.Equal(tk(4)) {
		t.Fatalf("after relearning: %+v", st)
	}
	st = g.Step(st, slow, tk(5))
	if want := smooth(l4, 1.25); st.Relearned || st.LastAction != ActionIncrease || st.Limit != want || !st.AtMinSince.IsZero() {
		t.Fatalf("the step after relearning: %+v, want an increase to %v", st, want)
	}
}

func TestGradientSettingsDefaults(t *testing.T) {
	g := mustGradient(t, GradientSettings{})
	want := GradientSettings{Interval: 100 * ms, MinLimit: 2, MaxLimit: 1000, InitialLimit: 20, Tolerance: 0.25,
		Smoothing: 0.5, Allowance: 1, Quiet: 0.25, BaselineWindow: 30 * s, RelearnAfter: 5 * s, MinSamples: 1, DecayWindow: s, DecayStarvedDelay: 250 * time.Microsecond}
	if got := g.Settings(); got != want {
		t.Errorf("defaults = %+v, want %+v", got, want)
	}
	if got := mustGradient(t, GradientSettings{MaxLimit: 8}).Settings().InitialLimit; got != 8 {
		t.Errorf("MaxLimit 8: InitialLimit = %d, want 8", got)
	}
	if got := mustGradient(t, GradientSettings{MinLimit: 30}).Init(t0); got.Limit != 30 || got.Permits() != 30 {
		t.Errorf("MinLimit 30: Init = %v, want limit 30", got)
	}
}

func TestGradientSettingsValidateReportsEveryField(t *testing.T) {
	err := GradientSettings{
		Interval: -1, MinLimit: -1, MaxLimit: -2, InitialLimit: -3, Tolerance: 2, Smoothing: -0.1,
		Allowance: math.Inf(1), Target: -ms, BaselineWindow: -5, RelearnAfter: -1, MinSamples: -1,
	}.Validate()
	if !errors.Is(err, ErrInvalidSettings) {
		t.Fatalf("err = %v, want ErrInvalidSettings", err)
	}
	for _, f := range []string{"interval", "min_limit", "max_limit", "initial_limit", "tolerance", "smoothing",
		"allowance", "target", "baseline_window", "relearn_after", "min_samples"} {
		if !strings.Contains(err.Error(), "invalid settings: "+f+" = ") {
			t.Errorf("no error names %s: %v", f, err)
		}
	}
	if _, err := NewGradient(GradientSettings{MinLimit: 10, MaxLimit: 5}); err == nil {
		t.Error("MaxLimit below MinLimit: no error")
	}
}

func TestGradientStatePermits(t *testing.T) {
	for _, tc := range []struct {
		limit float64
		want  int
	}{{11.49, 11}, {11.5, 12}, {0.3, 1}, {math.NaN(), 1}, {math.Inf(1), math.MaxInt32}} {
		if got := (GradientState{Limit: tc.limit}).Permits(); got != tc.want {
			t.Errorf("Permits(%v) = %d, want %d", tc.limit, got, tc.want)
		}
	}
}
