package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/throttledhq/throttled/bulkhead"
	"github.com/throttledhq/throttled/config"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/coord"
)

// TestConfigHeadroom: an explicit headroom of 0 is refused (it used to
// become the default 0.1 silently); unset means the law's default; a value
// reaches the law, from the file or the environment.
func TestConfigHeadroom(t *testing.T) {
	withHeadroom := func(v string) string { return readmeConfig + "controller:\n  headroom: " + v + "\n" }
	if _, err := config.Parse([]byte(withHeadroom("0")), nil); err == nil || !strings.Contains(err.Error(), "controller.headroom") {
		t.Fatalf("headroom 0: err %v, want an error at controller.headroom", err)
	}
	for _, tc := range []struct {
		src     string
		environ []string
		want    float64
	}{
		{readmeConfig, nil, 0}, // 0: the law's default
		{withHeadroom("0.3"), nil, 0.3},
		{readmeConfig, []string{"THROTTLED_CONTROLLER_HEADROOM=0.2"}, 0.2},
	} {
		c, err := config.Parse([]byte(tc.src), tc.environ)
		if err != nil {
			t.Fatal(err)
		}
		if got := config.ControllerSettings(c, c.Tiers).Headroom; got != tc.want {
			t.Errorf("%v: law headroom %v, want %v", tc.environ, got, tc.want)
		}
	}
}

// TestConfigSignalStaleAfter: the controller's signal staleness has its own
// knob, apart from the enforcers' multiplier staleness (stale_after).
func TestConfigSignalStaleAfter(t *testing.T) {
	c, err := config.Parse([]byte(readmeConfig+"controller:\n  signal_stale_after: 40s\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := config.ControllerSettings(c, c.Tiers).SignalStaleAfter; got != 40*time.Second {
		t.Fatalf("law SignalStaleAfter %v, want 40s", got)
	}
	plain, err := config.Parse([]byte(readmeConfig), nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Controller.MultiplierStaleAfter != plain.Controller.MultiplierStaleAfter {
		t.Fatalf("stale_after %v moved with signal_stale_after (%v without)", c.Controller.MultiplierStaleAfter,
			plain.Controller.MultiplierStaleAfter)
	}
}

// TestConfigRedisBreaker: the store breaker's failure count and open time
// come from fallback.consecutive_failures and fallback.open_timeout.
func TestConfigRedisBreaker(t *testing.T) {
	r := testenv.StartRedis(t)
	src := readmeConfig + "fallback:\n  instances: 1\n  consecutive_failures: 2\n  open_timeout: 1m\n"
	cfg, err := config.Parse([]byte(src), []string{"THROTTLED_REDIS_URL=" + r.URL()})
	if err != nil {
		t.Fatal(err)
	}
	s, err := buildStack(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	r.Kill()
	req := limiter.Request{Key: "k", Rule: limiter.Rule{Name: "r", Limit: 10, Period: time.Second}}
	state := func() float64 {
		return gaugeOf(t, s.reg, bulkhead.MetricBreakerState, "redis")
	}
	for i := range 2 {
		if state() != float64(bulkhead.StateClosed) {
			t.Fatalf("breaker not closed after %d failures", i)
		}
		if _, err := s.store.Decide(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	if state() != float64(bulkhead.StateOpen) {
		t.Fatalf("breaker state %v after 2 failures, want open (consecutive_failures: 2)", state())
	}
}

// TestControllerOnlyReplicaDoesNotHeartbeat: a replica without a proxy does
// not enforce, so it is not one of the instances that share a quota while
// Redis is down: only the enforcing instance heartbeats.
func TestControllerOnlyReplicaDoesNotHeartbeat(t *testing.T) {
	r := testenv.StartRedis(t)
	ctl := testConfig(t, "", r.URL())
	startServe(t, ctl)
	waitFor(t, 10*time.Second, "the controller-only replica leads", func() bool {
		return r.Client().Exists(context.Background(), coord.Settings{Prefix: "throttled:"}.LeaseKey()).Val() == 1
	})
	up := upstreamServer(t)
	enf := testConfig(t, up.URL, r.URL())
	enf.Controller.Disabled = true
	addrs := startServe(t, enf)
	waitFor(t, 10*time.Second, "the enforcer heartbeats", func() bool {
		return r.Client().ZCard(context.Background(), "throttled:instances").Val() >= 1
	})
	if resp, _ := call(t, "GET", "http://"+addrs["proxy"]+"/", "", "X-API-Key", "k"); resp.StatusCode != http.StatusOK {
		t.Fatalf("enforcer: %d", resp.StatusCode)
	}
	if n := r.Client().ZCard(context.Background(), "throttled:instances").Val(); n != 1 {
		t.Fatalf("%d instances heartbeat, want 1 (the enforcer; the controller-only replica enforces nothing)", n)
	}
}

// gaugeOf is the value of the gauge name{name=label} in reg.
func gaugeOf(t *testing.T, reg prometheus.Gatherer, name, label string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "name" && l.GetValue() == label {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("no %s{name=%q}", name, label)
	return 0
}

// waitFor polls cond until it holds, failing after d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
