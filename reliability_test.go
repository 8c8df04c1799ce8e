package throttled

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/throttledhq/throttled/config/configtest"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
)

// TestRecoveryAfterRedisOutage: after an outage under traffic, shared
// decisions resume within 1 s of Redis answering again. The stack is the
// production one (client, breaker, fallback, its background parts running);
// pool_size=2 makes go-redis reach its dial lockout (PoolSize failed dials
// in a row, after which it dials once a second) within the short outage, as
// a 60 s outage does at the default pool size.
func TestRecoveryAfterRedisOutage(t *testing.T) {
	r := testenv.StartRedis(t)
	cfg := configtest.Serve(t, "", r.URL()+"?pool_size=2")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := New(ctx, cfg, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, run := range s.runners {
		go func() { _ = run(ctx) }()
	}
	req := limiter.Request{Key: "recovery", Rule: limiter.Rule{Name: "r", Limit: 1e9, Period: time.Second}}
	decide := func() limiter.Decision {
		t.Helper()
		d, err := s.store.Decide(ctx, req)
		if err != nil || !d.Allowed {
			t.Fatalf("decision: %+v, %v; want allowed", d, err)
		}
		return d
	}
	// With redis up decisions are shared; the first few may still fall back
	// on a loaded machine (a new connection and the script's first load
	// against the 50 ms deadline), so wait, bounded, for a shared one.
	shared := false
	for end := time.Now().Add(5 * time.Second); !shared && time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		shared = !decide().Fallback
	}
	if !shared {
		t.Fatal("no shared decision within 5 s with redis up")
	}
	r.Kill()
	down := outage(t)
	for end := time.Now().Add(down); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if !decide().Fallback {
			t.Fatal("a shared decision with redis killed")
		}
	}
	r.Start() // returns once redis answers PING
	back := time.Now()
	for decide().Fallback {
		if time.Since(back) > 10*time.Second {
			t.Fatal("still on the fallback 10s after redis answered again")
		}
		time.Sleep(time.Millisecond)
	}
	rec := time.Since(back)
	t.Logf("shared decisions resumed %v after redis answered again (outage %v)", rec, down)
	if rec > time.Second {
		t.Errorf("shared decisions resumed %v after redis answered again, want within 1s", rec)
	}
}

// outage is how long TestRecoveryAfterRedisOutage keeps Redis down:
// THROTTLED_TEST_OUTAGE (`make reliability` sets 60s), else 2 s.
func outage(t *testing.T) time.Duration {
	t.Helper()
	v := os.Getenv("THROTTLED_TEST_OUTAGE")
	if v == "" {
		return 2 * time.Second
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("THROTTLED_TEST_OUTAGE=%q: %v", v, err)
	}
	return d
}

// TestMemoryPolicyWarning: at start throttled warns, in the log and in
// throttled_redis_memory_policy_risk, about a maxmemory-policy that can
// evict live buckets; not about volatile-ttl.
func TestMemoryPolicyWarning(t *testing.T) {
	r := testenv.StartRedis(t)
	for policy, risky := range map[string]bool{"allkeys-lru": true, "volatile-ttl": false} {
		if err := r.Client().ConfigSet(context.Background(), "maxmemory-policy", policy).Err(); err != nil {
			t.Fatal(err)
		}
		var logs testenv.SyncBuffer
		s, err := New(context.Background(), configtest.Serve(t, "", r.URL()),
			Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		want := map[bool]float64{true: 1, false: 0}[risky]
		mfs, err := s.gather.Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := -1.0
		for _, mf := range mfs {
			if mf.GetName() == "throttled_redis_memory_policy_risk" {
				got = mf.GetMetric()[0].GetGauge().GetValue()
			}
		}
		warned := strings.Contains(logs.String(), "maxmemory-policy "+policy)
		if got != want || warned != risky {
			t.Errorf("%s: gauge %v, warned %v; want %v, %v\n%s", policy, got, warned, want, risky, logs.String())
		}
	}
}
