package limiter

import (
	"context"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/fakeclock"
)

// TestMemoryOwnClockStepsBack: when the store's own clock steps back (an
// NTP correction of a wall clock), refills go on from where they were
// instead of freezing until the clock catches up.
func TestMemoryOwnClockStepsBack(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	clock := fakeclock.New(t0)
	m := NewMemory(WithShards(1))
	m.startUs, m.elapsed = float64(t0.UnixMicro()), func() time.Duration { return clock.Now().Sub(t0) } // its own clock, stepping
	rule := Rule{Limit: 10, Period: time.Second, Burst: 1}
	steps := []struct {
		name  string
		at    time.Duration
		allow bool
	}{
		{"t0: the burst", 0, true},
		{"t1: empty", 0, false},
		{"t2: the clock steps back an hour: still empty", -time.Hour, false},
		{"t3: 100 ms later by the stepped clock: refilled", -time.Hour + 100*time.Millisecond, true},
		{"t4: empty again", -time.Hour + 100*time.Millisecond, false},
		{"t5: 100 ms later: refilled", -time.Hour + 200*time.Millisecond, true},
	}
	for _, st := range steps {
		clock.Set(t0.Add(st.at))
		d, err := m.Decide(context.Background(), Request{Key: "k", Rule: rule})
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed != st.allow {
			t.Fatalf("%s: allowed %v (retry after %v), want %v", st.name, d.Allowed, d.RetryAfter, st.allow)
		}
	}
}
