package controller

import (
	"slices"
	"testing"
	"time"
)

// fleetShares is the fleet bench's uneven balancer for 10 instances
// (overload.FleetSplit(10), rounded): the busiest gets 5 × the median's
// share, the others fall from twice the median to half of it.
var fleetShares = []float64{0.355, 0.142, 0.118, 0.098, 0.082, 0.068, 0.057, 0.047, 0.039, 0.033} // sums to 1.039; rates below scale by it

// TestGradientFleetMeetsTheSurgeAtLimitsFollowingShares: ten gates behind
// one upstream of 8 workers, at 0.79 × capacity for 5 s, then 3 × capacity
// split unevenly. Each gate's limit has fallen towards what it uses by
// the time the surge comes: together they let in a few times the workers,
// not 10 × the initial limit 20, and the busiest gate stands well above the
// median one. So the surge's first interval queues a fraction of what it
// did, and the busiest instance's share is not cut to the quiet ones'.
func TestGradientFleetMeetsTheSurgeAtLimitsFollowingShares(t *testing.T) {
	g := mustGradient(t, GradientSettings{Target: 250 * ms})
	const at = 5 * time.Second
	rates := fleetSurge(at)
	s := newSim(g, simWorkers, simService, rates...)
	s.run(at + time.Second)
	limits := make([]int, len(s.gates))
	sum := 0
	for i := range s.gates {
		ws := s.between(i, at-100*ms, at)
		limits[i] = ws[len(ws)-1].limit
		sum += limits[i]
	}
	t.Logf("limits when the surge comes: %v (sum %d)", limits, sum)
	if sum > 8*simWorkers {
		t.Errorf("the gates' limits sum to %d when the surge comes, want at most %d (8 × the workers)", sum, 8*simWorkers)
	}
	sorted := slices.Clone(limits)
	slices.Sort(sorted)
	median := sorted[len(sorted)/2]
	if float64(limits[0]) < 1.5*float64(median) {
		t.Errorf("busiest gate at %d, the median one at %d: want the busiest at least 1.5 × the median", limits[0], median)
	}
	var worst time.Duration
	for i := range s.gates {
		worst = max(worst, stats(s.between(i, at, at+500*ms)).maxLatency)
	}
	if worst > 150*ms {
		t.Errorf("latency up to %v in the surge's first half second, want at most 150ms (0.6 × the target)", worst)
	}
}

// TestGradientFleetCarriesEachGatesTopPriority: the same fleet in the
// surge, each gate's priority-0 calls at its share of 0.5 × capacity (the
// premium tier, within its quota). Under one latency every gradient
// settles at the same few permits whatever the gate's share, so the
// busiest gate (0.34 of the load) served about 50 calls/s against its 68
// of priority 0 and shed the rest at its gate; the limit keeps the
// permits its priority-0 demand needs at the current latency, so it
// serves its priority-0 calls, and the upstream's latency stays where the
// fleet's gradients hold it.
func TestGradientFleetCarriesEachGatesTopPriority(t *testing.T) {
	g := mustGradient(t, GradientSettings{Target: 250 * ms})
	const at = 5 * time.Second
	rates := fleetSurge(at)
	s := newSim(g, simWorkers, simService, rates...)
	for i, sh := range fleetShares {
		s.gates[i].top = 0.5 * 400 * sh / 1.039
	}
	s.run(at + 5*time.Second)
	var worst time.Duration
	for i, gt := range s.gates {
		st := stats(s.between(i, at+time.Second, at+5*time.Second))
		served := float64(st.done) / 4
		t.Logf("gate %d: %.0f calls/s served, %.0f of priority 0 asked; limit %.1f, latency %v", i, served, gt.top, st.meanLimit, st.meanLatency)
		if served < gt.top {
			t.Errorf("gate %d served %.0f calls/s in the surge, want at least its %.0f/s of priority 0", i, served, gt.top)
		}
		worst = max(worst, st.meanLatency)
	}
	if worst > 100*ms {
		t.Errorf("mean latency up to %v in the surge, want at most 100ms", worst)
	}
}

// TestGradientTopPriorityAloneStaysNearQuiet: one gate whose priority-0
// calls alone match the upstream's capacity (the slowdown scenario: the
// service time doubled to 40 ms, 200 calls/s of premium of 320 offered).
// The room the limit keeps for them counts the latency only up to Target
// × Quiet, so the queue they build alone keeps the latency near the quiet
// bound: counted up to Target / 2, it rose to 143 ms on average, 204 ms
// in a window, and the slowdown scenario's goodput fell from 0.997·C to
// 0.525·C (p99 288 ms).
func TestGradientTopPriorityAloneStaysNearQuiet(t *testing.T) {
	g := mustGradient(t, GradientSettings{Target: 250 * ms})
	s := newSim(g, simWorkers, 2*simService, constant(320))
	s.gates[0].top = 200
	s.run(10 * time.Second)
	st := stats(s.between(0, 3*time.Second, 10*time.Second))
	t.Logf("%.0f calls/s served; limit %.1f; latency %v, up to %v", float64(st.done)/7, st.meanLimit, st.meanLatency, st.maxLatency)
	if st.meanLatency > 90*ms || st.maxLatency > 125*ms {
		t.Errorf("latency %v on average, up to %v in a window; want at most 90ms and 125ms", st.meanLatency, st.maxLatency)
	}
}

// fleetSurge is each gate's offered rate in the fleet's surge from at:
// its share of 0.79 × capacity, then of 3 × capacity.
func fleetSurge(at time.Duration) []func(time.Duration) float64 {
	var rates []func(time.Duration) float64
	for _, sh := range fleetShares {
		sh /= 1.039
		rates = append(rates, surge(0.79*400*sh, 3*400*sh, at))
	}
	return rates
}
