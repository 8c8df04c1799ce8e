package controller

import (
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the loop's Prometheus series; see the package doc for what
// each one means.
type metrics struct {
	multiplier *prometheus.GaugeVec
	signal     [numUnits]*prometheus.GaugeVec // by unit: the value
	target     [numUnits]*prometheus.GaugeVec // by unit: the target
	steps      *prometheus.CounterVec
	leader     prometheus.Gauge
	cpuWait    prometheus.Gauge
	instCount  prometheus.Gauge // throttled_controller_instances
	instOwn    prometheus.Gauge // throttled_controller_instance_factors
	shown      map[string]bool  // signals with a value series; touched only by Run
	targeted   map[string]bool  // signals with a target series; touched only by Run
}

// A signal's unit: its metrics carry it in their names, as Prometheus
// names carry base units.
const (
	unitSeconds = iota // latency signals
	unitRatio          // every other signal: error_ratio, saturation
	numUnits
)

var unitNames = [numUnits]string{"seconds", "ratio"}

// unitOf is the unit of the signal named name: seconds for a latency
// ("latency", "latency_p99"), else a ratio.
func unitOf(name string) int {
	if strings.HasPrefix(name, "latency") {
		return unitSeconds
	}
	return unitRatio
}

func signalGauges(what, help string) (out [numUnits]*prometheus.GaugeVec) {
	for u, unit := range unitNames {
		out[u] = prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "throttled_controller_" + what + "_" + unit,
			Help: help + " (" + unit + ").",
		}, []string{"signal"})
	}
	return out
}

func newMetrics(reg prometheus.Registerer, law *Law) (*metrics, error) {
	m := &metrics{
		multiplier: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "throttled_tier_multiplier",
			Help: "Rate multiplier the controller publishes for each tier (exported by the leader only).",
		}, []string{"tier"}),
		signal: signalGauges("signal", "Last usable value of each health signal; absent while the signal is unusable"),
		target: signalGauges("signal_target", "Target of each health signal read: overloaded above it"),
		steps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "throttled_controller_steps_total",
			Help: "Published control steps, by tier and the action taken on it.",
		}, []string{"tier", "action"}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "throttled_controller_leader",
			Help: "1 while this controller replica holds the leader lease, else 0.",
		}),
		cpuWait: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "throttled_controller_cpu_wait_ratio",
			Help: "How much more of its runnable time this process waited for a CPU over the last period than it usually does; at 0.25 or above (the law's StarvedAt) an overload holds instead of cutting.",
		}),
		instCount: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "throttled_controller_instances",
			Help: "Enforcing instances the leader steps on their own signals (controller.scope: instance); 0 on a follower and in the fleet scope.",
		}),
		instOwn: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "throttled_controller_instance_factors",
			Help: "Own factors the leader published last (controller.scope: instance): pairs of an instance and a tier whose multiplier differs from the fleet's.",
		}),
		shown:    map[string]bool{},
		targeted: map[string]bool{},
	}
	for _, t := range law.tiers {
		for _, a := range allActions {
			m.steps.WithLabelValues(t.Name, a.String())
		}
	}
	if reg == nil {
		return m, nil
	}
	cs := []prometheus.Collector{m.multiplier, m.steps, m.leader, m.cpuWait, m.instCount, m.instOwn}
	for u := range numUnits {
		cs = append(cs, m.signal[u], m.target[u])
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("controller: registering metrics: %w", err)
		}
	}
	return m, nil
}

// observe shows the usable signals of in and removes the series of the
// others (unusable, or missing from in); the targets of the signals in in;
// and in's CPU wait.
func (m *metrics) observe(law *Law, in Input, now time.Time) {
	m.cpuWait.Set(in.CPUWait)
	seen := make(map[string]bool, len(in.Signals))
	read := make(map[string]bool, len(in.Signals))
	for _, s := range in.Signals {
		u := unitOf(s.Name)
		m.target[u].WithLabelValues(s.Name).Set(s.Target)
		read[s.Name] = true
		if law.Usable(s, now) {
			m.signal[u].WithLabelValues(s.Name).Set(s.Value)
			seen[s.Name] = true
		}
	}
	forget(m.signal, m.shown, seen)
	forget(m.target, m.targeted, read)
	m.shown, m.targeted = seen, read
}

// forget deletes the series of the names in was but not in now.
func forget(g [numUnits]*prometheus.GaugeVec, was, now map[string]bool) {
	for name := range was {
		if !now[name] {
			g[unitOf(name)].DeleteLabelValues(name)
		}
	}
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
	m.instances(0, nil)
}

// instances records the instances stepped on their own signals and their
// published factors.
func (m *metrics) instances(n int, own map[string]map[string]float64) {
	f := 0
	for _, t := range own {
		f += len(t)
	}
	m.instCount.Set(float64(n))
	m.instOwn.Set(float64(f))
}
