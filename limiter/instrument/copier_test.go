package instrument_test

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/instrument"
)

// keeper is a store that keeps keys as given: it says nothing of copying.
type keeper struct{}

func (keeper) Decide(context.Context, limiter.Request) (limiter.Decision, error) {
	return limiter.Decision{Allowed: true}, nil
}

// TestWrappersKeepCopiesKeys: the timing and near-limit wrappers keep no key,
// so a store wrapped in them copies keys exactly when the store inside does
// (the server wraps its memory store in both, and limiter/enforce makes keys
// in pooled memory only for a limiter.KeyCopier).
func TestWrappersKeepCopiesKeys(t *testing.T) {
	m, err := instrument.NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	n, err := instrument.NewNearLimit(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	wrap := func(s limiter.Store) limiter.Store { return n.Store(instrument.Store(s, m, "memory")) }
	for _, tc := range []struct {
		name string
		s    limiter.Store
		want bool
	}{{"memory", limiter.NewMemory(), true}, {"a store that keeps keys", keeper{}, false}} {
		c, ok := wrap(tc.s).(limiter.KeyCopier)
		if got := ok && c.CopiesKeys(); got != tc.want {
			t.Errorf("%s wrapped: copies keys %v, want %v", tc.name, got, tc.want)
		}
	}
}
