package overload

import "time"

// InstanceSample is the multipliers each enforcing instance applied at At
// (since the run's start): instance id → tier → multiplier.
type InstanceSample struct {
	At time.Duration
	M  map[string]map[string]float64
}

// recoveryTolerance is how far below its value before the overload an
// instance's multiplier may stand and count as back: the law's smallest
// steps are larger.
const recoveryTolerance = 0.01

// InstanceRecovery is the time from `from` (the overload's end) until
// every instance is back at the multipliers it applied before the
// overload (pre, taken at its start), for the rest of the samples: 0 if
// every instance already is at from, -1 if one is still below in the last
// sample or when no sample is from from on. It is the recovery of a fleet whose instances each have their
// own backend: one whose share of the base load is more than its backend
// serves is cut before the overload and stays cut after it, which is its
// normal state, not a recovery still owed. An instance absent from pre (it
// joined in the overload) or from a sample (it left) is not judged there,
// nor a tier it did not apply before. Samples before from are ignored.
func InstanceRecovery(pre map[string]map[string]float64, samples []InstanceSample, from time.Duration) time.Duration {
	first, last := -1, -1
	for i, s := range samples {
		if s.At < from {
			continue
		}
		if first < 0 {
			first = i
		}
		if !backAt(pre, s.M) {
			last = i
		}
	}
	switch {
	case first < 0:
		return -1
	case last < 0:
		return 0
	case last == len(samples)-1:
		return -1
	}
	return samples[last+1].At - from
}

// backAt tells whether every instance of now that pre has is at or above
// its multipliers of pre, within recoveryTolerance.
func backAt(pre, now map[string]map[string]float64) bool {
	for id, tiers := range now {
		before, ok := pre[id]
		if !ok {
			continue
		}
		for tier, v := range tiers {
			if b, ok := before[tier]; ok && v < b-recoveryTolerance {
				return false
			}
		}
	}
	return true
}
