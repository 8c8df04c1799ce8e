// Package promreg registers Prometheus collectors that several parts of
// one process share on one registry: two gates, two loops or two signal
// sources each make the same collector, and the second registration gets
// the first's.
package promreg

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Shared registers c with reg, or returns the collector of the same type
// already registered in its place. Any other refusal (another collector
// of that name with other labels or of another type) is returned as it
// is, for the caller to prefix with its package.
func Shared[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if prev, ok := are.ExistingCollector.(C); ok {
			return prev, nil
		}
	}
	return c, err
}
