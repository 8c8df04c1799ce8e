package signals

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/throttledhq/throttled/internal/promreg"
)

// metrics counts reads by source, signal and result (a Reason).
type metrics struct {
	source string
	reads  *prometheus.CounterVec // nil: not exported
}

// newMetrics registers throttled_signals_reads_total on reg (nothing when
// reg is nil). A second source on the same registry shares the counter.
func newMetrics(reg prometheus.Registerer, source string) (*metrics, error) {
	m := &metrics{source: source}
	if reg == nil {
		return m, nil
	}
	cv := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "throttled_signals_reads_total",
		Help: "Signal reads by source, signal and result (ok or why the value is invalid).",
	}, []string{"source", "signal", "result"})
	cv, err := promreg.Shared(reg, cv)
	if err != nil {
		return nil, errors.Join(errors.New("signals: register metrics"), err)
	}
	m.reads = cv
	return m, nil
}

// observe counts one read of every configured signal; the admitted rates
// count as signal "admitted".
func (m *metrics) observe(s Signals) {
	if m.reads == nil {
		return
	}
	for _, k := range Kinds() {
		v := s.Get(k)
		if v.Reason == Disabled {
			continue
		}
		m.reads.WithLabelValues(m.source, k.String(), v.Reason.String()).Inc()
	}
	m.reads.WithLabelValues(m.source, "admitted", s.Admitted.Reason.String()).Inc()
}
