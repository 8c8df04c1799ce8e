package bench

import (
	"context"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/overload"
)

// TestPrometheusPathRecovers is the short run of the controller on its
// Prometheus signal path: the bench's own prometheus (Parts.Prometheus)
// scrapes the instance each second and the outer loop reads latency,
// errors and saturation through PromQL windows. In the slowdown the
// backend's service time doubles for the middle third; once it is back to
// full speed the multipliers must be back at 1 within 8 s, and from 5 s
// after the overload no request may be refused by a tier's multiplier or
// its cap: the backend is within its target. (The windows kept reporting
// the slowdown for their length, about 10 s, and held free at its floor
// all that time.) The inner loop's gate is not this path's: on a host
// loaded by the rest of the suite it refuses a few requests now and then,
// reading the host's slowness, whatever the signals.
func TestPrometheusPathRecovers(t *testing.T) {
	sc, err := overload.Lookup("slowdown", smallBackend.Capacity())
	if err != nil {
		t.Fatal(err)
	}
	rep, err := overload.Run(context.Background(), sc, overload.RunSettings{Duration: 30 * time.Second,
		Target: looseTarget, Mode: overload.Controller, Backend: smallBackend, Timeout: 30 * time.Second,
		Stack: Parts{Prometheus: true}.Start})
	if err != nil {
		t.Fatal(err)
	}
	if o := rep.Phases.During; o.Status.Shed == 0 {
		t.Fatalf("nothing was shed in the slowdown: the test did not overload the backend: %s", rep.Headline())
	}
	if rep.RecoveryS < 0 || rep.RecoveryS > 8 {
		t.Errorf("recovery %.1f s after the slowdown, want within 8 s: %s", rep.RecoveryS, rep.Headline())
	}
	end := 2 * (len(rep.Rows) / 3) // the after phase's first second
	for _, r := range rep.Rows[end+5:] {
		for _, load := range []string{"premium", "free"} {
			c := r.Loads[load]
			if n := c.Class[overload.Shed] + c.Class[overload.Capped]; n > 0 {
				t.Errorf("second %d (%d s after the slowdown): %d %s requests refused by the tiers' multipliers (%d shed, %d capped), want none",
					r.Second, r.Second-end, n, load, c.Class[overload.Shed], c.Class[overload.Capped])
			}
		}
	}
}
