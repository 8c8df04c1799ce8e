package controller

import (
	"math"
	"testing"
	"time"
)

// TestGradientLimitFollowsTheCallsInFlight: a gate whose calls in flight
// never come near its limit (one of many instances behind a balancer, its
// share a few calls) lets its limit fall towards twice the most in flight
// plus the allowance, over DecayWindow; a gate in use keeps its limit. On
// a fleet of N gates at the initial limit, a surge's first interval let
// N × 20 calls onto an upstream that serves 8 at once, and the gradients
// then cut every instance to the same few permits whatever its share.
func TestGradientLimitFollowsTheCallsInFlight(t *testing.T) {
	g := mustGradient(t, GradientSettings{})
	st := g.Init(t0)
	for i := 1; i <= 50; i++ { // 5 s at the baseline latency, at most 3 in flight
		st = g.Step(st, win(10, 20*ms, 3), tk(i))
	}
	if want := 2*3 + 1.0; st.Limit > want+0.5 || st.Limit < want {
		t.Errorf("after 5 s with at most 3 calls in flight: limit %.2f, want within [%.0f, %.1f] (2 × 3 + allowance)", st.Limit, want, want+0.5)
	}
	if st.LastAction != ActionDecrease {
		t.Errorf("last action %v, want decrease", st.LastAction)
	}
	// In use (the peak near the limit): the limit does not fall.
	used := GradientState{Limit: 10, Baseline: 20 * ms, At: t0}
	for i := 1; i <= 30; i++ {
		next := g.Step(used, win(10, 20*ms, 7), tk(i))
		if next.Limit < used.Limit {
			t.Fatalf("step %d: 7 of %.2f in flight: limit fell to %.2f", i, used.Limit, next.Limit)
		}
		used = next
	}
}

// TestGradientUnusedLimitHoldsWhileStarved: while the process waits for a
// CPU (Window.RunDelay at or above DecayStarvedDelay) its callers stall and
// its calls in flight fall for want of CPU, not of demand: an unused limit
// does not decay on such windows, and decays again once the CPU is back.
// A single instance on a loaded host met the surge with a limit decayed in
// a starved lull (premium 4.5–16 % in 3 of 8 runs).
func TestGradientUnusedLimitHoldsWhileStarved(t *testing.T) {
	g := mustGradient(t, GradientSettings{})
	st := g.Init(t0)
	starved := win(10, 20*ms, 3)
	starved.RunDelay = 250 * time.Microsecond
	for i := 1; i <= 50; i++ {
		st = g.Step(st, starved, tk(i))
		if st.Limit != 20 || st.LastAction != ActionHold {
			t.Fatalf("starved step %d (run delay 250µs): limit %.2f %v, want 20 hold", i, st.Limit, st.LastAction)
		}
	}
	fed := win(10, 20*ms, 3)
	fed.RunDelay = 249 * time.Microsecond
	st = g.Step(st, fed, tk(51))
	if st.Limit >= 20 || st.LastAction != ActionDecrease {
		t.Errorf("run delay 249µs after the starved windows: limit %.2f %v, want below 20, decrease", st.Limit, st.LastAction)
	}
}

// TestGradientKeepsRoomForTheTopPriority: the limit does not fall below
// what the window's priority-0 calls need at its latency, × (1 +
// Tolerance), the latency counted at most to Target × Quiet; above Target
// it keeps nothing, and without a Target the count is not used.
func TestGradientKeepsRoomForTheTopPriority(t *testing.T) {
	g := mustGradient(t, GradientSettings{Target: 250 * ms})
	st := GradientState{Limit: 4, Baseline: 20 * ms, At: tk(0)}
	for _, c := range []struct {
		lat  time.Duration
		top  int
		want float64
	}{
		{50 * ms, 10, 100 * 0.05 * 1.25},    // 100 calls/s at 50 ms
		{100 * ms, 10, 100 * 0.0625 * 1.25}, // the latency counted to 62.5 ms
		{300 * ms, 10, 3},                   // above the target: the gradient's cut to 2, smoothed
		{100 * ms, 0, 4*0.625 + 1},          // none of priority 0: the gradient's estimate, smoothed
	} {
		w := win(10, c.lat, 4)
		w.TopAsked = c.top
		got := g.Step(st, w, tk(1))
		if c.top == 0 {
			c.want = 4 + (c.want-4)*0.5
		}
		if math.Abs(got.Limit-c.want) > 1e-9 {
			t.Errorf("%d priority-0 calls in 100 ms at %v: limit %.4f, want %.4f", c.top, c.lat, got.Limit, c.want)
		}
	}
	w := win(10, 100*ms, 4)
	w.TopAsked = 10
	if got := mustGradient(t, GradientSettings{}).Step(st, w, tk(1)); got.Limit > 4 {
		t.Errorf("without a target: limit %.4f, want the gradient's decrease from 4", got.Limit)
	}
}
