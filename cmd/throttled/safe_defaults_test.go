package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/throttledhq/throttled/config"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/signals"
)

// startServeLogged is startServe with its JSON log (debug level off) in logs.
func startServeLogged(t *testing.T, cfg *config.Config, logs *syncBuffer) map[string]string {
	t.Helper()
	return startServeWith(t, cfg, slog.New(slog.NewJSONHandler(logs, nil)))
}

// TestConfigPrometheusSelector: with prometheus.url and a default query in
// use, prometheus.selector is required and must be label matchers.
func TestConfigPrometheusSelector(t *testing.T) {
	prom := readmeConfig + "prometheus:\n  url: http://127.0.0.1:9090\n"
	for _, tc := range []struct {
		name, src, want string // want "": valid
	}{
		{"defaults, no selector", prom, "prometheus.selector: required with prometheus.url"},
		{"latency query only", prom + "  latency_query: vector(0.1)\n", "prometheus.selector: required"},
		{"selector", prom + "  selector: 'job=\"checkout\"'\n", ""},
		{"bad selector", prom + "  selector: checkout\n", "prometheus.selector: want PromQL label matchers"},
		{"both queries", prom + "  latency_query: vector(0.1)\n  error_ratio_query: vector(0)\n", ""},
		{"no prometheus", readmeConfig, ""},
	} {
		_, err := config.Parse([]byte(tc.src), nil)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestServeLogsPrometheusQueries: at start serve logs the queries it
// steers by, the defaults filtered by the selector.
func TestServeLogsPrometheusQueries(t *testing.T) {
	cfg := testConfig(t, "", "")
	cfg.Prometheus.URL, cfg.Prometheus.Selector = "http://127.0.0.1:9", `job="checkout"`
	var logs syncBuffer
	s, err := buildStack(context.Background(), cfg, slog.New(slog.NewJSONHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	s.close()
	line := grepLines(logs.String(), `"signals: prometheus"`)
	for _, q := range []string{signals.LatencyQuery(`job="checkout"`), signals.ErrorRatioQuery(`job="checkout"`)} {
		if !strings.Contains(line, strings.ReplaceAll(q, `"`, `\"`)) {
			t.Errorf("start log %q lacks the query %s", line, q)
		}
	}
}

// TestServeWarnsUntrustedForwards: requests with X-Forwarded-For from a
// peer that is not a trusted proxy are counted on /metrics and warned
// about once, with the count.
func TestServeWarnsUntrustedForwards(t *testing.T) {
	up := upstreamServer(t)
	var logs syncBuffer
	addrs := startServeLogged(t, testConfig(t, up.URL, ""), &logs) // trusted_proxies: none
	for _, xff := range []string{"203.0.113.1", "203.0.113.2", "203.0.113.3"} {
		call(t, "GET", "http://"+addrs["proxy"]+"/", "", "X-API-Key", "k", "X-Forwarded-For", xff)
	}
	const warning = "X-Forwarded-For from a peer not in identity.trusted_proxies"
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), warning) {
		if time.Now().After(deadline) {
			t.Fatalf("no warning about untrusted X-Forwarded-For in 10s:\n%s", logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	call(t, "GET", "http://"+addrs["proxy"]+"/", "", "X-Forwarded-For", "203.0.113.4")
	_, metrics := call(t, "GET", "http://"+addrs["admin"]+"/metrics", "")
	if v := metricValue(t, metrics, "throttled_untrusted_forwarded_requests_total"); v != 4 {
		t.Errorf("throttled_untrusted_forwarded_requests_total = %v, want 4", v)
	}
	line := grepLines(logs.String(), warning)
	if strings.Count(line, "\n") != 0 || !strings.Contains(line, `"requests":3`) || !strings.Contains(line, `"peer":"127.0.0.1"`) {
		t.Errorf("want one warning with requests 3 and peer 127.0.0.1, got:\n%s", line)
	}
}

// TestServeRedisDownLogsOnce: started against an address where no Redis
// listens and driven with requests for a few seconds, serve logs one
// actionable line about Redis and no other warning or error about it.
func TestServeRedisDownLogsOnce(t *testing.T) {
	dead := testenv.Addr(testenv.FreePort(t))
	up := upstreamServer(t)
	var logs syncBuffer
	addrs := startServeLogged(t, testConfig(t, up.URL, "redis://"+dead+"/0"), &logs)
	for end := time.Now().Add(4 * time.Second); time.Now().Before(end); {
		call(t, "GET", "http://"+addrs["proxy"]+"/", "", "X-API-Key", "k")
		time.Sleep(50 * time.Millisecond)
	}
	out := logs.String()
	want := "redis at " + dead + " unreachable, check redis.url; serving on the local fallback"
	if n := strings.Count(out, want); n != 1 {
		t.Errorf("%d lines %q, want 1", n, want)
	}
	var noisy []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if (strings.Contains(l, `"level":"WARN"`) || strings.Contains(l, `"level":"ERROR"`)) && !strings.Contains(l, want) {
			noisy = append(noisy, l)
		}
	}
	if len(noisy) > 0 {
		t.Errorf("%d more warnings or errors with Redis down, want none:\n%s", len(noisy), strings.Join(noisy, "\n"))
	}
}

// TestRedisWatchObserve drives the outage log at fixed instants: one line
// when Redis fails, a reminder a minute later with the folded count, one
// line when it is back, and folding only while it is down.
func TestRedisWatchObserve(t *testing.T) {
	var logs syncBuffer
	w := newRedisWatch(&config.RedisConfig{URL: "redis://:secret@10.0.0.7:6379/0"}, slog.New(slog.NewJSONHandler(&logs, nil)), nil)
	folding := w.logger()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	refused := errors.New("connection refused")
	for i, tc := range []struct {
		at     time.Duration
		err    error
		warns  int    // warnings logged by the parts that use Redis just after
		logged string // the new line from the watch; "" none
	}{
		{0, nil, 1, ""},
		{time.Second, refused, 0, "redis at 10.0.0.7:6379 unreachable, check redis.url"},
		{2 * time.Second, refused, 5, ""},
		{30 * time.Second, refused, 2, ""},
		{61 * time.Second, refused, 0, `still unreachable, check redis.url; serving on the local fallback","for":"1m0s","folded_warnings":7`},
		{62 * time.Second, refused, 1, ""},
		{90 * time.Second, nil, 1, `redis at 10.0.0.7:6379 is back: shared quotas and the admin API resume","down_for":"1m29s","folded_warnings":1`},
		{91 * time.Second, nil, 0, ""},
	} {
		before := logs.String()
		w.observe(tc.err, t0.Add(tc.at))
		added := strings.TrimPrefix(logs.String(), before)
		if tc.logged == "" && added != "" || tc.logged != "" && (!strings.Contains(added, tc.logged) || strings.Count(added, "\n") != 1) {
			t.Errorf("t%d: logged %q, want %q", i, added, tc.logged)
		}
		before = logs.String()
		for range tc.warns {
			folding.Warn("admin config", "err", "boom")
		}
		passed := strings.Count(strings.TrimPrefix(logs.String(), before), "\n")
		if wantPassed := map[bool]int{true: 0, false: tc.warns}[w.down.Load()]; passed != wantPassed {
			t.Errorf("t%d: %d of %d warnings logged, want %d", i, passed, tc.warns, wantPassed)
		}
	}
	if strings.Contains(logs.String(), "secret") {
		t.Error("the Redis password was logged")
	}
}

// TestReadmeMinimalConfig: the README's minimal config is readmeConfig
// exactly (the one the tests run), and it shows identity.trusted_proxies.
func TestReadmeMinimalConfig(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "```yaml\n"+readmeConfig+"```\n") {
		t.Error("README.md: the minimal configuration is not readmeConfig as written")
	}
	if !strings.Contains(readmeConfig, "\n  trusted_proxies:") {
		t.Error("the minimal configuration does not show identity.trusted_proxies")
	}
}
