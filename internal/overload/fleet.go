package overload

import (
	"math"
	"slices"
	"time"
)

// FleetInstances is the fleet scenario's number of enforcing instances
// unless the caller sets Scenario.Instances (and its Split, FleetSplit).
const FleetInstances = 10

// FleetSkew is how many times the median instance's share the busiest
// instance of a fleet gets from the uneven load balancer.
const FleetSkew = 5.0

// fleet is the surge through FleetInstances instances behind an uneven
// load balancer (FleetSplit). The stack makes the fleet's own events:
// instances joining and leaving and the leader killed (bench.Fleet).
func fleet(c float64) Scenario {
	s := base("fleet", c, atQuota(c*0.25, c*2.5, c*0.25))
	s.Instances, s.Split = FleetInstances, FleetSplit(FleetInstances)
	return s
}

// FleetSplit is the uneven load balancer's share of each of n instances:
// instance 0 gets FleetSkew times the median share; the others' shares
// fall geometrically from twice the median to half of it, so the median is
// the middle one's. The shares sum to 1; the same n gives the same shares.
// Two instances (whose median is their mean) split FleetSkew to 1.
func FleetSplit(n int) []float64 {
	switch {
	case n <= 1:
		return []float64{1}
	case n == 2:
		return []float64{FleetSkew / (FleetSkew + 1), 1 / (FleetSkew + 1)}
	}
	w := make([]float64, n)
	w[0] = math.Inf(1) // the largest: the median is the others'
	for i := 1; i < n; i++ {
		x := 0.0
		if n > 2 {
			x = float64(i-1)/float64(n-2)*2 - 1 // -1 … 1
		}
		w[i] = math.Pow(2, -x)
	}
	w[0] = FleetSkew * MedianShare(w)
	scale := 1 / sum(w)
	for i := range w {
		w[i] *= scale
	}
	return w
}

// MedianShare is the median of shares.
func MedianShare(shares []float64) float64 {
	s := slices.Sorted(slices.Values(shares))
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func sum(xs []float64) float64 {
	t := 0.0
	for _, x := range xs {
		t += x
	}
	return t
}

// Fleet is a Stack that balances the clients' requests itself, over
// instances that come and go while the run lasts, and may put a backend
// of its own behind each instance.
type Fleet interface {
	Stack
	// Begin is called once, as the clients start: start is the run's
	// second 0 and d its length.
	Begin(start time.Time, d time.Duration)
	// Pick is the base URL the next request goes to. Any goroutine may
	// call it.
	Pick() string
	// BackendCounts are the answers of the stack's own backends (zero
	// when it has none): Run reconciles the clients' counts with them and
	// the shared backend's together.
	BackendCounts() BackendCounts
	// FleetReport is the fleet's figures for the finished run's report.
	FleetReport(rep *Report) *FleetReport
}
