package controller

import (
	"math"
	"testing"
	"time"
)

// plant is a simulated service in the style of the demo: 400 req/s of
// capacity, a p99 that creeps up towards capacity and rises steeply past it,
// premium steady at 200 req/s and free at freeDemand.
type plant struct {
	freeDemand float64
	admitted   map[string]float64 // by tier, after the last step
}

const plantCapacity, plantTarget = 400.0, 0.25 // req/s, seconds

// p99 is the latency at the load admitted now: 20 ms at rest, 220 ms at
// capacity, +2 s per capacity's worth of overload.
func (p *plant) p99() float64 {
	load := 0.0
	for _, a := range p.admitted {
		load += a
	}
	rho := load / plantCapacity
	if rho < 1 {
		return 0.02 + 0.2*math.Pow(rho, 20)
	}
	return 0.22 + 2*(rho-1)
}

// admit applies the multipliers and rate caps of st to the demand.
func (p *plant) admit(st State) {
	demand := map[string]float64{"premium": 200, "free": p.freeDemand}
	p.admitted = map[string]float64{}
	for _, ts := range st.Tiers {
		a := demand[ts.Name] * ts.Multiplier
		if ts.Rate > 0 {
			a = math.Min(a, ts.Rate)
		}
		p.admitted[ts.Name] = a
	}
}

// TestLawSettlesOnSteepPlant runs the demo's settings (period 1 s, headroom
// 0.3) against the plant: free surges to 500 req/s for 150 s, then drops to
// 100. Each step reads the latency caused by the previous one. The law must
// change direction at most twice in any simulated minute, hold still once
// settled in the surge, with the latency within target, and bring free back
// to 1 once the surge is over.
func TestLawSettlesOnSteepPlant(t *testing.T) {
	law := mustLaw(t, Settings{Period: s, Headroom: 0.3, HoldTimeout: 10 * s, Tiers: []Tier{
		{Name: "premium", Priority: 0, Beta: 0.8, Alpha: 0.2},
		{Name: "free", Priority: 1, Beta: 0.5, Alpha: 0.1},
	}})
	p := &plant{freeDemand: 500}
	st := law.Init(t0)
	p.admit(st)
	var flips [5]int // by simulated minute
	dir, lastChange := 0, 0
	for i := range 300 {
		if i == 150 {
			p.freeDemand = 100
		}
		now := at(time.Duration(i) * s)
		in := Input{Signals: []Signal{{Name: "latency", Value: p.p99(), Target: plantTarget, Valid: true, At: now}},
			Admitted: p.admitted}
		if i == 149 && !(p.p99() <= plantTarget) {
			t.Errorf("end of the surge: p99 %v, want within the target %v", p.p99(), plantTarget)
		}
		prev := st.Epoch
		st = law.Step(st, in, now)
		p.admit(st)
		if st.Epoch == prev {
			continue
		}
		lastChange = i
		d := 1
		if changed(st, ActionDecrease) != "" {
			d = -1
		}
		if dir != 0 && d != dir {
			flips[i/60]++
		}
		dir = d
		if i >= 30 && i < 150 {
			t.Errorf("t0+%ds: %v moved during the surge, 30 s after it began", i, st)
		}
	}
	for m, n := range flips {
		if n > 2 {
			t.Errorf("minute %d: %d direction flips, want at most 2", m, n)
		}
	}
	if m, _ := st.Multiplier("free"); m != 1 || lastChange > 150+10 {
		t.Errorf("after the surge: free %v, last change at t0+%ds; want 1 within 10 s of its end", m, lastChange)
	}
	t.Logf("flips by minute %v, last change t0+%ds", flips, lastChange)
}
