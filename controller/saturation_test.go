package controller

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// The saturation is the refused fraction of the calls asked over the last
// second (SaturationWindow): it starts at 0, follows the refusals, and is 0
// again a window after they stop, however high it was.
func TestSaturationIsTheRefusedFractionOverTheWindow(t *testing.T) {
	reg := prometheus.NewRegistry()
	s, err := newSaturation(reg, "upstream")
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		asked, refused int64
		at             time.Duration
		want           float64
	}{
		{0, 0, 0, 0},                       // t0: the first update only takes the counts
		{100, 50, 100 * ms, 0.5},           // t1: half refused
		{200, 150, 200 * ms, 0.75},         // t2: all of the next 100 refused
		{300, 150, 1000 * ms, 0.5},         // t3: base t0 still in the window (exactly 1 s old)
		{400, 150, 1100 * ms, 100.0 / 300}, // t4: base t1: 300 asked, 100 refused since
		{500, 150, 1200 * ms, 0},           // t5: base t2: nothing refused in the last second
		{500, 150, 3000 * ms, 0},           // t6: nobody asked
		{600, 210, 3100 * ms, 0.6},         // t7: base t6
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
