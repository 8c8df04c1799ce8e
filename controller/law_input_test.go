package controller

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func sig(v, target float64, valid bool, measured time.Duration) Input {
	return Input{Signals: []Signal{{Name: "latency_p99", Value: v, Target: target, Valid: valid, At: at(measured)}}}
}

func TestStepUnusableSignalsHoldThenRecover(t *testing.T) {
	law := mustLaw(t, threeTiers()) // hold timeout 30 s, stale after 15 s
	nan, inf := math.NaN(), math.Inf(1)
	ns := ConditionNoSignal
	runSteps(t, law, state(1, 1, 0.5), []step{ // last usable reading at t0
		{10 * s, sig(nan, 1, true, 10*s), []float64{1, 1, 0.5}, hhh, ns, 0},
		{15 * s, sig(9, nan, true, 15*s), []float64{1, 1, 0.5}, hhh, ns, 0},
		{18 * s, sig(9, 1, false, 18*s), []float64{1, 1, 0.5}, hhh, ns, 0},
		{20 * s, sig(9, 1, true, 5*s-1), []float64{1, 1, 0.5}, hhh, ns, 0}, // stale by 1 ns
		{22 * s, sig(-inf, 1, true, 22*s), []float64{1, 1, 0.5}, hhh, ns, 0},
		{24 * s, sig(9, 0, true, 24*s), []float64{1, 1, 0.5}, hhh, ns, 0},
		{25 * s, sig(9, -1, true, 25*s), []float64{1, 1, 0.5}, hhh, ns, 0},
		{26 * s, sig(9, inf, true, 26*s), []float64{1, 1, 0.5}, hhh, ns, 0},
		{27 * s, Input{Signals: []Signal{}}, []float64{1, 1, 0.5}, hhh, ns, 0},
		{30*s - 1, Input{}, []float64{1, 1, 0.5}, hhh, ns, 0},
		{30 * s, Input{}, []float64{1, 1, 0.75}, hhr, ns, 1},
		{35 * s, sig(nan, 1, true, 35*s), []float64{1, 1, 1}, hhr, ns, 2},
		{40 * s, Input{}, []float64{1, 1, 1}, hhh, ns, 2},
	})
}

func TestStepRecoveryFollowsPriority(t *testing.T) {
	law := mustLaw(t, threeTiers())
	ns := ConditionNoSignal
	runSteps(t, law, state(0.5, 0.3, 0.1), []step{
		{30 * s, Input{}, []float64{0.625, 0.3, 0.1}, rhh, ns, 1},
		{35 * s, Input{}, []float64{0.75, 0.3, 0.1}, rhh, ns, 2},
		// A usable overloaded reading stops the recovery and cuts the only tier above its floor.
		{40 * s, latency(2, 40*s), []float64{0.675, 0.3, 0.1}, dhh, ConditionOverloaded, 3},
	})
}

func TestStepUsableReadingRestartsHoldClock(t *testing.T) {
	law := mustLaw(t, threeTiers())
	ns, band := ConditionNoSignal, ConditionBand
	runSteps(t, law, state(1, 1, 0.5), []step{
		{20 * s, Input{}, []float64{1, 1, 0.5}, hhh, ns, 0},
		{25 * s, latency(0.9, 25*s), []float64{1, 1, 0.5}, hhh, band, 0},
		{50 * s, Input{}, []float64{1, 1, 0.5}, hhh, ns, 0},
		{55*s - 1, Input{}, []float64{1, 1, 0.5}, hhh, ns, 0},
		{55 * s, Input{}, []float64{1, 1, 0.75}, hhr, ns, 1},
	})
}

func TestStepZeroStateStartsHoldClockNow(t *testing.T) {
	law := mustLaw(t, threeTiers())
	st := law.Step(State{}, Input{}, t0)
	if st.String() != "premium=1.00 standard=1.00 free=1.00 epoch=0" || !st.LastValid.Equal(t0) {
		t.Fatalf("zero state: %v, last valid %v", st, st.LastValid)
	}
}

