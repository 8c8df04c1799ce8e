package overload

import "time"

// InstanceCounts is one enforcing instance's requests so far, from its
// throttled_requests_total: all it answered, those refused for quota
// (429), and those refused for load (shed by a multiplier, a tier cap or
// the inner loop's gate).
type InstanceCounts struct {
	Received, OverQuota, ForLoad float64
}

// InstanceSample is every live instance's counts at At (since the run's
// start), by instance id.
type InstanceSample struct {
	At     time.Duration
	Counts map[string]InstanceCounts
}

// excessSlack is what throttled may refuse for load beyond a backend's
// excess and still count as recovered, as a share of the backend's
// capacity: the control keeps its backend a little below capacity to keep
// latency within the target.
const excessSlack = 0.1

// ExcessRecovery is the time from `from` (the overload's end) until, in
// every later interval between two samples, throttled refused for load no
// more than the backends' excess, plus excessSlack of their capacity: 0 if
// every interval from `from` on is within, -1 if the last one is not or
// none starts at or after from. A backend's excess in an interval is what
// its instances received and did not refuse for quota, over what the
// backend serves in that time. With capacity by instance (each its own
// backend) each instance is judged on its own; with capacity[""] alone
// (one shared backend) the fleet is judged as one. An instance counts in
// an interval when both its samples have it (not while joining or
// leaving).
//
// This is recovery where some instances' base load exceeds their own
// backend: an instance then refuses its excess before the overload and
// after it, which Report.RecoveryS (every multiplier back at 1) counts as
// never recovering.
func ExcessRecovery(samples []InstanceSample, from time.Duration, capacity map[string]float64) time.Duration {
	first, last := -1, -1
	for i := 1; i < len(samples); i++ {
		if samples[i-1].At < from {
			continue
		}
		if first < 0 {
			first = i
		}
		if !withinExcess(samples[i-1], samples[i], capacity) {
			last = i
		}
	}
	switch {
	case first < 0 || last == len(samples)-1:
		return -1
	case last < 0:
		return 0
	}
	return samples[last].At - from
}

// withinExcess tells whether, between samples a and b, what was refused for
// load is within each backend's excess and slack.
func withinExcess(a, b InstanceSample, capacity map[string]float64) bool {
	dt := (b.At - a.At).Seconds()
	type tally struct{ offered, refused float64 }
	by := map[string]*tally{}
	for id, cb := range b.Counts {
		ca, ok := a.Counts[id]
		if !ok {
			continue
		}
		key := id
		if _, own := capacity[id]; !own {
			key = "" // the shared backend
		}
		t := by[key]
		if t == nil {
			t = &tally{}
			by[key] = t
		}
		t.offered += (cb.Received - cb.OverQuota) - (ca.Received - ca.OverQuota)
		t.refused += cb.ForLoad - ca.ForLoad
	}
	for key, t := range by {
		serves := capacity[key] * dt
		if t.refused > max(0, t.offered-serves)+excessSlack*serves {
			return false
		}
	}
	return true
}
