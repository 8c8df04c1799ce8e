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

// TopCounter is optionally implemented by a [Gate]: how many calls of
// priority 0 asked for a permit since it was made (Window.TopAsked is the
// difference over a window). bulkhead.Gate implements it.
type TopCounter interface {
	TopAsked() int64
}

// SaturationMetric is the gauge of the inner loop's saturation: the
// fraction of calls its limit refused over the last SaturationWindow. The
// outer loop reads it as its saturation signal, so that a cut the inner
// loop has to hold for long moves to the tiers' multipliers: refused at the
// edge, shared across instances, lowest priority first.
const SaturationMetric = "throttled_concurrency_saturation"

// SaturationWindow is the span of the saturation's sliding window. A
// window, not an exponential average: once the refusals stop, the reading
// is 0 a window later (an average with this time constant took about 3 s to
// fall from 0.3 below the 0.014 that reads as deep headroom, and held the
// outer loop's recovery that long).
const SaturationWindow = time.Second

// saturationSamples bounds the window's samples: updates closer together
// than SaturationWindow / saturationSamples shorten the window.
const saturationSamples = 64

// satSample is the gate's counters at one update.
type satSample struct {
	at             time.Time
	asked, refused int64
}

// saturation is the refused fraction over a sliding window of updates:
// ring holds the samples of the last window, oldest first, starting with
// the newest one at least SaturationWindow old (the window's base).
type saturation struct {
	ring  [saturationSamples]satSample
	head  int // index of the oldest sample
	n     int // samples held
	value float64
	gauge prometheus.Gauge
}

// update adds the counters at now and sets the refused fraction of the
// calls asked since the window's base (0 when none were asked).
func (s *saturation) update(asked, refused int64, now time.Time) {
	if s.n == saturationSamples {
		s.head, s.n = (s.head+1)%saturationSamples, s.n-1
	}
	s.ring[(s.head+s.n)%saturationSamples] = satSample{at: now, asked: asked, refused: refused}
	s.n++
	for s.n > 1 && !s.ring[(s.head+1)%saturationSamples].at.After(now.Add(-SaturationWindow)) {
		s.head, s.n = (s.head+1)%saturationSamples, s.n-1
	}
	base := s.ring[s.head]
	s.value = 0
	if da := asked - base.asked; da > 0 {
		s.value = math.Min(1, math.Max(0, float64(refused-base.refused)/float64(da)))
	}
	s.gauge.Set(s.value)
}

// newSaturation registers the loop's saturation gauge with reg (nil: not
// registered).
func newSaturation(reg prometheus.Registerer, name string) (*saturation, error) {
	vec := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: SaturationMetric,
		Help: "Fraction of calls the inner loop's concurrency limit refused over the last second.",
	}, []string{"name"})
	if reg != nil {
		var err error
		if vec, err = shared(reg, vec); err != nil {
			return nil, err
		}
	}
	return &saturation{gauge: vec.WithLabelValues(name)}, nil
}
