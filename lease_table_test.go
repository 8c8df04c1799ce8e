package throttled

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/throttledhq/throttled/config"
	"github.com/throttledhq/throttled/internal/testenv"
)

// leaseInstance is an Instance on a Redis of its own with leaseConfig's
// rule in lease mode as lease says, and the registry of its metrics.
func leaseInstance(t *testing.T, lease string) (*Instance, *prometheus.Registry) {
	t.Helper()
	r := testenv.StartRedis(t)
	cfg, err := config.Parse([]byte(leaseConfig(1000, 1000, lease)), []string{"THROTTLED_REDIS_URL=" + r.URL()})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	s, err := New(context.Background(), cfg, Options{Registerer: reg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, reg
}

// TestLeaseTableMetrics: an instance with a lease rule reports the keys
// its lease table keeps (throttled_lease_keys: 3 after three keys) and
// the evictions at its bound (throttled_lease_evictions_total: none).
func TestLeaseTableMetrics(t *testing.T) {
	s, reg := leaseInstance(t, "    lease: { size: 20 }\n")
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

// TestLeaseMaxKeysConfigured: a rule's lease.max_keys bounds its lease
// table: 200 one-off keys on a table of 64 keep 64 and evict the rest,
// the idle longest first.
func TestLeaseMaxKeysConfigured(t *testing.T) {
	s, reg := leaseInstance(t, "    lease: { size: 20, max_keys: 64 }\n")
	for i := range 200 {
		if k := fmt.Sprint("one-off-", i); !admit(t, s, k) {
			t.Fatalf("key %s refused", k)
		}
	}
	keys, evicted := sumOf(t, reg, "throttled_lease_keys"), sumOf(t, reg, "throttled_lease_evictions_total")
	if keys > 64 || evicted < 200-64 {
		t.Errorf("lease table: %v keys kept, %v evicted; want at most 64 kept, at least 136 evicted", keys, evicted)
	}
}

// TestLeaseMaxKeysBounded: lease.max_keys beyond its bound is refused,
// naming the field.
func TestLeaseMaxKeysBounded(t *testing.T) {
	_, err := config.Parse([]byte(leaseConfig(1000, 1000, "    lease: { size: 20, max_keys: 20000000 }\n")), nil)
	if err == nil || !strings.Contains(err.Error(), "rules[0].lease.max_keys: 20000000: want 0..10000000") {
		t.Fatalf("err %v, want one naming rules[0].lease.max_keys", err)
	}
}

// sumOf sums the values of the gauges or counters named name in reg.
func sumOf(t *testing.T, reg prometheus.Gatherer, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var v float64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				v += m.GetGauge().GetValue() + m.GetCounter().GetValue()
			}
			return v
		}
	}
	t.Fatalf("no %s", name)
	return 0
}
