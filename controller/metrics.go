package controller

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the loop's Prometheus series; see the package doc for what
// each one means.
type metrics struct {
	multiplier *prometheus.GaugeVec
	signal     *prometheus.GaugeVec
	steps      *prometheus.CounterVec
	leader     prometheus.Gauge
	shown      map[string]bool // signals with a series; touched only by Run
}

func newMetrics(reg prometheus.Registerer, law *Law) (*metrics, error) {
	m := &metrics{
		multiplier: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "throttled_tier_multiplier",
			Help: "Rate multiplier the controller publishes for each tier (exported by the leader only).",
		}, []string{"tier"}),
		signal: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "throttled_controller_signal",
			Help: "Last usable value of each health signal; absent while the signal is unusable.",
		}, []string{"signal"}),
		steps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "throttled_controller_steps_total",
			Help: "Published control steps, by tier and the action taken on it.",
		}, []string{"tier", "action"}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "throttled_controller_leader",
			Help: "1 while this controller replica holds the leader lease, else 0.",
		}),
		shown: map[string]bool{},
	}
	for _, t := range law.tiers {
		for _, a := range allActions {
			m.steps.WithLabelValues(t.Name, a.String())
		}
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.multiplier, m.signal, m.steps, m.leader} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("controller: registering metrics: %w", err)
		}
	}
	return m, nil
}

// observe shows the usable signals of in and removes the series of the
// others (unusable, or missing from in).
func (m *metrics) observe(law *Law, in Input, now time.Time) {
	seen := make(map[string]bool, len(in.Signals))
	for _, s := range in.Signals {
		if law.Usable(s, now) {
			m.signal.WithLabelValues(s.Name).Set(s.Value)
			seen[s.Name] = true
		}
	}
	for name := range m.shown {
		if !seen[name] {
			m.signal.DeleteLabelValues(name)
		}
	}
	m.shown = seen
}

// stepped records a published step.
func (m *metrics) stepped(st State) {
	for _, t := range st.Tiers {
		m.multiplier.WithLabelValues(t.Name).Set(t.Multiplier)
		m.steps.WithLabelValues(t.Name, t.LastAction.String()).Inc()
	}
}

// leading records a change of leadership; a follower exports no
// multipliers.
func (m *metrics) leading(on bool) {
	if on {
		m.leader.Set(1)
		return
	}
	m.leader.Set(0)
	m.multiplier.Reset()
}
