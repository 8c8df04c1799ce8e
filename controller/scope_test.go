package controller

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/throttledhq/throttled/limiter/multiplier"
	"github.com/throttledhq/throttled/signals"
)

// instanceSource is a fakeSource that also reads each instance's own
// saturation: by tick, instance → saturation (an absent tick: none read).
type instanceSource struct {
	*fakeSource
	clock *fakeClock
	sat   func(tick int) map[string]float64
	last  map[string][]Signal
}

func (s *instanceSource) Read(ctx context.Context) (Input, error) {
	in, err := s.fakeSource.Read(ctx)
	s.last = nil
	for id, v := range s.sat(s.clock.tick()) {
		if s.last == nil {
			s.last = map[string][]Signal{}
		}
		s.last[id] = []Signal{satSignal(v, s.clock.now)}
	}
	return in, err
}

func (s *instanceSource) Instances() map[string][]Signal { return s.last }

func satSignal(v float64, now time.Time) Signal {
	return Signal{Name: "saturation", Value: v, Target: 0.05, Valid: true, At: now, Keep: 1 - v}
}

// scopeHarness: the fleet reads the hot instance's saturation 0.5 (its
// largest) and admits 100 free requests a second; "hot" reads 0.5 and
// "fine" fineSat until tick leave, when fine leaves the reading.
func scopeHarness(t *testing.T, ticks, leave int, fineSat float64, scope Scope, pubOf func(*harness) Publisher) (*harness, *Loop) {
	h := newHarness(ticks)
	h.src.read = func(_ int, now time.Time) (Input, error) {
		return Input{Signals: []Signal{satSignal(0.5, now)}, Admitted: map[string]float64{"free": 100}}, nil
	}
	src := &instanceSource{fakeSource: h.src, clock: h.clock, sat: func(tick int) map[string]float64 {
		if tick >= leave {
			return map[string]float64{"hot": 0.5}
		}
		return map[string]float64{"hot": 0.5, "fine": fineSat}
	}}
	st := threeTiers()
	st.Scope = scope
	var pub Publisher = h.pub
	if pubOf != nil {
		pub = pubOf(h)
	}
	l, err := NewLoop(mustLaw(t, st), src, pub, h.lease, h.reg, WithClock(h.clock), WithRand(func() float64 { return 0.5 }))
	if err != nil {
		t.Fatal(err)
	}
	return h, l
}

// With ScopeInstance the fleet's multipliers are cut on the hot reading
// and the fine instance's own factors stay at 1 beside them; the hot
// instance, whose reading is the fleet's, needs no entry of its own. The
// fleet's rate cap is left out. When fine leaves the reading its entry
// goes, and each change of the entries is a new epoch.
func TestLoopInstanceScopePublishesOwnFactors(t *testing.T) {
	h, l := scopeHarness(t, 4, 3, 0, ScopeInstance, nil)
	var counts, factors []float64
	h.clock.after = func(int) {
		counts = append(counts, testutil.ToFloat64(l.met.instCount))
		factors = append(factors, testutil.ToFloat64(l.met.instOwn))
	}
	h.run(t, l)
	if len(h.pub.published) != 4 {
		t.Fatalf("published %d sets, want 4", len(h.pub.published))
	}
	var epochs []uint64
	for i, m := range h.pub.published {
		epochs = append(epochs, m.Epoch)
		if !(m.Tiers["free"] < 1) {
			t.Fatalf("tick %d: the fleet's free %v, want a cut (the hot reading)", i, m.Tiers["free"])
		}
		if m.Rates != nil {
			t.Fatalf("tick %d: rate caps %v published in the instance scope", i, m.Rates)
		}
		if _, ok := m.Instances["hot"]; ok {
			t.Fatalf("tick %d: hot has its own entry %v, want the fleet's (its reading is the fleet's)", i, m.Instances["hot"])
		}
		fine, ok := m.Instances["fine"]
		if i < 3 && (!ok || fine["free"] != 1 || len(fine) != 1) {
			t.Fatalf("tick %d: fine's own factors %v, want free 1 beside the fleet's %v", i, fine, m.Tiers)
		}
		if i >= 3 && len(m.Instances) != 0 {
			t.Fatalf("tick %d: entries %v after fine left the reading, want none", i, m.Instances)
		}
	}
	// Cuts at ticks 0 and 2 (cool-down 10 s); fine's entry at 0, gone at 3.
	if want := []uint64{2, 2, 3, 4}; !slices.Equal(epochs, want) {
		t.Fatalf("epochs %v, want %v", epochs, want)
	}
	if want := []float64{2, 2, 2, 1}; !slices.Equal(counts, want) {
		t.Fatalf("throttled_controller_instances by tick %v, want %v", counts, want)
	}
	if want := []float64{1, 1, 1, 0}; !slices.Equal(factors, want) {
		t.Fatalf("throttled_controller_instance_factors by tick %v, want %v", factors, want)
	}
	if got := testutil.ToFloat64(l.met.instCount); got != 0 {
		t.Fatalf("throttled_controller_instances %v after the lease was released, want 0", got)
	}
}

