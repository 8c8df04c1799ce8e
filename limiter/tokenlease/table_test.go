package tokenlease_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/throttledhq/throttled/internal/fakeclock"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/tokenlease"
)

// oneOff decides n keys once each (prefix + i) at one instant.
func oneOff(t *testing.T, s *tokenlease.Store, prefix string, n int) {
	t.Helper()
	for i := range n {
		if _, err := s.Decide(context.Background(), limiter.Request{Key: prefix + strconv.Itoa(i), Rule: rule}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLeaseTableBounded: 300,000 one-off keys within one TTL, MaxKeys
// 10,000: the table keeps at most 10,000 (throttled_lease_keys), the rest
// evicted (throttled_lease_evictions_total).
func TestLeaseTableBounded(t *testing.T) {
	clock := fakeclock.New(t0)
	reg := prometheus.NewPedanticRegistry()
	m, err := tokenlease.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	shared := limiter.NewMemory(limiter.WithClock(clock.Now), limiter.WithMaxKeys(1))
	s, err := tokenlease.New(shared, tokenlease.Settings{MaxKeys: 10_000, Metrics: m, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	const keys = 300_000
	oneOff(t, s, "k", keys)
	n, err := testutil.GatherAndCount(reg)
	if err != nil || n != 2 {
		t.Fatalf("%d series (%v), want 2", n, err)
	}
	kept := s.Len()
	if kept > 10_000 || kept < 9_000 {
		t.Errorf("%d keys kept after %d one-off keys, want at most MaxKeys 10,000 (and the most recent ones, over 9,000)", kept, keys)
	}
	metrics := []struct {
		name string
		want int
	}{{"throttled_lease_keys", kept}, {"throttled_lease_evictions_total", keys - kept}}
	for _, mt := range metrics {
		if got := gathered(t, reg, mt.name); got != float64(mt.want) {
			t.Errorf("%s = %v, want %d", mt.name, got, mt.want)
		}
	}
}

// gathered is the value of the one series named name in reg.
func gathered(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			m := mf.GetMetric()[0]
			if m.GetGauge() != nil {
				return m.GetGauge().GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	t.Fatalf("no series %s", name)
	return 0
}

// TestLeaseTableKeepsBusyKey: a key in use keeps its lease while a flood
// of one-off keys fills the table (MaxKeys 640: 10 per shard): the keys
// idle longest are evicted first, so its decisions stay local.
func TestLeaseTableKeepsBusyKey(t *testing.T) {
	clock := fakeclock.New(t0)
	shared := &counting{Store: limiter.NewMemory(limiter.WithClock(clock.Now))}
	r := limiter.Rule{Name: "r", Limit: 1_000_000, Period: time.Second}
	s, err := tokenlease.New(shared, tokenlease.Settings{Size: 1000, MaxKeys: 640, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	busy := func() {
		t.Helper()
		if d, err := s.Decide(context.Background(), limiter.Request{Key: "busy", Rule: r}); err != nil || !d.Allowed {
			t.Fatalf("busy key: %+v, %v", d, err)
		}
	}
	busy() // exact
	busy() // leases 1000
	for i := range 500 {
		before := shared.n.Load()
		busy()
		if n := shared.n.Load() - before; n != 0 {
			t.Fatalf("round %d: the busy key's decision made %d shared calls, want 0: its lease was evicted", i, n)
		}
		oneOff(t, s, "r"+strconv.Itoa(i)+"-", 20)
	}
	if n := s.Len(); n > 640 {
		t.Errorf("%d keys kept, want at most 640", n)
	}
}

// TestLeaseTableSweepsCold: leases of keys quiet for TTL are dropped as
// new keys come (a few per new key, never the whole shard at once), so a
// table of 1,000 cold keys and 5,000 new ones keeps the new ones alone.
func TestLeaseTableSweepsCold(t *testing.T) {
	clock := fakeclock.New(t0)
	shared := limiter.NewMemory(limiter.WithClock(clock.Now))
	s, err := tokenlease.New(shared, tokenlease.Settings{TTL: time.Second, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	oneOff(t, s, "old", 1000)
	clock.Add(time.Second)
	oneOff(t, s, "new", 5000)
	if n := s.Len(); n != 5000 {
		t.Errorf("%d keys kept, want the 5,000 seen within TTL", n)
	}
}
