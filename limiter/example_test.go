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
