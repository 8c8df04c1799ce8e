package overload

import (
	"math"
	"slices"
	"testing"
	"time"
)

// The uneven balancer's busiest instance gets exactly FleetSkew times the
// median share, for any fleet of 3 or more, and the shares sum to 1.
func TestFleetSplitBusiestIsFiveTimesTheMedian(t *testing.T) {
	if w := FleetSplit(2); math.Abs(w[0]-FleetSkew*w[1]) > 1e-9 || math.Abs(sum(w)-1) > 1e-9 {
		t.Errorf("n=2: shares %v, want %v to 1 summing to 1", w, FleetSkew)
	}
	for _, n := range []int{3, 10, 12, 30} {
		w := FleetSplit(n)
		if len(w) != n {
			t.Fatalf("n=%d: %d shares", n, len(w))
		}
		if s := sum(w); math.Abs(s-1) > 1e-9 {
			t.Errorf("n=%d: shares sum to %v, want 1", n, s)
		}
		if r := slices.Max(w) / MedianShare(w); math.Abs(r-FleetSkew) > 1e-9 {
			t.Errorf("n=%d: busiest ÷ median = %v, want %v", n, r, FleetSkew)
		}
		if !slices.Equal(w, FleetSplit(n)) {
			t.Errorf("n=%d: shares differ between calls", n)
		}
	}
}

// TierCaps compares each overload second but the first with the cap in
// force at its end: free (with greedy) admitted 2xx + backend 503s.
func TestTierCapsComparesAdmittedWithTheCapInForce(t *testing.T) {
	row := func(k int, p Phase, free, greedy int64) Row {
		f, g := &Counts{}, &Counts{}
		f.Class[OK], f.Class[Backend503], f.Class[Shed] = free-10, 10, 500
		g.Class[OK] = greedy
		return Row{Second: k, Phase: p, Loads: map[string]*Counts{"free": f, "greedy": g, "premium": {}}}
	}
	rows := []Row{row(0, Before, 100, 10), row(1, During, 500, 10), row(2, During, 90, 10), row(3, During, 150, 10), row(4, After, 100, 10)}
	caps := []CapSample{{At: 1500 * time.Millisecond, Rates: map[string]float64{"free": 100}}}
	got := TierCaps(rows, caps, map[string]string{"free": "free", "greedy": "free", "premium": "premium"})
	want := []TierCap{{Tier: "free", Seconds: 2, Within: 1, Median: 1.3, Highest: 1.6, CapRPS: 100}}
	if !slices.Equal(got, want) {
		t.Errorf("TierCaps = %+v, want %+v", got, want)
	}
}
