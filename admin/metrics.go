package admin

import (
	"errors"
	"strconv"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
)

// Metric names: contracts with the dashboards.
const (
	// MetricRequests counts admin API requests by HTTP status code.
	MetricRequests = "throttled_admin_requests_total"
	// MetricWriteConflicts counts writes that lost a race with another
	// writer and were tried again.
	MetricWriteConflicts = "throttled_admin_write_conflicts_total"
)

type metrics struct {
	requests  *prometheus.CounterVec
	conflicts prometheus.Counter
}

// newMetrics registers the collectors with reg; a nil reg gives working
// but unregistered collectors.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricRequests, Help: "Admin API requests by HTTP status code.",
		}, []string{"code"}),
		conflicts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: MetricWriteConflicts, Help: "Admin API writes retried after losing a race with another writer.",
		}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.requests, m.conflicts} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				return nil, errors.New("admin: metrics already registered: give each Server its own Registerer")
			}
			return nil, err
		}
	}
	return m, nil
}

// middleware renders errors (so the final status is known) and counts the
// request by status.
func (m *metrics) middleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if err := next(c); err != nil {
			c.Error(err)
		}
		m.requests.WithLabelValues(strconv.Itoa(c.Response().Status)).Inc()
		return nil
	}
}
