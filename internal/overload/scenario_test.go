package overload

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// bucket is a token bucket as throttled's quota: rate per second, burst,
// starting full.
type tokenBucket struct {
	rate, burst, tokens float64
	last                time.Duration
}

func (b *tokenBucket) take(at time.Duration) bool {
	b.tokens = math.Min(b.burst, b.tokens+b.rate*(at-b.last).Seconds())
	b.last = at
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// refusals plays the schedule of sc's load li against each key's quota.
func refusals(sc Scenario, li int, lay layout) (refused, sent int) {
	quota := map[string]Tier{}
	for _, t := range sc.Tiers {
		quota[t.Name] = t
	}
	assigned := sc.Assignments()
	buckets := map[string]*tokenBucket{}
	s := &schedule{load: sc.Loads[li], lay: lay, rng: rand.New(rand.NewPCG(1, 2)), jit: 0.1}
	for sl, ok := s.next(); ok; sl, ok = s.next() {
		b := buckets[sl.key]
		if b == nil {
			tier, ok := assigned[sl.key]
			if !ok {
				tier = sc.DefaultTier
			}
			t := quota[tier]
			b = &tokenBucket{rate: float64(t.Quota), burst: float64(t.Burst), tokens: float64(t.Burst)}
			buckets[sl.key] = b
		}
		sent++
		if !b.take(sl.due) {
			refused++
		}
	}
	return refused, sent
}

// Every premium and free key stays within its quota (a token bucket at its
// tier's rate and burst never refuses it); the greedy key goes over by
// GreedyExcess a second.
func TestScenarioKeysKeepTheirQuota(t *testing.T) {
	lay := newLayout(30 * time.Second)
	for name, sc := range Scenarios(400) {
		for li, l := range sc.Loads {
			refused, sent := refusals(sc, li, lay)
			switch l.Name {
			case "greedy":
				if want := GreedyExcess * lay.seconds; math.Abs(float64(refused-want)) > FreeQuota {
					t.Errorf("%s: greedy refused %d of %d, want about %d", name, refused, sent, want)
				}
			default:
				if refused != 0 {
					t.Errorf("%s: %s refused %d of %d: its keys are over quota", name, l.Name, refused, sent)
				}
			}
		}
	}
}

func TestScenarioLoads(t *testing.T) {
	const c = 400
	rate := func(sc Scenario, name string) [NumPhases]float64 {
		for _, l := range sc.Loads {
			if l.Name == name {
				return l.Rate
			}
		}
		t.Fatalf("%s has no %s load", sc.Name, name)
		return [NumPhases]float64{}
	}
	all := Scenarios(c)
	for _, tc := range []struct {
		name             string
		premium, free    [NumPhases]float64
		instances        int
		capacity         [NumPhases]float64
		freeKeys, active int // keys of the free load, active in the overload
	}{
		{"surge", [3]float64{200, 200, 200}, [3]float64{100, 1000, 100}, 1, [3]float64{400, 400, 400}, 100, 100},
		{"crowd", [3]float64{200, 200, 200}, [3]float64{100, 1000, 100}, 1, [3]float64{400, 400, 400}, 2000, 2000},
		{"slowdown", [3]float64{200, 200, 200}, [3]float64{120, 120, 120}, 1, [3]float64{400, 200, 400}, 12, 12},
		{"instances", [3]float64{200, 200, 200}, [3]float64{100, 1000, 100}, 3, [3]float64{400, 400, 400}, 100, 100},
	} {
		sc, err := Lookup(tc.name, c)
		if err != nil {
			t.Fatal(err)
		}
		if sc.Name != tc.name || rate(sc, "premium") != tc.premium || rate(sc, "free") != tc.free || sc.Instances != tc.instances {
			t.Errorf("%s: premium %v free %v instances %d", tc.name, rate(sc, "premium"), rate(sc, "free"), sc.Instances)
		}
		for p := range NumPhases {
			if sc.CapacityIn(p) != tc.capacity[p] {
				t.Errorf("%s: capacity in %v %v, want %v", tc.name, p, sc.CapacityIn(p), tc.capacity[p])
			}
		}
		if l := sc.Loads[1]; len(l.Keys) != tc.freeKeys || l.Active[During] != tc.active {
			t.Errorf("%s: %d free keys, %d active, want %d and %d", tc.name, len(l.Keys), l.Active[During], tc.freeKeys, tc.active)
		}
		if err := sc.validate(); err != nil {
			t.Error(err)
		}
		if a := sc.Assignments(); len(a) != PremiumKeys || a["premium-0"] != "premium" || sc.DefaultTier != "free" {
			t.Errorf("%s: assignments %v, default %q", tc.name, a, sc.DefaultTier)
		}
	}
	if len(all) != len(Names()) {
		t.Fatalf("%d scenarios, %d names", len(all), len(Names()))
	}
	if _, err := Lookup("stampede", c); !errors.Is(err, ErrUnknownScenario) {
		t.Fatalf("unknown scenario: %v", err)
	}
}

// The schedule is exact: ⌊rate·len + ½⌋ requests per phase, in order,
// each within its phase, keys round robin.
func TestSchedule(t *testing.T) {
	l := Load{Name: "x", Keys: keys("k-", 3), Active: [3]int{3, 2, 1}, Rate: [3]float64{200, 0.5, 7.3}}
	lay := layout{seconds: 7, third: 2} // phases [0,2) [2,4) [4,7)
	s := &schedule{load: l, lay: lay, rng: rand.New(rand.NewPCG(3, 4)), jit: 1}
	var per [NumPhases]int
	var prev time.Duration
	for sl, ok := s.next(); ok; sl, ok = s.next() {
		p := lay.phaseOf(int(sl.due / time.Second))
		if sl.due < prev || sl.due < time.Duration(lay.start(p))*time.Second || sl.due >= time.Duration(lay.end(p))*time.Second {
			t.Fatalf("slot at %v after %v, or outside its phase %v", sl.due, prev, p)
		}
		if want := l.Keys[per[p]%l.Active[p]]; sl.key != want {
			t.Fatalf("request %d of %v went to %s, want %s", per[p], p, sl.key, want)
		}
		prev = sl.due
		per[p]++
	}
	if per != [3]int{400, 1, 22} {
		t.Fatalf("requests per phase %v, want [400 1 22]", per)
	}
}

func TestPickerSplitsExactly(t *testing.T) {
	p := newPicker([]float64{0.6, 0.3, 0.1})
	var n [3]int
	for range 100 {
		n[p.next()]++
	}
	if n != [3]int{60, 30, 10} {
		t.Fatalf("split %v, want [60 30 10]", n)
	}
}
