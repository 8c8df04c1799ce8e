package overload

import (
	"fmt"
	"math"
	"strconv"
)

// KeyHeader carries the clients' API keys.
const KeyHeader = "X-API-Key"

// Quotas of the scenarios' keys.
const (
	PremiumKeys  = 4  // premium-0 .. premium-3 share the premium load, each at its quota
	FreeQuota    = 10 // requests per second per free key
	GreedyExcess = 5  // requests per second the greedy key sends above its quota
)

// Load is one stream of clients. In phase p its Rate[p] requests per second
// go round robin to Keys[:Active[p]].
type Load struct {
	Name   string // its group in rows and reports: "premium", "free" or "greedy"
	Keys   []string
	Active [NumPhases]int
	Rate   [NumPhases]float64
}

// Tier is a tier the stack's configuration must hold: a per-key quota of
// Quota requests per second with Burst, and the keys assigned to it (none
// for the scenario's DefaultTier, which takes every other key).
type Tier struct {
	Name     string
	Priority int // 0 is the highest
	Quota    int64
	Burst    int64
	Keys     []string
}

// Scenario is a named load against a backend of capacity Capacity.
type Scenario struct {
	Name        string
	Capacity    float64 // C, requests per second, the loads are built for
	Loads       []Load
	Tiers       []Tier
	DefaultTier string
	// Instances is how many enforcing instances the stack must start;
	// Split[i] is the share of every load sent to instance i.
	Instances int
	Split     []float64
	// ServiceFactor is the backend's service time per phase, relative to
	// its nominal one (2 halves the capacity).
	ServiceFactor [NumPhases]float64
	// Burn marks the phases in which another process burns one core (see burn.go).
	Burn [NumPhases]bool
}

// Assignments maps every key outside the default tier to its tier.
func (s Scenario) Assignments() map[string]string {
	m := map[string]string{}
	for _, t := range s.Tiers {
		for _, k := range t.Keys {
			m[k] = t.Name
		}
	}
	return m
}

// CapacityIn is the backend's capacity in phase p.
func (s Scenario) CapacityIn(p Phase) float64 { return s.Capacity / s.ServiceFactor[p] }

// Names lists the scenarios in their usual order.
func Names() []string {
	return []string{"surge", "crowd", "slowdown", "instances", "starved", "fleet"}
}

// Scenarios builds every scenario for a backend of capacity c (req/s):
//   - surge: premium 0.5·C at quota; free 0.25·C, 2.5·C in the overload
//     phase, each free key at its quota (10 req/s);
//   - crowd: the same load from 2,000 free keys each well under quota;
//   - slowdown: premium 0.5·C and free 0.3·C throughout, while the
//     backend's service time doubles in the overload phase;
//   - instances: surge through 3 enforcing instances, split 60/30/10;
//   - starved: surge while another process burns one core in the
//     overload phase (see burn.go);
//   - fleet: surge through FleetInstances behind an uneven balancer (fleet.go).
//
// Each also has one greedy free key sending GreedyExcess req/s above its
// quota (the 429s); it is not part of the premium and free figures.
func Scenarios(c float64) map[string]Scenario {
	surge := base("surge", c, atQuota(c*0.25, c*2.5, c*0.25))
	crowd := base("crowd", c, Load{Name: "free", Keys: keys("free-", 2000),
		Active: [NumPhases]int{2000, 2000, 2000}, Rate: [NumPhases]float64{c * 0.25, c * 2.5, c * 0.25}})
	slow := base("slowdown", c, atQuota(c*0.3, c*0.3, c*0.3))
	slow.ServiceFactor[During] = 2
	inst := base("instances", c, atQuota(c*0.25, c*2.5, c*0.25))
	inst.Instances, inst.Split = 3, []float64{0.6, 0.3, 0.1}
	return map[string]Scenario{"surge": surge, "crowd": crowd, "slowdown": slow, "instances": inst,
		"starved": starved(c), "fleet": fleet(c)}
}

// Lookup returns the scenario name for capacity c.
func Lookup(name string, c float64) (Scenario, error) {
	s, ok := Scenarios(c)[name]
	if !ok {
		return Scenario{}, fmt.Errorf("%w %q: want one of %v", ErrUnknownScenario, name, Names())
	}
	return s, nil
}

// base is a scenario with premium at quota, the greedy key and free.
func base(name string, c float64, free Load) Scenario {
	pq := int64(math.Ceil(c * 0.5 / PremiumKeys))
	premium := Load{Name: "premium", Keys: keys("premium-", PremiumKeys),
		Active: [NumPhases]int{PremiumKeys, PremiumKeys, PremiumKeys}, Rate: [NumPhases]float64{c * 0.5, c * 0.5, c * 0.5}}
	g := float64(FreeQuota + GreedyExcess)
	greedy := Load{Name: "greedy", Keys: []string{"greedy-0"}, Active: [NumPhases]int{1, 1, 1},
		Rate: [NumPhases]float64{g, g, g}}
	return Scenario{
		Name: name, Capacity: c, Loads: []Load{premium, free, greedy},
		Tiers: []Tier{
			{Name: "premium", Priority: 0, Quota: pq, Burst: pq, Keys: premium.Keys},
			{Name: "free", Priority: 1, Quota: FreeQuota, Burst: FreeQuota},
		},
		DefaultTier: "free", Instances: 1, Split: []float64{1}, ServiceFactor: [NumPhases]float64{1, 1, 1},
	}
}

// atQuota is a free load whose active keys each send at most FreeQuota.
func atQuota(rates ...float64) Load {
	l := Load{Name: "free"}
	n := 0
	for p, r := range rates {
		l.Rate[p] = r
		l.Active[p] = max(1, int(math.Ceil(r/FreeQuota-1e-9)))
		n = max(n, l.Active[p])
	}
	l.Keys = keys("free-", n)
	return l
}

func keys(prefix string, n int) []string {
	k := make([]string, n)
	for i := range k {
		k[i] = prefix + strconv.Itoa(i)
	}
	return k
}

// validate checks what Run relies on.
func (s Scenario) validate() error {
	if s.Capacity <= 0 || s.Instances < 1 || len(s.Split) != s.Instances || len(s.Loads) == 0 {
		return fmt.Errorf("%w: %q needs a capacity, loads and one share per instance", ErrScenario, s.Name)
	}
	for p := range NumPhases {
		if s.ServiceFactor[p] <= 0 {
			return fmt.Errorf("%w: %q: service factor of phase %v is %v", ErrScenario, s.Name, p, s.ServiceFactor[p])
		}
	}
	for _, l := range s.Loads {
		for p := range NumPhases {
			if l.Rate[p] < 0 || (l.Rate[p] > 0 && (l.Active[p] < 1 || l.Active[p] > len(l.Keys))) {
				return fmt.Errorf("%w: %q: load %s in phase %v", ErrScenario, s.Name, l.Name, p)
			}
		}
	}
	return nil
}