func TestUsable(t *testing.T) {
	law := mustLaw(t, threeTiers())
	cases := []struct {
		name string
		s    Signal
		want bool
	}{
		{"fresh", Signal{Value: 1, Target: 1, Valid: true, At: t0}, true},
		{"zero At", Signal{Value: 1, Target: 1, Valid: true}, true},
		{"exactly stale_after old", Signal{Value: 1, Target: 1, Valid: true, At: at(-15 * s)}, true},
		{"older", Signal{Value: 1, Target: 1, Valid: true, At: at(-15*s - 1)}, false},
		{"from the future", Signal{Value: 1, Target: 1, Valid: true, At: at(time.Hour)}, true},
		{"not valid", Signal{Value: 1, Target: 1}, false},
		{"NaN value", Signal{Value: math.NaN(), Target: 1, Valid: true}, false},
		{"+Inf value", Signal{Value: math.Inf(1), Target: 1, Valid: true}, true},
		{"-Inf value", Signal{Value: math.Inf(-1), Target: 1, Valid: true}, false},
		{"zero value", Signal{Value: 0, Target: 1, Valid: true}, true},
		{"NaN target", Signal{Value: 1, Target: math.NaN(), Valid: true}, false},
		{"+Inf target", Signal{Value: 1, Target: math.Inf(1), Valid: true}, false},
		{"zero target", Signal{Value: 1, Valid: true}, false},
		{"negative target", Signal{Value: 1, Target: -1, Valid: true}, false},
	}
	for _, c := range cases {
		if got := law.Usable(c.s, t0); got != c.want {
			t.Errorf("%s: Usable = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestStepNormalizesForeignState(t *testing.T) {
	law := mustLaw(t, threeTiers())
	st := State{Epoch: 7, LastValid: t0, Tiers: []TierState{
		{Name: "gone", Multiplier: 0.2},
		{Name: "free", Multiplier: math.NaN()},
		{Name: "premium", Multiplier: 7},
		// standard missing
	}}
	got := law.Step(st, latency(0.9, 0), t0)
	if got.String() != "premium=1.00 standard=1.00 free=1.00 epoch=7" {
		t.Fatalf("NaN → ceiling, above → ceiling, missing → ceiling, unknown dropped: got %v", got)
	}
	st.Tiers = []TierState{{Name: "free", Multiplier: math.Inf(-1)}, {Name: "standard", Multiplier: -3}}
	got = law.Step(st, latency(0.9, 0), t0)
	if got.String() != "premium=1.00 standard=0.30 free=0.10 epoch=7" {
		t.Fatalf("below floor → floor: got %v", got)
	}
}

func TestStepDoesNotModifyItsInput(t *testing.T) {
	law := mustLaw(t, threeTiers())
	st := state(1, 1, 0.5)
	before := slices.Clone(st.Tiers)
	next := law.Step(st, latency(2, 0), t0)
	if !slices.Equal(st.Tiers, before) {
		t.Fatalf("Step changed its input: %v, was %v", st.Tiers, before)
	}
	if m, _ := next.Multiplier("free"); m != 0.25 {
		t.Fatalf("free = %v, want 0.25", m)
	}
	if _, ok := next.Multiplier("nope"); ok {
		t.Fatal("Multiplier of an unknown tier reported found")
	}
}

// randomValue draws from ordinary values and every kind of garbage.
func randomValue(r *rand.Rand) float64 {
	switch r.IntN(8) {
	case 0:
		return math.NaN()
	case 1:
		return math.Inf(1)
	case 2:
		return math.Inf(-1)
	case 3:
		return -r.Float64()
	case 4:
		return 0
	case 5:
		return math.MaxFloat64
	}
	return 3 * r.Float64()
}

func randomInput(r *rand.Rand, now time.Time) Input {
	in := Input{Signals: make([]Signal, r.IntN(4))}
	for i := range in.Signals {
		in.Signals[i] = Signal{Name: "s", Value: randomValue(r), Target: randomValue(r),
			Valid: r.IntN(5) > 0, At: now.Add(time.Duration(r.IntN(40)-30) * s)}
	}
	if r.IntN(2) == 0 {
		in.Admitted = map[string]float64{"free": 100 * randomValue(r), "standard": randomValue(r), "only": randomValue(r)}
	}
	return in
}

// TestStepNeverOutOfBounds drives the law with 20 000 random steps (garbage
// signals, a clock that jumps both ways, a state now and then corrupted) and
// checks the invariants after each.
func TestStepNeverOutOfBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, cfg := range []Settings{threeTiers(), {Tiers: []Tier{{Name: "only", Floor: 1e-3, Beta: 0.01, Alpha: 1}}}} {
		law := mustLaw(t, cfg)
		st, now := law.Init(t0), t0
		for i := range 10000 {
			now = now.Add(time.Duration(r.IntN(25)-5) * s)
			if r.IntN(50) == 0 {
				st.Tiers[r.IntN(len(st.Tiers))].Multiplier = randomValue(r)
			}
			if r.IntN(50) == 0 {
				st.Tiers[r.IntN(len(st.Tiers))].Rate = 100 * randomValue(r)
			}
			if r.IntN(50) == 0 {
				st.Tiers[r.IntN(len(st.Tiers))].Knee = randomValue(r)
			}
			in := randomInput(r, now)
			prev := law.normalize(st, now)
			st = law.Step(st, in, now)
			checkInvariants(t, i, law, prev, st)
		}
	}
}

func checkInvariants(t *testing.T, i int, law *Law, prev, st State) {
	t.Helper()
	moved := 0
	for j, ts := range st.Tiers {
		tier := law.tiers[j]
		if math.IsNaN(ts.Multiplier) || ts.Multiplier < tier.Floor || ts.Multiplier > tier.Ceiling {
			t.Fatalf("step %d: %s = %v outside [%v, %v]", i, ts.Name, ts.Multiplier, tier.Floor, tier.Ceiling)
		}
		if !(ts.Rate >= 0 && ts.Rate <= math.MaxFloat64) || (ts.Multiplier == tier.Ceiling && ts.Rate != 0) {
			t.Fatalf("step %d: %s rate cap %v at multiplier %v", i, ts.Name, ts.Rate, ts.Multiplier)
		}
		if ts.Knee != 0 && !(ts.Knee > ts.Multiplier && ts.Knee <= tier.Ceiling) {
			t.Fatalf("step %d: %s knee %v at multiplier %v", i, ts.Name, ts.Knee, ts.Multiplier)
		}
		if ts.Multiplier != prev.Tiers[j].Multiplier {
			moved++
		} else if ts.Rate != prev.Tiers[j].Rate {
			t.Fatalf("step %d: %s rate cap moved %v → %v without its multiplier", i, ts.Name, prev.Tiers[j].Rate, ts.Rate)
		}
		if ts.Multiplier < prev.Tiers[j].Multiplier && st.Condition != ConditionOverloaded {
			t.Fatalf("step %d: %s cut while %v", i, ts.Name, st.Condition)
		}
	}
	if len(st.Tiers) != len(law.tiers) || moved > 1 {
		t.Fatalf("step %d: %d tiers, %d moved", i, len(st.Tiers), moved)
	}
	if want := prev.Epoch + uint64(moved); st.Epoch != want {
		t.Fatalf("step %d: epoch %d, want %d", i, st.Epoch, want)
	}
}

// FuzzStep checks the bounds for any one signal and starting multiplier.
func FuzzStep(f *testing.F) {
	f.Add(2.0, 1.0, true, 0.5, int64(0))
	f.Add(math.NaN(), math.Inf(1), true, math.NaN(), int64(-1))
	f.Add(0.1, 1.0, true, -5.0, int64(1e12))
	law, err := NewLaw(threeTiers())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, v, target float64, valid bool, m float64, dt int64) {
		st := state(m, m, m)
		now := t0.Add(time.Duration(dt))
		in := Input{Signals: []Signal{{Value: v, Target: target, Valid: valid, At: now}}}
		for i := range 3 {
			prev := law.normalize(st, now)
			st = law.Step(st, in, now)
			checkInvariants(t, i, law, prev, st)
		}
	})
}
