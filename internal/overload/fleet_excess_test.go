package overload

import (
	"math"
	"testing"
	"time"
)

// TestExcessRecoveryAllowsEachBackendsOwnExcess: after the overload an
// instance whose base load exceeds its own backend may keep refusing that
// excess (and 10 % of its capacity more) and still count as recovered;
// refusing more is not recovered; one shared backend is judged on the
// fleet's sum; joiners and leavers are not judged in the interval they
// come or go.
func TestExcessRecoveryAllowsEachBackendsOwnExcess(t *testing.T) {
	type c = InstanceCounts
	const end = 20 * time.Second // the overload's end
	at := func(sec float64, counts map[string]InstanceCounts) InstanceSample {
		return InstanceSample{At: time.Duration(sec * float64(time.Second)), Counts: counts}
	}
	own := map[string]float64{"hot": 10, "fine": 10} // req/s, each its own backend
	shared := map[string]float64{"": 20}
	for _, tc := range []struct {
		name     string
		samples  []InstanceSample
		capacity map[string]float64
		want     time.Duration
	}{
		{"the hot instance refuses its excess alone", []InstanceSample{
			at(20, map[string]c{"hot": {Received: 100, OverQuota: 0, ForLoad: 50}, "fine": {Received: 50, OverQuota: 0, ForLoad: 0}}),
			at(21, map[string]c{"hot": {Received: 125, OverQuota: 0, ForLoad: 65}, "fine": {Received: 58, OverQuota: 0, ForLoad: 0}}), // hot: 25 offered, 15 refused = its excess
			at(22, map[string]c{"hot": {Received: 150, OverQuota: 0, ForLoad: 80}, "fine": {Received: 66, OverQuota: 0, ForLoad: 0}}),
		}, own, 0},
		{"429s are not offered to the backend", []InstanceSample{
			at(20, map[string]c{"hot": {Received: 0, OverQuota: 0, ForLoad: 0}}),
			at(21, map[string]c{"hot": {Received: 30, OverQuota: 10, ForLoad: 11}}), // 20 offered: excess 10, slack 1
		}, own, 0},
		{"refusing more than the excess until 22 s", []InstanceSample{
			at(20, map[string]c{"hot": {Received: 0, OverQuota: 0, ForLoad: 0}, "fine": {Received: 0, OverQuota: 0, ForLoad: 0}}),
			at(21, map[string]c{"hot": {Received: 25, OverQuota: 0, ForLoad: 20}, "fine": {Received: 8, OverQuota: 0, ForLoad: 4}}),  // fine refuses 4 with no excess
			at(22, map[string]c{"hot": {Received: 50, OverQuota: 0, ForLoad: 37}, "fine": {Received: 16, OverQuota: 0, ForLoad: 4}}), // hot refuses 17 of an excess of 15 (+1 slack)
			at(23, map[string]c{"hot": {Received: 75, OverQuota: 0, ForLoad: 52}, "fine": {Received: 24, OverQuota: 0, ForLoad: 4}}),
		}, own, 2 * time.Second},
		{"still refusing more at the end", []InstanceSample{
			at(20, map[string]c{"fine": {Received: 0, OverQuota: 0, ForLoad: 0}}),
			at(21, map[string]c{"fine": {Received: 8, OverQuota: 0, ForLoad: 0}}),
			at(22, map[string]c{"fine": {Received: 16, OverQuota: 0, ForLoad: 2}}),
		}, own, -1},
		{"a shared backend is judged on the sum", []InstanceSample{
			at(20, map[string]c{"a": {Received: 0, OverQuota: 0, ForLoad: 0}, "b": {Received: 0, OverQuota: 0, ForLoad: 0}}),
			at(21, map[string]c{"a": {Received: 25, OverQuota: 0, ForLoad: 4}, "b": {Received: 5, OverQuota: 0, ForLoad: 7}}), // 30 offered to 20: excess 10, slack 2, refused 11
		}, shared, 0},
		{"a joiner and a leaver are not judged where they come and go", []InstanceSample{
			at(20, map[string]c{"hot": {Received: 0, OverQuota: 0, ForLoad: 0}, "gone": {Received: 0, OverQuota: 0, ForLoad: 0}}),
			at(21, map[string]c{"hot": {Received: 10, OverQuota: 0, ForLoad: 0}, "new": {Received: 50, OverQuota: 0, ForLoad: 50}}),
		}, own, 0},
		{"intervals of the overload are not judged", []InstanceSample{
			at(18, map[string]c{"hot": {Received: 0, OverQuota: 0, ForLoad: 0}}),
			at(19, map[string]c{"hot": {Received: 50, OverQuota: 0, ForLoad: 50}}),
			at(20, map[string]c{"hot": {Received: 60, OverQuota: 0, ForLoad: 50}}),
			at(21, map[string]c{"hot": {Received: 70, OverQuota: 0, ForLoad: 50}}),
		}, own, 0},
		{"no interval after the end", []InstanceSample{
			at(19, map[string]c{"hot": {Received: 0, OverQuota: 0, ForLoad: 0}}),
			at(20.5, map[string]c{"hot": {Received: 10, OverQuota: 0, ForLoad: 0}}),
		}, own, -1},
	} {
		if got := ExcessRecovery(tc.samples, end, tc.capacity); got != tc.want {
			t.Errorf("%s: recovery %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestBeyondExcessPctCountsOnlyWhatNoBackendNeeded: in the overload, what
// an instance refuses up to its own backend's excess (and 10 % of its
// capacity) is its own; the rest, here a fine instance shed for a hot
// one, is counted against all that was sent.
func TestBeyondExcessPctCountsOnlyWhatNoBackendNeeded(t *testing.T) {
	type c = InstanceCounts
	own := map[string]float64{"hot": 10, "fine": 10}
	s := []InstanceSample{
		{At: 9 * time.Second, Counts: map[string]c{"hot": {Received: 0, OverQuota: 0, ForLoad: 0}, "fine": {Received: 0, OverQuota: 0, ForLoad: 0}}},
		{At: 10 * time.Second, Counts: map[string]c{"hot": {Received: 50, OverQuota: 0, ForLoad: 40}, "fine": {Received: 10, OverQuota: 0, ForLoad: 10}}}, // before the overload
		{At: 11 * time.Second, Counts: map[string]c{"hot": {Received: 90, OverQuota: 0, ForLoad: 70}, "fine": {Received: 18, OverQuota: 0, ForLoad: 13}}},
		{At: 12 * time.Second, Counts: map[string]c{"hot": {Received: 130, OverQuota: 10, ForLoad: 100}, "fine": {Received: 26, OverQuota: 0, ForLoad: 13}}},
	}
	// 10–11 s: hot offered 40, excess 30, slack 1, refused 30: none beyond;
	// fine offered 8, excess 0, slack 1, refused 3: 2 beyond.
	// 11–12 s: hot offered 30 (10 over quota), excess 20, slack 1, refused
	// 30: 9 beyond; fine refused 0. Sent 40 + 8 + 40 + 8 = 96.
	if got, want := BeyondExcessPct(s, 10*time.Second, 12*time.Second, own), 100*11/96.0; math.Abs(got-want) > 1e-9 {
		t.Errorf("beyond the excess %.3f%%, want %.3f%%", got, want)
	}
	if got := BeyondExcessPct(s, 13*time.Second, 20*time.Second, own); got != -1 {
		t.Errorf("without an interval: %v, want -1", got)
	}
}

// TestPremiumCeilingPctBoundsWhatOwnBackendsCanServe: a hot instance whose
// premium alone exceeds its own backend caps the fleet's premium; one
// shared backend serves all of it.
func TestPremiumCeilingPctBoundsWhatOwnBackendsCanServe(t *testing.T) {
	s := []InstanceSample{
		{At: 10 * time.Second, Counts: map[string]InstanceCounts{"hot": {}, "fine": {}}},
		{At: 11 * time.Second, Counts: map[string]InstanceCounts{"hot": {Received: 40, Premium: 15}, "fine": {Received: 8, Premium: 5}}},
	}
	// hot: 15 premium, its backend serves 10; fine: 5 of 10. 15 of 20.
	if got := PremiumCeilingPct(s, 10*time.Second, 11*time.Second, map[string]float64{"hot": 10, "fine": 10}); got != 75 {
		t.Errorf("per-instance ceiling %v%%, want 75%%", got)
	}
	if got := PremiumCeilingPct(s, 10*time.Second, 11*time.Second, map[string]float64{"": 20}); got != 100 {
		t.Errorf("shared ceiling %v%%, want 100%%", got)
	}
	if got := PremiumCeilingPct(s, 12*time.Second, 13*time.Second, map[string]float64{"": 20}); got != -1 {
		t.Errorf("without premium: %v, want -1", got)
	}
}
