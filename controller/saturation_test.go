package controller

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// The saturation follows the refused fraction with a one-second time
// constant, decays when nobody asks, and starts at 0.
func TestSaturationSmoothsTheRefusedFraction(t *testing.T) {
	reg := prometheus.NewRegistry()
	s, err := newSaturation(reg, "upstream")
	if err != nil {
		t.Fatal(err)
	}
	w := 1 - math.Exp(-0.1) // weight of one 100 ms tick
	steps := []struct {
		asked, refused int64
		at             time.Duration
		want           float64
	}{
		{0, 0, 0, 0},                 // t0: the first update only takes the counts
		{100, 50, 100 * ms, 0.5 * w}, // half refused
		{200, 100, 200 * ms, 0.5*w + (0.5-0.5*w)*w},
		{200, 100, 1200 * ms, (0.5*w + (0.5-0.5*w)*w) * math.Exp(-1)},           // nobody asked for 1 s: decays
		{300, 100, 1300 * ms, (0.5*w + (0.5-0.5*w)*w) * math.Exp(-1) * (1 - w)}, // none refused
	}
	for i, st := range steps {
		s.update(st.asked, st.refused, t0.Add(st.at))
		got := testutil.ToFloat64(s.gauge)
		if math.Abs(got-st.want) > 1e-12 {
			t.Fatalf("t%d: saturation %v, want %v", i, got, st.want)
		}
	}
	if n := testutil.CollectAndCount(reg, SaturationMetric); n != 1 {
		t.Fatalf("%d series of %s, want 1", n, SaturationMetric)
	}
}
