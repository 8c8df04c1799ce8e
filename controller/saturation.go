package controller

import (
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// RefusalCounter is optionally implemented by a [Gate]: how many calls
// asked for a permit since the gate was made and how many were refused.
// bulkhead.Gate implements it.
type RefusalCounter interface {
	Refusals() (asked, refused int64)
}

// SaturationMetric is the gauge of the inner loop's saturation: the
// fraction of calls its limit refused, smoothed over SaturationWindow. The
// outer loop reads it as its saturation signal, so that a cut the inner
// loop has to hold for long moves to the tiers' multipliers: refused at the
// edge, shared across instances, lowest priority first.
const SaturationMetric = "throttled_concurrency_saturation"

// SaturationWindow is the time constant of the saturation's smoothing.
const SaturationWindow = time.Second

// saturation smooths the refused fraction of each tick.
type saturation struct {
	asked, refused int64
	at             time.Time
	value          float64
	gauge          prometheus.Gauge
}

// update folds the counts since the previous update into the average.
func (s *saturation) update(asked, refused int64, now time.Time) {
	da, dr := asked-s.asked, refused-s.refused
	s.asked, s.refused = asked, refused
	dt := now.Sub(s.at)
	first := s.at.IsZero()
	s.at = now
	if first || da <= 0 || dt <= 0 {
		if !first && da <= 0 && dt > 0 { // nobody asked: nothing refused
			s.value *= math.Exp(-float64(dt) / float64(SaturationWindow))
		}
		s.gauge.Set(s.value)
		return
	}
	w := 1 - math.Exp(-float64(dt)/float64(SaturationWindow))
	s.value += (float64(dr)/float64(da) - s.value) * w
	s.gauge.Set(s.value)
}

// newSaturation registers the loop's saturation gauge with reg (nil: not
// registered).
func newSaturation(reg prometheus.Registerer, name string) (*saturation, error) {
	vec := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: SaturationMetric,
		Help: "Fraction of calls the inner loop's concurrency limit refused, smoothed over about a second.",
	}, []string{"name"})
	if reg != nil {
		var err error
		if vec, err = shared(reg, vec); err != nil {
			return nil, err
		}
	}
	return &saturation{gauge: vec.WithLabelValues(name)}, nil
}