// The fleet scope publishes exactly what it did before scopes: no
// instance's entries, the rate cap, one epoch per cut.
func TestLoopFleetScopeIgnoresInstances(t *testing.T) {
	h, l := scopeHarness(t, 3, 99, 0, ScopeFleet, nil)
	h.run(t, l)
	for i, m := range h.pub.published {
		if m.Instances != nil || m.Rates["free"] <= 0 {
			t.Fatalf("tick %d: instances %v, rates %v; want none and a free cap", i, m.Instances, m.Rates)
		}
	}
	if got, want := published(h.pub), "0:0.5@1 1:0.5@1 2:0.25@2"; got != want {
		t.Fatalf("published %q, want %q", got, want)
	}
	if got := testutil.ToFloat64(l.met.instCount); got != 0 {
		t.Fatalf("throttled_controller_instances %v in the fleet scope, want 0", got)
	}
}

// A new leader continues an instance from its published own factors: fine,
// whose reading 0.045 is in the band (hold), stays at 1 from the first
// step, rather than holding the fleet's 0.25.
func TestLoopInstanceScopeAdoptsOwnFactors(t *testing.T) {
	prev := multiplier.Set{Tiers: map[string]float64{"free": 0.25, "standard": 1, "premium": 1}, Epoch: 7, At: t0.Add(-5 * time.Second),
		Instances: map[string]map[string]float64{"fine": {"free": 1}}}
	var lp *loadingPublisher
	h, l := scopeHarness(t, 1, 99, 0.045, ScopeInstance, func(h *harness) Publisher {
		lp = &loadingPublisher{fakePublisher: h.pub, load: func(int) (multiplier.Set, bool, error) { return prev, true, nil }}
		return lp
	})
	h.run(t, l)
	if len(lp.published) != 1 {
		t.Fatalf("published %d sets, want 1", len(lp.published))
	}
	m := lp.published[0]
	if got := m.Instances["fine"]; !maps.Equal(got, map[string]float64{"free": 1}) {
		t.Fatalf("fine's own factors %v, want free 1 (adopted) beside the fleet's %v", got, m.Tiers)
	}
	if m.Epoch <= prev.Epoch {
		t.Fatalf("epoch %d, want above the adopted %d", m.Epoch, prev.Epoch)
	}
}

func TestParseScope(t *testing.T) {
	for name, want := range map[string]Scope{"": ScopeFleet, "fleet": ScopeFleet, "instance": ScopeInstance} {
		if got, err := ParseScope(name); err != nil || got != want {
			t.Errorf("ParseScope(%q) = %v, %v; want %v", name, got, err, want)
		}
	}
	if _, err := ParseScope("pod"); err == nil {
		t.Error(`ParseScope("pod"): no error`)
	}
	st := threeTiers()
	st.Scope = 7
	if err := st.Validate(); err == nil {
		t.Error("Validate of scope 7: no error")
	}
}

// byInstanceSource reads a fleet saturation with each instance's.
type byInstanceSource struct{ by map[string]signals.Value }

func (s byInstanceSource) Read(context.Context) (signals.Signals, error) {
	return signals.Signals{Saturation: signals.Value{V: 0.5, Valid: true}, SaturationByInstance: s.by}, nil
}

// FromSignals keeps each instance's saturation of its last Read as a
// Signal like the fleet's (Keep = 1 − s when refused); a Read without any
// gives nil (hold).
func TestFromSignalsKeepsEachInstance(t *testing.T) {
	src := byInstanceSource{by: map[string]signals.Value{"hot": {V: 0.5, Valid: true}, "fine": {V: 0, Valid: true}}}
	s := FromSignals(src, map[signals.Kind]float64{signals.Saturation: 0.05}, signals.Saturation)
	if _, err := s.Read(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := s.(InstanceReader).Instances()
	if len(got) != 2 || got["hot"][0].Value != 0.5 || got["hot"][0].Keep != 0.5 || got["fine"][0].Keep != 1 || got["fine"][0].Target != 0.05 {
		t.Fatalf("instances %+v, want hot 0.5 (keep 0.5) and fine 0 (keep 1), target 0.05", got)
	}
	s = FromSignals(byInstanceSource{}, map[signals.Kind]float64{signals.Saturation: 0.05}, signals.Saturation)
	if _, err := s.Read(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := s.(InstanceReader).Instances(); got != nil {
		t.Fatalf("instances %v of a read without any, want nil", got)
	}
}
