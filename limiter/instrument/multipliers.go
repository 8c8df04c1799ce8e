package instrument

import "github.com/prometheus/client_golang/prometheus"

// Sources of an effective multiplier (the source label).
const (
	SourceController = "controller" // published by the controller, fresh
	SourcePin        = "pin"        // pinned through the admin API
	SourceStale      = "stale"      // the controller's are older than stale_after: 1 applies
	SourceNone       = "none"       // nothing received from a controller yet: 1 applies
)

// Effective is the multiplier an instance enforces on a tier now and
// where it comes from (one of the Source values).
type Effective struct {
	Tier       string
	Multiplier float64
	Source     string
}

// EffectiveMultipliers is a prometheus.Collector of the gauge
// throttled_effective_multiplier{tier,source}: the multiplier this
// instance enforces on each tier, read at every scrape. Every enforcing
// instance exports it, leader or not, pinned or not; the controller's
// throttled_tier_multiplier is only what the leader publishes.
type EffectiveMultipliers struct {
	desc *prometheus.Desc
	read func() []Effective
}

// NewEffectiveMultipliers returns the collector reading from read; register
// it on a prometheus.Registerer.
func NewEffectiveMultipliers(read func() []Effective) *EffectiveMultipliers {
	return &EffectiveMultipliers{read: read, desc: prometheus.NewDesc("throttled_effective_multiplier",
		"Multiplier this instance enforces on each tier, by source: controller, pin (admin API), "+
			"stale (the controller's are too old: 1) or none (none received yet: 1).",
		[]string{"tier", "source"}, nil)}
}

// Describe implements prometheus.Collector.
func (e *EffectiveMultipliers) Describe(ch chan<- *prometheus.Desc) { ch <- e.desc }

// Collect implements prometheus.Collector.
func (e *EffectiveMultipliers) Collect(ch chan<- prometheus.Metric) {
	for _, m := range e.read() {
		c, err := prometheus.NewConstMetric(e.desc, prometheus.GaugeValue, m.Multiplier, m.Tier, m.Source)
		if err != nil {
			c = prometheus.NewInvalidMetric(e.desc, err)
		}
		ch <- c
	}
}
