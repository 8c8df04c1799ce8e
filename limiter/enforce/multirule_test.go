package enforce_test

import (
	"testing"
	"time"

	"github.com/throttledhq/throttled/limiter"
)

// The bounds of spend-then-refund across a request's rules, as the package
// doc states them, pinned at fixed instants on the memory store (the Redis
// scripts mirror it; the conformance suite holds them to the same answers).

type refundStep struct {
	name   string
	at     time.Duration
	refund bool
	allow  bool // for a take
}

func runRefundSteps(t *testing.T, rule limiter.Rule, steps []refundStep) {
	t.Helper()
	s := limiter.NewMemory()
	for _, st := range steps {
		d, err := s.DecideAt(t0.Add(st.at), limiter.Request{Key: "k", Rule: rule, Refund: st.refund})
		if err != nil {
			t.Fatal(err)
		}
		if !st.refund && d.Allowed != st.allow {
			t.Fatalf("%s: allowed %v, want %v", st.name, d.Allowed, st.allow)
		}
	}
}

// TestRefundAcrossWindowBoundary: a fixed-window refund that lands in the
// next window gives back a unit of that window: at most one extra
// admission per request refused across the boundary.
func TestRefundAcrossWindowBoundary(t *testing.T) {
	rule := limiter.Rule{Name: "w", Algorithm: limiter.FixedWindow, Limit: 2, Period: time.Second}
	ms := time.Millisecond
	runRefundSteps(t, rule, []refundStep{
		{"t0: A takes in window 0 (a later rule will refuse it)", 999 * ms, false, true},
		{"t1: B takes in window 1", 1000 * ms, false, true},
		{"t2: A's refund lands in window 1", 1001 * ms, true, false},
		{"t3: C", 1002 * ms, false, true},
		{"t4: D: the extra unit (limit + 1 refund across the boundary)", 1003 * ms, false, true},
		{"t5: E: no more", 1004 * ms, false, false},
	})
}

// TestSlidingLogRefundPopsNewest: a sliding-log refund removes the newest
// entry, maybe another request's: the count is right, and the freed unit
// comes back at most the refunded check's duration (take to refund) early.
func TestSlidingLogRefundPopsNewest(t *testing.T) {
	rule := limiter.Rule{Name: "l", Algorithm: limiter.SlidingWindowLog, Limit: 2, Period: time.Second}
	ms := time.Millisecond
	runRefundSteps(t, rule, []refundStep{
		{"t0: A takes (a later rule will refuse it)", 0, false, true},
		{"t1: B takes", 10 * ms, false, true},
		{"t2: A's refund, 20 ms after its take, pops B's entry", 20 * ms, true, false},
		{"t3: C takes the unit given back", 20 * ms, false, true},
		{"t4: full", 30 * ms, false, false},
		{"t5: A's entry expires: a unit, 10 ms before B's would have (≤ 20 ms early)", 1000*ms + time.Microsecond, false, true},
		{"t6: full until C's entry expires", 1019 * ms, false, false},
	})
}

// TestHeldUnitRefusesOthers: while a request holds a unit it will give
// back (between its take and its refund), another request can be refused
// for it: at most one unit per refused request in flight.
func TestHeldUnitRefusesOthers(t *testing.T) {
	rule := limiter.Rule{Name: "b", Limit: 1, Period: time.Second, Burst: 1}
	runRefundSteps(t, rule, []refundStep{
		{"t0: A takes the only token (a later rule will refuse it)", 0, false, true},
		{"t1: B is refused meanwhile", 0, false, false},
		{"t2: A's refund", 0, true, false},
		{"t3: C gets the token back", 0, false, true},
	})
}
