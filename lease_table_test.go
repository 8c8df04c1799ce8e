package throttled

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/throttledhq/throttled/config"
	"github.com/throttledhq/throttled/internal/testenv"
)

// TestLeaseTableMetrics: an instance with a lease rule reports the keys
// its lease table keeps (throttled_lease_keys: 3 after three keys) and
// the evictions at its bound (throttled_lease_evictions_total: none).
func TestLeaseTableMetrics(t *testing.T) {
	r := testenv.StartRedis(t)
	cfg, err := config.Parse([]byte(leaseConfig(1000, 1000, "    lease: { size: 20 }\n")),
		[]string{"THROTTLED_REDIS_URL=" + r.URL()})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	s, err := New(context.Background(), cfg, Options{Registerer: reg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	for _, k := range []string{"a", "b", "c"} {
		if !admit(t, s, k) {
			t.Fatalf("key %s refused", k)
		}
	}
	want := `
# HELP throttled_lease_evictions_total Leases evicted, the key idle longest first, because the lease table held its most keys (Settings.MaxKeys).
# TYPE throttled_lease_evictions_total counter
throttled_lease_evictions_total 0
# HELP throttled_lease_keys Keys the lease table keeps leases for: those seen within the lease ttl, at most Settings.MaxKeys per lease setting.
# TYPE throttled_lease_keys gauge
throttled_lease_keys 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "throttled_lease_keys", "throttled_lease_evictions_total"); err != nil {
		t.Error(err)
	}
}
