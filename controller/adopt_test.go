package controller

import (
	"testing"
	"time"
)

// TestNewLeaderHoldsWhereTheOldOneHeld: a leader that cut the free tier on
// a measured saturation holds it at its knee while the cap binds; a
// replica that takes over from the published set (its own shadow never
// cut) must hold there too, not grow the tier back towards its ceiling
// into the overload the cut was holding off.
func TestNewLeaderHoldsWhereTheOldOneHeld(t *testing.T) {
	law, err := NewLaw(Settings{Period: time.Second, Headroom: 0.3, HoldTimeout: 10 * time.Second,
		Tiers: []Tier{{Name: "premium", Priority: 0}, {Name: "free", Priority: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_700_000_000, 0)
	admitted := map[string]float64{"premium": 200, "free": 400}
	sat := func(v float64, d time.Duration) Input {
		return Input{Admitted: admitted, Signals: []Signal{
			{Name: "latency", Value: 0.1, Target: 0.25, Valid: true, At: t0.Add(d)},
			{Name: "saturation", Value: v, Target: 0.05, Valid: true, At: t0.Add(d), Keep: 1 - v}}}
	}
	old := law.Step(law.Init(t0), sat(0.5, time.Second), t0.Add(time.Second))
	cut, _ := old.Multiplier("free")
	if cut >= 1 {
		t.Fatalf("the old leader did not cut the free tier: %v", old)
	}
	healthy := func(d time.Duration) Input {
		in := sat(0, d)
		in.Admitted = map[string]float64{"premium": 200, "free": old.Tiers[1].Rate}
		return in
	}
	held := law.Step(old, healthy(2*time.Second), t0.Add(2*time.Second))
	if m, _ := held.Multiplier("free"); m != cut {
		t.Fatalf("the old leader moved free from %v to %v at its knee; want a hold", cut, m)
	}
	// The replica's shadow: its own healthy readings, never a cut.
	shadow := law.Step(law.Init(t0), healthy(time.Second), t0.Add(time.Second))
	adopted := law.Adopt(shadow, held.multipliers(), t0.Add(3*time.Second))
	next := law.Step(adopted, healthy(3*time.Second), t0.Add(3*time.Second))
	if m, _ := next.Multiplier("free"); m != cut {
		t.Errorf("new leader: free %v → %v on its first step; want %v, held where the old leader held", cut, m, cut)
	}
}
