package instrument

import "github.com/prometheus/client_golang/prometheus"

// LimitMetric is the name of the gauge of the limits in force.
const LimitMetric = "throttled_limit"

// Limit is a limit in force on this instance: what rule Rule admits of
// one client of tier Tier, in requests per second, now (the rule's base
// limit times the tier's multiplier; for the rule tier_admission, the
// tier-wide cap).
type Limit struct {
	Tier, Rule string
	PerSecond  float64
}

// Limits is a prometheus.Collector of the gauge throttled_limit{tier,rule}:
// the limits in force, read at every scrape, so that it follows every
// policy change and every move of a multiplier.
type Limits struct {
	desc *prometheus.Desc
	read func() []Limit
}

// NewLimits returns the collector reading from read; register it on a
// prometheus.Registerer.
func NewLimits(read func() []Limit) *Limits {
	return &Limits{read: read, desc: prometheus.NewDesc(LimitMetric,
		"Limit in force per tier and rule, in requests per second: the rule's limit for one client of the tier "+
			"(its own or the tier's quota; the tightest of several) times the tier's multiplier; "+
			"rule tier_admission is the tier-wide admission cap. Shadow rules are not in force.",
		[]string{"tier", "rule"}, nil)}
}

// Describe implements prometheus.Collector.
func (l *Limits) Describe(ch chan<- *prometheus.Desc) { ch <- l.desc }

// Collect implements prometheus.Collector.
func (l *Limits) Collect(ch chan<- prometheus.Metric) {
	for _, m := range l.read() {
		c, err := prometheus.NewConstMetric(l.desc, prometheus.GaugeValue, m.PerSecond, m.Tier, m.Rule)
		if err != nil {
			c = prometheus.NewInvalidMetric(l.desc, err)
		}
		ch <- c
	}
}
