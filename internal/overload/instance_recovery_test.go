package overload

import (
	"testing"
	"time"
)

// TestInstanceRecoveryIsBackToWhereEachInstanceStood: each instance is
// judged against its own multipliers before the overload (a hot instance
// cut before it only has to get back to that cut), joiners and leavers are
// not judged, and the recovery ends at the first sample from which every
// instance stays back.
func TestInstanceRecoveryIsBackToWhereEachInstanceStood(t *testing.T) {
	s := func(sec float64, m map[string]map[string]float64) InstanceSample {
		return InstanceSample{At: time.Duration(sec * float64(time.Second)), M: m}
	}
	pre := map[string]map[string]float64{
		"hot":  {"free": 0.4, "premium": 1},
		"fine": {"free": 1, "premium": 1},
	}
	const end = 20 * time.Second // the overload's end
	for _, tc := range []struct {
		name    string
		samples []InstanceSample
		want    time.Duration
	}{
		{"never left", []InstanceSample{
			s(20, map[string]map[string]float64{"hot": {"free": 0.4}, "fine": {"free": 1}}),
			s(21, map[string]map[string]float64{"hot": {"free": 0.4}, "fine": {"free": 1}}),
		}, 0},
		{"the hot instance back at its own cut", []InstanceSample{
			s(20, map[string]map[string]float64{"hot": {"free": 0.1}, "fine": {"free": 0.5}}),
			s(21.5, map[string]map[string]float64{"hot": {"free": 0.2}, "fine": {"free": 1}}),
			s(23, map[string]map[string]float64{"hot": {"free": 0.395}, "fine": {"free": 1}}),
			s(25, map[string]map[string]float64{"hot": {"free": 0.5}, "fine": {"free": 1}}),
		}, 3 * time.Second},
		{"back, then cut again", []InstanceSample{
			s(21, map[string]map[string]float64{"hot": {"free": 0.4}, "fine": {"free": 1}}),
			s(22, map[string]map[string]float64{"hot": {"free": 0.4}, "fine": {"free": 0.9}}),
			s(24, map[string]map[string]float64{"hot": {"free": 0.4}, "fine": {"free": 1}}),
		}, 4 * time.Second},
		{"still below at the end", []InstanceSample{
			s(21, map[string]map[string]float64{"hot": {"free": 0.4}, "fine": {"free": 1}}),
			s(22, map[string]map[string]float64{"hot": {"free": 0.3}, "fine": {"free": 1}}),
		}, -1},
		{"a joiner and a leaver are not judged", []InstanceSample{
			s(21, map[string]map[string]float64{"hot": {"free": 0.4}, "new": {"free": 0.1}}),
		}, 0},
		{"samples of the overload are ignored", []InstanceSample{
			s(15, map[string]map[string]float64{"hot": {"free": 0.1}, "fine": {"free": 0.1}}),
			s(20.5, map[string]map[string]float64{"hot": {"free": 0.4}, "fine": {"free": 1}}),
		}, 0},
		{"no sample after the end", []InstanceSample{
			s(15, map[string]map[string]float64{"hot": {"free": 0.1}}),
		}, -1},
	} {
		if got := InstanceRecovery(pre, tc.samples, end); got != tc.want {
			t.Errorf("%s: recovery %v, want %v", tc.name, got, tc.want)
		}
	}
}
