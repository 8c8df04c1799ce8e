package overload

import "time"

// InstanceCounts is one enforcing instance's requests so far, from its
// throttled_requests_total: all it answered, those refused for quota
// (429), and those refused for load (shed by a multiplier, a tier cap or
// the inner loop's gate).
type InstanceCounts struct {
	Received, OverQuota, ForLoad float64
	Gated                        float64 // of ForLoad, refused by the inner loop's gate
	Premium                      float64 // received of the premium tier
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

// BeyondExcessPct is, of the requests sent in the intervals between
// samples within [from, to) (the overload), the percentage throttled
// refused for load beyond their backend's excess and excessSlack of its
// capacity, each interval and backend on its own (as ExcessRecovery judges
// them); -1 without such an interval. With per-instance backends it is
// what instances were shed beyond their own backend's need: for another's.
func BeyondExcessPct(samples []InstanceSample, from, to time.Duration, capacity map[string]float64) float64 {
	var beyond, sent float64
	n := 0
	for i := 1; i < len(samples); i++ {
		if samples[i-1].At < from || samples[i].At > to {
			continue
		}
		n++
		for _, t := range tallies(samples[i-1], samples[i], capacity) {
			serves := t.serves(capacity, samples[i].At-samples[i-1].At)
			beyond += max(0, t.refused-max(0, t.offered-serves)-excessSlack*serves)
			sent += t.sent
		}
	}
	if n == 0 || sent == 0 {
		return -1
	}
	return 100 * beyond / sent
}

// PremiumCeilingPct is the most of the premium tier's requests sent in
// the intervals within [from, to) that the backends could have served, in
// percent: each backend's premium up to its capacity in each interval,
// had it served premium alone; -1 without premium requests there. With
// per-instance backends a busy instance's premium can exceed its own
// backend, and premium_admitted_pct is bounded by this.
func PremiumCeilingPct(samples []InstanceSample, from, to time.Duration, capacity map[string]float64) float64 {
	var servable, premium float64
	for i := 1; i < len(samples); i++ {
		if samples[i-1].At < from || samples[i].At > to {
			continue
		}
		for _, t := range tallies(samples[i-1], samples[i], capacity) {
			servable += min(t.premium, t.serves(capacity, samples[i].At-samples[i-1].At))
			premium += t.premium
		}
	}
	if premium == 0 {
		return -1
	}
	return 100 * servable / premium
}

// withinExcess tells whether, between samples a and b, what was refused for
// load is within each backend's excess and slack.
func withinExcess(a, b InstanceSample, capacity map[string]float64) bool {
	for _, t := range tallies(a, b, capacity) {
		serves := t.serves(capacity, b.At-a.At)
		if t.refused > max(0, t.offered-serves)+excessSlack*serves {
			return false
		}
	}
	return true
}

// tally is one backend's requests between two samples: all its instances
// received, what they offered it (not refused for quota), what they
// refused for load, and the premium tier's they received.
type tally struct {
	backend                         string
	sent, offered, refused, premium float64
}

// serves is how many requests the tally's backend serves in dt.
func (t *tally) serves(capacity map[string]float64, dt time.Duration) float64 {
	return capacity[t.backend] * dt.Seconds()
}

// tallies are the backends' tallies between samples a and b, of the
// instances both have.
func tallies(a, b InstanceSample, capacity map[string]float64) map[string]*tally {
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
			t = &tally{backend: key}
			by[key] = t
		}
		t.sent += cb.Received - ca.Received
		t.premium += cb.Premium - ca.Premium
		t.offered += (cb.Received - cb.OverQuota) - (ca.Received - ca.OverQuota)
		t.refused += cb.ForLoad - ca.ForLoad
	}
	return by
}
