package limiter_test

import (
	"fmt"
	"time"

	"github.com/throttledhq/throttled/limiter"
)

// A quota of 2 per second, and a multiplier that halves the admission rate
// under load: the third request is over quota (429); under load the second
// is shed (503).
func ExampleMemory_DecideAt() {
	s := limiter.NewMemory()
	rule := limiter.Rule{Limit: 2, Period: time.Second, Burst: 2}
	t0 := time.Unix(1_700_000_000, 0)
	for i := 0; i < 3; i++ {
		d, _ := s.DecideAt(t0, limiter.Request{Key: "alice", Rule: rule})
		fmt.Println("alice", d.Reason, d.Remaining, d.RetryAfter)
	}
	for i := 0; i < 2; i++ {
		d, _ := s.DecideAt(t0, limiter.Request{Key: "bob", Rule: rule, Multiplier: 0.5})
		fmt.Println("bob", d.Reason, d.Remaining, d.RetryAfter)
	}
	// Output:
	// alice allowed 1 0s
	// alice allowed 0 0s
	// alice over_quota 0 500ms
	// bob allowed 0 0s
	// bob shed 0 1s
}

// A month quota aligned to the calendar: it resets at 00:00 UTC on the 1st,
// so on the leap day of 2024 it resets in 12 hours, and a day later the
// March window is whole again.
func ExampleAlign() {
	s := limiter.NewMemory()
	rule := limiter.Rule{Algorithm: limiter.FixedWindow, Limit: 2, Period: limiter.Month, Align: limiter.AlignCalendar}
	for _, at := range []time.Time{
		time.Date(2024, 2, 29, 12, 0, 0, 0, time.UTC),
		time.Date(2024, 2, 29, 18, 0, 0, 0, time.UTC),
		time.Date(2024, 2, 29, 23, 0, 0, 0, time.UTC),
		time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC),
	} {
		d, _ := s.DecideAt(at, limiter.Request{Key: "alice", Rule: rule})
		fmt.Println(at.Format("Jan 2 15:04"), d.Reason, d.Remaining, d.ResetAfter)
	}
	// Output:
	// Feb 29 12:00 allowed 1 12h0m0s
	// Feb 29 18:00 allowed 0 6h0m0s
	// Feb 29 23:00 over_quota 0 1h0m0s
	// Mar 1 00:00 allowed 1 744h0m0s
}
