package main

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
)

// readyzState reads /readyz, /readyz?strict=1 and throttled_degraded.
func readyzState(t *testing.T, admin string) (code, strictCode int, body, gauge string) {
	t.Helper()
	resp, body := call(t, "GET", admin+"/readyz", "")
	strict, _ := call(t, "GET", admin+"/readyz?strict=1", "")
	_, metrics := call(t, "GET", admin+"/metrics", "")
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
	up := upstreamServer(t)
	addrs := startServe(t, testConfig(t, up.URL, r.URL()))
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
	if resp, _ := call(t, "GET", proxy+"/", "", "X-API-Key", "k"); resp.StatusCode != 200 {
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

// TestRecoveryAfterRedisOutage: after an outage under traffic, shared
// decisions resume within 1 s of Redis answering again. The stack is the
// production one (client, breaker, fallback, its background parts running);
// pool_size=2 makes go-redis reach its dial lockout (PoolSize failed dials
// in a row, after which it dials once a second) within the short outage, as
// a 60 s outage does at the default pool size.
func TestRecoveryAfterRedisOutage(t *testing.T) {
	r := testenv.StartRedis(t)
	cfg := testConfig(t, "", r.URL()+"?pool_size=2")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := buildStack(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
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

// sendLimited sends n requests as key and returns how many were admitted,
// failing if any lacks the rate-limit headers (limiting switched off).
func sendLimited(t *testing.T, proxy, key string, n int) (admitted int) {
	t.Helper()
	for i := 0; i < n; i++ {
		resp, _ := call(t, "GET", proxy+"/", "", "X-API-Key", key)
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
	up := upstreamServer(t)
	addrs := startServe(t, testConfig(t, up.URL, r.URL()))
	admin, proxy := "http://"+addrs["admin"], "http://"+addrs["proxy"]
	auth := []string{"Authorization", "Bearer " + testToken, "Content-Type", "application/json"}
	if n := sendLimited(t, proxy, "free-key", 70); n != 5 {
		t.Fatalf("before: %d of 70 admitted, want 5 (free: 5/min)", n)
	}

	r.Kill()
	r.Start() // empty: --save "" --appendonly no
	for _, path := range []string{"/v1/tiers", "/v1/rules"} {
		resp, body := call(t, "GET", admin+path, "", auth...)
		if resp.StatusCode != 200 || strings.TrimSpace(body) == "[]" || !strings.Contains(body, map[string]string{
			"/v1/tiers": `"free"`, "/v1/rules": `"per-key"`}[path]) {
			t.Fatalf("GET %s after redis lost its data: %d %s, want the configuration in force", path, resp.StatusCode, body)
		}
	}
	tier := `{"name":"gold","rate":1000,"period":"1s","priority":0}`
	resp, body := call(t, "POST", admin+"/v1/tiers", tier, auth...)
	if resp.StatusCode == 409 {
		if !strings.Contains(body, "config store was reset") {
			t.Fatalf("409 without saying why: %s", body)
		}
		resp, body = call(t, "POST", admin+"/v1/tiers", tier, auth...) // the operator retries
	}
	if resp.StatusCode != 201 {
		t.Fatalf("POST /v1/tiers after the reset: %d %s", resp.StatusCode, body)
	}
	_, rules := call(t, "GET", admin+"/v1/rules", "", auth...)
	_, tiers := call(t, "GET", admin+"/v1/tiers", "", auth...)
	if !strings.Contains(rules, `"per-key"`) || !strings.Contains(tiers, `"free"`) || !strings.Contains(tiers, `"gold"`) {
		t.Fatalf("after the POST: rules %s tiers %s; want per-key and free, premium, gold", rules, tiers)
	}
	_, audit := call(t, "GET", admin+"/v1/audit", "", auth...)
	if !strings.Contains(audit, `"config.restore"`) {
		t.Errorf("audit after the reset: %s, want a config.restore entry", audit)
	}
	_, metrics := call(t, "GET", admin+"/metrics", "")
	if m := metricLine(metrics, "throttled_config_store_resets_total"); m == "" || strings.HasSuffix(m, " 0") {
		t.Errorf("resets metric: %q, want the reset counted", m)
	}
	// The buckets were lost with Redis: the key gets its burst again, then
	// is limited as before.
	if n := sendLimited(t, proxy, "free-key", 70); n > 5 {
		t.Fatalf("after the reset: %d of 70 admitted, want at most 5: limiting stopped", n)
	}
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
		var logs syncBuffer
		s, err := buildStack(context.Background(), testConfig(t, "", r.URL()),
			slog.New(slog.NewJSONHandler(&logs, nil)))
		if err != nil {
			t.Fatal(err)
		}
		s.close()
		want := map[bool]float64{true: 1, false: 0}[risky]
		mfs, err := s.reg.Gather()
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
