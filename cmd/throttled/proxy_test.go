package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/throttledhq/throttled/config"
	"github.com/throttledhq/throttled/config/configtest"
	"github.com/throttledhq/throttled/internal/testenv"
)

// proxyConfig adds YAML to the test config.
func proxyConfig(t *testing.T, upstream, extra string) *config.Config {
	t.Helper()
	c := configtest.Serve(t, upstream, "")
	more, err := config.Parse([]byte(fmt.Sprintf("tiers: {free: {rate: 1000, period: 1s}}\n%s", extra)), nil)
	if err != nil {
		t.Fatal(err)
	}
	c.RouteBulkheads, c.UpstreamBreaker, c.Tiers = more.RouteBulkheads, more.UpstreamBreaker, more.Tiers
	c.Tiers["premium"] = more.Tiers["free"]
	return c
}

func TestUpstreamBreakerOpensOn5xx(t *testing.T) {
	var calls sync.Map
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := calls.LoadOrStore(r.URL.Path, new(int))
		*n.(*int)++
		if strings.HasPrefix(r.URL.Path, "/broken") {
			w.WriteHeader(500)
			return
		}
		w.WriteHeader(200)
	}))
	defer up.Close()
	addrs := startServe(t, proxyConfig(t, up.URL, `upstream_breaker:
  enabled: true
  routes: [/broken, /ok]
  consecutive_failures: 3
  open_timeout: 1m
`))
	proxy := "http://" + addrs["proxy"]
	for i := 0; i < 3; i++ {
		if resp, _ := testenv.Call(t, "GET", proxy+"/broken", "", "X-API-Key", "k"); resp.StatusCode != 500 {
			t.Fatalf("call %d: %d, want the upstream's 500", i, resp.StatusCode)
		}
	}
	resp, body := testenv.Call(t, "GET", proxy+"/broken", "", "X-API-Key", "k")
	if resp.StatusCode != 503 || !strings.Contains(body, `"reason":"breaker_open"`) || resp.Header.Get("Retry-After") == "" ||
		!strings.Contains(body, `"tier":"free","rule":"upstream:/broken"`) {
		t.Fatalf("after 3 failures: %d %q, want a fast 503 breaker_open for tier free by rule upstream:/broken", resp.StatusCode, body)
	}
	_, metrics := testenv.Call(t, "GET", "http://"+addrs["admin"]+"/metrics", "")
	if got := testenv.MetricValue(t, metrics, `throttled_decisions_total{decision="breaker_open",rule="upstream:/broken",tier="free"}`); got != 1 {
		t.Errorf("breaker_open decisions: %v, want 1", got)
	}
	if n, _ := calls.Load("/broken"); *n.(*int) != 3 {
		t.Fatalf("upstream saw %d calls, want 3 (the open breaker answers itself)", *n.(*int))
	}
	if resp, _ := testenv.Call(t, "GET", proxy+"/ok", "", "X-API-Key", "k"); resp.StatusCode != 200 {
		t.Fatalf("another route: %d, want 200 (its own breaker)", resp.StatusCode)
	}
}

func TestRouteBulkheadRefusesBeyondLimit(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/export" {
			entered <- struct{}{}
			<-release
		}
	}))
	defer up.Close()
	defer close(release)
	addrs := startServe(t, proxyConfig(t, up.URL, "route_bulkheads:\n  /export: { limit: 1 }\n"))
	proxy := "http://" + addrs["proxy"]
	go func() { _, _ = http.Get(proxy + "/export?first") }()
	select {
	case <-entered:
	case <-time.After(5 * time.Second):
		t.Fatal("first export never reached the upstream")
	}
	resp, body := testenv.Call(t, "GET", proxy+"/export", "")
	if resp.StatusCode != 503 || !strings.Contains(body, `"reason":"bulkhead"`) || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("second concurrent export: %d %q, want 503 bulkhead", resp.StatusCode, body)
	}
	if resp, _ := testenv.Call(t, "GET", proxy+"/other", ""); resp.StatusCode != 200 {
		t.Fatalf("other route: %d", resp.StatusCode)
	}
}
