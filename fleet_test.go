package throttled

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/throttledhq/throttled/controller"
	"github.com/throttledhq/throttled/internal/fakeclock"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter/coord"
	"github.com/throttledhq/throttled/signals"
)

// The leader's in-process admitted rate is the fleet's: instance a (the
// leader, 30 free requests a second) and b (70 a second) publish to one
// tally; a's signals read 100 a second, not its own 30, and b's saturation
// (the largest). Before the fix it read 30, and the tier cap it set was
// cut by a's share.
func TestLeaderReadsTheFleetsAdmittedRate(t *testing.T) {
	r := testenv.StartRedis(t)
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	dec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: signals.DefaultAdmittedCounter}, []string{"tier", "rule", "decision"})
	reg.MustRegister(dec)
	ta, err := coord.NewTally(r.Client(), coord.TallySettings{ID: "a", Prefix: "fleet1:"})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := coord.NewTally(r.Client(), coord.TallySettings{ID: "b", Prefix: "fleet1:"})
	if err != nil {
		t.Fatal(err)
	}
	clock := fakeclock.New(time.Unix(1_700_000_000, 0))
	src, err := signals.NewInProcess(fleetGatherer{local: reg, tally: ta, timeout: time.Second},
		signals.InProcessSettings{Now: clock.Now, SaturationGauge: controller.SaturationMetric}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 { // t0, t1, t2: one second apart
		dec.WithLabelValues("free", "r", "allowed").Add(30)
		dec.WithLabelValues("free", "r", "over_quota").Add(5) // not admitted
		counts, err := localReadings(reg)
		if err != nil {
			t.Fatal(err)
		}
		if err := ta.Publish(ctx, counts); err != nil {
			t.Fatal(err)
		}
		if err := tb.Publish(ctx, map[string]float64{"admitted/free": float64(70 * (i + 1)), "saturation": 0.25}); err != nil {
			t.Fatal(err)
		}
		clock.Set(time.Unix(1_700_000_000+int64(i), 0))
		s, _ := src.Read(ctx)
		if i == 0 {
			continue // the baseline
		}
		if got := s.Admitted.ByTier["free"]; !s.Admitted.Valid || math.Abs(got-100) > 1e-9 {
			t.Fatalf("t%d: admitted free %v (valid %v, %v), want the fleet's 100/s", i, got, s.Admitted.Valid, s.Admitted.Reason)
		}
		if got := s.Saturation; !got.Valid || got.V != 0.25 {
			t.Fatalf("t%d: saturation %+v, want b's 0.25, the fleet's largest (a has none)", i, got)
		}
	}
}

// When the tally cannot be read, the admitted rate is a query error for
// that read, never the leader's own share.
func TestFleetGathererWithoutRedisIsAnError(t *testing.T) {
	r := testenv.StartRedis(t)
	reg := prometheus.NewRegistry()
	dec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: signals.DefaultAdmittedCounter}, []string{"tier", "rule", "decision"})
	reg.MustRegister(dec)
	dec.WithLabelValues("free", "r", "allowed").Add(30)
	ta, err := coord.NewTally(r.Client(), coord.TallySettings{ID: "a", Prefix: "fleet2:"})
	if err != nil {
		t.Fatal(err)
	}
	r.Stop()
	mfs, err := fleetGatherer{local: reg, tally: ta, timeout: time.Second}.Gather()
	if err == nil {
		t.Fatal("Gather with Redis down: no error")
	}
	for _, mf := range mfs {
		if mf.GetName() == signals.DefaultAdmittedCounter {
			t.Fatalf("Gather with Redis down kept the local admitted family %v", mf)
		}
	}
}
