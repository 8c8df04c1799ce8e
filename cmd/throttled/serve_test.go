package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/throttledhq/throttled/config"
	"github.com/throttledhq/throttled/config/configtest"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter/coord"
)

// startServe runs `serve` in-process and returns its bound addresses.
func startServe(t *testing.T, cfg *config.Config) map[string]string {
	t.Helper()
	return startServeWith(t, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// startServeWith is startServe logging to log; serve stops at the test's
// end.
func startServeWith(t *testing.T, cfg *config.Config, log *slog.Logger) map[string]string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan map[string]string, 1)
	done := make(chan error, 1)
	go func() { done <- runServe(ctx, cfg, log, started) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Error("serve did not stop within 20s of cancel")
		}
	})
	select {
	case addrs := <-started:
		return addrs
	case err := <-done:
		t.Fatalf("serve: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not start in 20s")
	}
	return nil
}

func TestServeEmbedded(t *testing.T) {
	up := testenv.Upstream(t)
	addrs := startServe(t, configtest.Serve(t, up.URL, ""))
	proxy, admin := "http://"+addrs["proxy"], "http://"+addrs["admin"]
	for i := 0; i < 5; i++ {
		resp, body := testenv.Call(t, "GET", proxy+"/x", "", "X-API-Key", "k1")
		if resp.StatusCode != 200 || body != "upstream ok" {
			t.Fatalf("request %d: %d %q", i, resp.StatusCode, body)
		}
	}
	resp, body := testenv.Call(t, "GET", proxy+"/x", "", "X-API-Key", "k1")
	if resp.StatusCode != 429 || !strings.Contains(body, `"reason":"over_quota"`) || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("6th: %d %q", resp.StatusCode, body)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if resp, _ := testenv.Call(t, "GET", admin+path, ""); resp.StatusCode != 200 {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
	}
	_, metrics := testenv.Call(t, "GET", admin+"/metrics", "")
	for _, want := range []string{`throttled_decisions_total{decision="over_quota",rule="per-key",tier="free"} 1`,
		`throttled_upstream_requests_total{code="200"} 5`, "throttled_controller_leader 1"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	resp, body = testenv.Call(t, "GET", admin+"/v1/keys/k1", "", "Authorization", "Bearer "+testenv.WriteToken)
	if resp.StatusCode != 200 || !strings.Contains(body, `"rule":"per-key"`) || !strings.Contains(body, `"remaining":0`) {
		t.Fatalf("GET /v1/keys/k1: %d %s, want its per-key bucket, empty", resp.StatusCode, body)
	}
	if resp, _ := testenv.Call(t, "GET", admin+"/v1/tiers", ""); resp.StatusCode != 401 {
		t.Fatalf("admin without token: %d, want 401", resp.StatusCode)
	}
}

// assignPremium puts key into the premium tier through the admin API.
func assignPremium(t *testing.T, admin, key string) {
	t.Helper()
	resp, body := testenv.Call(t, "PUT", admin+"/v1/keys/"+key, `{"tier":"premium"}`,
		"Authorization", "Bearer "+testenv.WriteToken, "Content-Type", "application/json")
	if resp.StatusCode/100 != 2 {
		t.Fatalf("assign: %d %s", resp.StatusCode, body)
	}
}

// TestServeSharedAcrossInstances: two instances on one Redis share quotas,
// and a key assigned through one instance's admin API reaches the other
// within 2 s.
func TestServeSharedAcrossInstances(t *testing.T) {
	r := testenv.StartRedis(t)
	up := testenv.Upstream(t)
	a := startServe(t, configtest.Serve(t, up.URL, r.URL()))
	b := startServe(t, configtest.Serve(t, up.URL, r.URL()))
	codes := map[int]int{}
	for i := 0; i < 8; i++ {
		addr := a["proxy"]
		if i%2 == 1 {
			addr = b["proxy"]
		}
		resp, _ := testenv.Call(t, "GET", "http://"+addr+"/", "", "X-API-Key", "shared")
		codes[resp.StatusCode]++
	}
	if codes[200] != 5 || codes[429] != 3 {
		t.Fatalf("codes %v across two instances, want 5×200 and 3×429 (one shared quota of 5)", codes)
	}
	assignPremium(t, "http://"+a["admin"], "shared")
	deadline := time.Now().Add(2 * time.Second)
	for {
		resp, _ := testenv.Call(t, "GET", "http://"+b["proxy"]+"/", "", "X-API-Key", "shared")
		if resp.StatusCode == 200 && resp.Header.Get("X-RateLimit-Limit") == "100" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("instance b still answers %d limit %s 2s after the assignment", resp.StatusCode, resp.Header.Get("X-RateLimit-Limit"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestServeRedisKilledUnderLoad: with Redis killed mid-run, every request is
// answered per the fallback policy (local): 200 or 429, never a 503 or a
// 500; the local limiter admits no client more than its share (the whole
// quota: one instance heartbeats) and refuses the rest; shared limiting
// resumes after a restart on the same port.
func TestServeRedisKilledUnderLoad(t *testing.T) {
	r := testenv.StartRedis(t)
	up := testenv.Upstream(t)
	addrs := startServe(t, configtest.Serve(t, up.URL, r.URL()))
	proxy := "http://" + addrs["proxy"]
	var bad atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	limit := time.Now().Add(15 * time.Second) // traffic until recovery is seen, bounded
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 1_000_000 && time.Now().Before(limit); i++ {
				select {
				case <-stop:
					return
				default:
				}
				req, _ := http.NewRequest("GET", proxy+"/", nil)
				req.Header.Set("X-API-Key", fmt.Sprint("worker-", w))
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					bad.Add(1)
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 && resp.StatusCode != 429 {
					bad.Add(1)
				}
			}
		}(w)
	}
	time.Sleep(300 * time.Millisecond)
	r.Kill()
	time.Sleep(700 * time.Millisecond)
	r.Start()
	deadline := time.Now().Add(3 * time.Second)
	for {
		_, metrics := testenv.Call(t, "GET", "http://"+addrs["admin"]+"/metrics", "")
		if strings.Contains(metrics, "throttled_fallback_active 0") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("fallback still active 3s after redis restarted:\n%s", testenv.GrepLines(metrics, "throttled_breaker_state", "throttled_store_errors_total", "throttled_fallback_active", "decision=\"fallback_allowed\""))
		}
		time.Sleep(100 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if bad.Load() > 0 {
		t.Fatalf("%d requests failed or got a status other than 200/429", bad.Load())
	}
	_, metrics := testenv.Call(t, "GET", "http://"+addrs["admin"]+"/metrics", "")
	allowed := testenv.MetricValue(t, metrics, `throttled_decisions_total{decision="fallback_allowed",rule="per-key",tier="free"}`)
	refused := testenv.MetricValue(t, metrics, `throttled_decisions_total{decision="fallback_over_quota",rule="per-key",tier="free"}`)
	// Each of the 8 clients may take its share, 5 (burst) plus what 5/min
	// refills over the test's 15 s at most: 2.
	if allowed > 8*(5+2) || refused == 0 {
		t.Fatalf("the local fallback admitted %v and refused %v, want at most 8 × 7 admitted and the rest refused", allowed, refused)
	}
}

// TestReadmeConfigServes runs the README's minimal config as written, with
// only its addresses moved to free ports and a test Redis (as an operator
// would with THROTTLED_* variables).
func TestReadmeConfigServes(t *testing.T) {
	r := testenv.StartRedis(t)
	up := testenv.Upstream(t)
	cfg, err := config.Parse([]byte(testenv.ReadmeConfig), []string{
		"THROTTLED_LISTEN=127.0.0.1:0", "THROTTLED_ADMIN_LISTEN=127.0.0.1:0",
		"THROTTLED_UPSTREAM=" + up.URL, "THROTTLED_REDIS_URL=" + r.URL(),
	})
	if err != nil {
		t.Fatal(err)
	}
	addrs := startServe(t, cfg)
	codes := map[int]int{}
	for i := 0; i < 12; i++ {
		resp, _ := testenv.Call(t, "GET", "http://"+addrs["proxy"]+"/", "", "X-API-Key", "readme")
		codes[resp.StatusCode]++
	}
	if codes[200] != 10 || codes[429] != 2 {
		t.Fatalf("codes %v, want 10×200 then 429s (free: 10/s)", codes)
	}
	resp, body := testenv.Call(t, "GET", "http://"+addrs["admin"]+"/v1/tiers", "", "Authorization", "Bearer change-me")
	if resp.StatusCode != 200 || !strings.Contains(body, `"premium"`) {
		t.Fatalf("admin API with the README token: %d %s", resp.StatusCode, body)
	}
}

// TestServeControllerFollowsNewTiers: a tier created through the admin API
// is controlled (and published) without a restart.
func TestServeControllerFollowsNewTiers(t *testing.T) {
	up := testenv.Upstream(t)
	addrs := startServe(t, configtest.Serve(t, up.URL, ""))
	admin := "http://" + addrs["admin"]
	resp, body := testenv.Call(t, "POST", admin+"/v1/tiers", `{"name":"gold","rate":1000,"period":"1s","priority":0}`,
		"Authorization", "Bearer "+testenv.WriteToken, "Content-Type", "application/json")
	if resp.StatusCode != 201 && resp.StatusCode != 200 {
		t.Fatalf("create tier: %d %s", resp.StatusCode, body)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, metrics := testenv.Call(t, "GET", admin+"/metrics", "")
		if strings.Contains(metrics, `throttled_tier_multiplier{tier="gold"} 1`) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the controller never published the new tier gold")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestServeStartsWithRedisDown: an instance started while Redis is down
// still serves (fallback decisions, the file's configuration); its admin API
// answers 503 until Redis is back, then serves.
func TestServeStartsWithRedisDown(t *testing.T) {
	r := testenv.StartRedis(t)
	r.Kill()
	up := testenv.Upstream(t)
	addrs := startServe(t, configtest.Serve(t, up.URL, r.URL()))
	resp, _ := testenv.Call(t, "GET", "http://"+addrs["proxy"]+"/", "", "X-API-Key", "k")
	if resp.StatusCode != 200 {
		t.Fatalf("proxy with redis down: %d, want 200 from the local fallback", resp.StatusCode)
	}
	admin := "http://" + addrs["admin"] + "/v1/tiers"
	if resp, _ := testenv.Call(t, "GET", admin, "", "Authorization", "Bearer "+testenv.WriteToken); resp.StatusCode != 503 {
		t.Fatalf("admin with redis down: %d, want 503", resp.StatusCode)
	}
	r.Start()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, _ := testenv.Call(t, "GET", admin, "", "Authorization", "Bearer "+testenv.WriteToken)
		if resp.StatusCode == 200 {
			_, metrics := testenv.Call(t, "GET", "http://"+addrs["admin"]+"/metrics", "")
			if !strings.Contains(metrics, "throttled_admin_requests_total") {
				t.Fatal("the admin API's metrics are missing after it came back")
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("admin still %d 10s after redis came back", resp.StatusCode)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestServeGracefulShutdown: on shutdown an in-flight request completes and
// the controller's leader lease is released at once (no wait for its TTL).
func TestServeGracefulShutdown(t *testing.T) {
	r := testenv.StartRedis(t)
	entered := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		close(entered)
		time.Sleep(300 * time.Millisecond)
		_, _ = io.WriteString(w, "done")
	}))
	defer up.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan map[string]string, 1)
	done := make(chan error, 1)
	go func() {
		done <- runServe(ctx, configtest.Serve(t, up.URL, r.URL()), slog.New(slog.DiscardHandler), started)
	}()
	addrs := <-started
	lease := coord.Settings{Prefix: "throttled:"}.LeaseKey()
	deadline := time.Now().Add(5 * time.Second)
	for r.Client().Exists(context.Background(), lease).Val() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the controller never took the lease")
		}
		time.Sleep(50 * time.Millisecond)
	}
	result := make(chan string, 1)
	go func() {
		resp, err := http.Get("http://" + addrs["proxy"] + "/slow")
		if err != nil {
			result <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		result <- fmt.Sprint(resp.StatusCode, " ", string(b))
	}()
	<-entered
	cancel()
	if got := <-result; got != "200 done" {
		t.Fatalf("in-flight request during shutdown: %q, want 200 done", got)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := r.Client().Exists(context.Background(), lease).Val(); n != 0 {
		t.Fatal("the leader lease is still held after shutdown")
	}
}
