package promreg_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/throttledhq/throttled/internal/promreg"
)

// TestSharedGivesTheFirstCollector: a second collector like the first
// gets the first, so both parts count on one series; a collector of the
// same name but other labels is refused.
func TestSharedGivesTheFirstCollector(t *testing.T) {
	reg := prometheus.NewRegistry()
	opts := prometheus.CounterOpts{Name: "things_total", Help: "Things."}
	a, err := promreg.Shared(reg, prometheus.NewCounterVec(opts, []string{"part"}))
	if err != nil {
		t.Fatal(err)
	}
	b, err := promreg.Shared(reg, prometheus.NewCounterVec(opts, []string{"part"}))
	if err != nil {
		t.Fatal(err)
	}
	a.WithLabelValues("x").Inc()
	b.WithLabelValues("x").Inc()
	if got := testutil.ToFloat64(a.WithLabelValues("x")); got != 2 {
		t.Errorf("things_total{part=x} %v, want 2: the second registration did not get the first collector", got)
	}
	if _, err := promreg.Shared(reg, prometheus.NewCounterVec(opts, []string{"other"})); err == nil {
		t.Error("a collector of the same name with other labels was accepted")
	}
}
