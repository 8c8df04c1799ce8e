package main

import (
	"strings"
	"testing"
	"time"

	"github.com/throttledhq/throttled/config/configtest"
	"github.com/throttledhq/throttled/internal/testenv"
)

// readyzState reads /readyz, /readyz?strict=1 and throttled_degraded.
func readyzState(t *testing.T, admin string) (code, strictCode int, body, gauge string) {
	t.Helper()
	resp, body := testenv.Call(t, "GET", admin+"/readyz", "")
	strict, _ := testenv.Call(t, "GET", admin+"/readyz?strict=1", "")
	_, metrics := testenv.Call(t, "GET", admin+"/metrics", "")
	return resp.StatusCode, strict.StatusCode, body, metricLine(metrics, "throttled_degraded")
}

// metricLine is the sample line of an unlabelled metric, "" when absent.
func metricLine(metrics, name string) string {
	for _, l := range strings.Split(metrics, "\n") {
		if strings.HasPrefix(l, name+" ") {
			return l
		}
	}
	return ""
}

// TestServeReadyzDuringRedisOutage: while Redis is SIGKILLed the instance
// stays ready (its fallback decides) but says it is degraded, in the body,
// on /readyz?strict=1 and in throttled_degraded; all clear once Redis is
// back.
func TestServeReadyzDuringRedisOutage(t *testing.T) {
	r := testenv.StartRedis(t)
	up := testenv.Upstream(t)
	addrs := startServe(t, configtest.Serve(t, up.URL, r.URL()))
	admin, proxy := "http://"+addrs["admin"], "http://"+addrs["proxy"]
	want := func(step string, strictCode int, degraded string) {
		t.Helper()
		code, sc, body, gauge := readyzState(t, admin)
		if code != 200 || sc != strictCode || !strings.Contains(body, `"degraded":`+degraded) ||
			gauge != "throttled_degraded "+map[string]string{"true": "1", "false": "0"}[degraded] {
			t.Fatalf("%s: /readyz %d %s, strict %d, %q; want 200 degraded %s, strict %d",
				step, code, body, sc, gauge, degraded, strictCode)
		}
	}
	want("redis up", 200, "false")
	r.Kill()
	want("redis killed", 503, "true")
	if resp, _ := testenv.Call(t, "GET", proxy+"/", "", "X-API-Key", "k"); resp.StatusCode != 200 {
		t.Fatalf("proxy with redis killed: %d, want 200 from the fallback", resp.StatusCode)
	}
	r.Start()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, sc, _, _ := readyzState(t, admin); sc == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("/readyz?strict=1 still fails 5s after redis came back")
		}
		time.Sleep(50 * time.Millisecond)
	}
	want("redis back", 200, "false")
}

// sendLimited sends n requests as key and returns how many were admitted,
// failing if any lacks the rate-limit headers (limiting switched off).
func sendLimited(t *testing.T, proxy, key string, n int) (admitted int) {
	t.Helper()
	for i := 0; i < n; i++ {
		resp, _ := testenv.Call(t, "GET", proxy+"/", "", "X-API-Key", key)
		if resp.Header.Get("X-RateLimit-Limit") == "" {
			t.Fatalf("request %d of %d as %s: %d without X-RateLimit-Limit: limiting is off", i+1, n, key, resp.StatusCode)
		}
		if resp.StatusCode == 200 {
			admitted++
		}
	}
	return admitted
}

// TestRedisDataLossKeepsLimiting is the sequence: Redis restarts
// empty (no persistence, as docker-compose ran it); the admin API still
// shows the configuration in force (not []); a POST /v1/tiers is refused
// (409) or applied on top of the restored configuration, never on an empty
// one; and the free key that was limited stays limited throughout.
func TestRedisDataLossKeepsLimiting(t *testing.T) {
	r := testenv.StartRedis(t)
	up := testenv.Upstream(t)
	addrs := startServe(t, configtest.Serve(t, up.URL, r.URL()))
	admin, proxy := "http://"+addrs["admin"], "http://"+addrs["proxy"]
	auth := []string{"Authorization", "Bearer " + testenv.WriteToken, "Content-Type", "application/json"}
	if n := sendLimited(t, proxy, "free-key", 70); n != 5 {
		t.Fatalf("before: %d of 70 admitted, want 5 (free: 5/min)", n)
	}

	r.Kill()
	r.Start() // empty: --save "" --appendonly no
	for _, path := range []string{"/v1/tiers", "/v1/rules"} {
		resp, body := testenv.Call(t, "GET", admin+path, "", auth...)
		if resp.StatusCode != 200 || strings.TrimSpace(body) == "[]" || !strings.Contains(body, map[string]string{
			"/v1/tiers": `"free"`, "/v1/rules": `"per-key"`}[path]) {
			t.Fatalf("GET %s after redis lost its data: %d %s, want the configuration in force", path, resp.StatusCode, body)
		}
	}
	tier := `{"name":"gold","rate":1000,"period":"1s","priority":0}`
	resp, body := testenv.Call(t, "POST", admin+"/v1/tiers", tier, auth...)
	if resp.StatusCode == 409 {
		if !strings.Contains(body, "config store was reset") {
			t.Fatalf("409 without saying why: %s", body)
		}
		resp, body = testenv.Call(t, "POST", admin+"/v1/tiers", tier, auth...) // the operator retries
	}
	if resp.StatusCode != 201 {
		t.Fatalf("POST /v1/tiers after the reset: %d %s", resp.StatusCode, body)
	}
	_, rules := testenv.Call(t, "GET", admin+"/v1/rules", "", auth...)
	_, tiers := testenv.Call(t, "GET", admin+"/v1/tiers", "", auth...)
	if !strings.Contains(rules, `"per-key"`) || !strings.Contains(tiers, `"free"`) || !strings.Contains(tiers, `"gold"`) {
		t.Fatalf("after the POST: rules %s tiers %s; want per-key and free, premium, gold", rules, tiers)
	}
	_, audit := testenv.Call(t, "GET", admin+"/v1/audit", "", auth...)
	if !strings.Contains(audit, `"config.restore"`) {
		t.Errorf("audit after the reset: %s, want a config.restore entry", audit)
	}
	_, metrics := testenv.Call(t, "GET", admin+"/metrics", "")
	if m := metricLine(metrics, "throttled_config_store_resets_total"); m == "" || strings.HasSuffix(m, " 0") {
		t.Errorf("resets metric: %q, want the reset counted", m)
	}
	// The buckets were lost with Redis: the key gets its burst again, then
	// is limited as before.
	if n := sendLimited(t, proxy, "free-key", 70); n > 5 {
		t.Fatalf("after the reset: %d of 70 admitted, want at most 5: limiting stopped", n)
	}
}
