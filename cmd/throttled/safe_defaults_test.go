package main

import (
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/throttledhq/throttled/config"
	"github.com/throttledhq/throttled/config/configtest"
	"github.com/throttledhq/throttled/internal/testenv"
)

// startServeLogged is startServe with its JSON log (debug level off) in logs.
func startServeLogged(t *testing.T, cfg *config.Config, logs *testenv.SyncBuffer) map[string]string {
	t.Helper()
	return startServeWith(t, cfg, slog.New(slog.NewJSONHandler(logs, nil)))
}

// TestServeWarnsUntrustedForwards: requests with X-Forwarded-For from a
// peer that is not a trusted proxy are counted on /metrics and warned
// about once, with the count.
func TestServeWarnsUntrustedForwards(t *testing.T) {
	up := testenv.Upstream(t)
	var logs testenv.SyncBuffer
	addrs := startServeLogged(t, configtest.Serve(t, up.URL, ""), &logs) // trusted_proxies: none
	for _, xff := range []string{"203.0.113.1", "203.0.113.2", "203.0.113.3"} {
		testenv.Call(t, "GET", "http://"+addrs["proxy"]+"/", "", "X-API-Key", "k", "X-Forwarded-For", xff)
	}
	const warning = "X-Forwarded-For from a peer not in identity.trusted_proxies"
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), warning) {
		if time.Now().After(deadline) {
			t.Fatalf("no warning about untrusted X-Forwarded-For in 10s:\n%s", logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	testenv.Call(t, "GET", "http://"+addrs["proxy"]+"/", "", "X-Forwarded-For", "203.0.113.4")
	_, metrics := testenv.Call(t, "GET", "http://"+addrs["admin"]+"/metrics", "")
	if v := testenv.MetricValue(t, metrics, "throttled_untrusted_forwarded_requests_total"); v != 4 {
		t.Errorf("throttled_untrusted_forwarded_requests_total = %v, want 4", v)
	}
	line := testenv.GrepLines(logs.String(), warning)
	if strings.Count(line, "\n") != 0 || !strings.Contains(line, `"requests":3`) || !strings.Contains(line, `"peer":"127.0.0.1"`) {
		t.Errorf("want one warning with requests 3 and peer 127.0.0.1, got:\n%s", line)
	}
}

// TestServeRedisDownLogsOnce: started against an address where no Redis
// listens and driven with requests for a few seconds, serve logs one
// actionable line about Redis and no other warning or error about it.
func TestServeRedisDownLogsOnce(t *testing.T) {
	dead := testenv.Addr(testenv.FreePort(t))
	up := testenv.Upstream(t)
	var logs testenv.SyncBuffer
	addrs := startServeLogged(t, configtest.Serve(t, up.URL, "redis://"+dead+"/0"), &logs)
	for end := time.Now().Add(4 * time.Second); time.Now().Before(end); {
		testenv.Call(t, "GET", "http://"+addrs["proxy"]+"/", "", "X-API-Key", "k")
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

// TestReadmeMinimalConfig: the README's minimal config is testenv.ReadmeConfig
// exactly (the one the tests run), and it shows identity.trusted_proxies.
func TestReadmeMinimalConfig(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "```yaml\n"+testenv.ReadmeConfig+"```\n") {
		t.Error("README.md: the minimal configuration is not testenv.ReadmeConfig as written")
	}
	if !strings.Contains(testenv.ReadmeConfig, "\n  trusted_proxies:") {
		t.Error("the minimal configuration does not show identity.trusted_proxies")
	}
}
