package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/throttledhq/throttled/api"
)

// rateLimitHeaders are the headers a refusal after the rules must not carry.
var rateLimitHeaders = []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "RateLimit-Policy", "RateLimit"}

// TestRefusalAfterRulesRefundsQuota: a request that the rules admitted and
// a bulkhead then refused (503) gets its quota back and carries no
// rate-limit headers. Free is 5 a minute: one request held upstream, three
// refused, then four more pass before the 429. One the inner loop's gate
// shed keeps its quota spent, as a shed by the multiplier does (a client
// above its quota gets 429 whichever loop sheds): one more passes. Each
// refusal names its rule (the bulkhead, the gate) in its body and is
// counted in throttled_decisions_total.
func TestRefusalAfterRulesRefundsQuota(t *testing.T) {
	for _, tc := range []struct {
		name, extra, reason, rule string
		after                     int
	}{
		{"route bulkhead", "route_bulkheads:\n  /hold: { limit: 1 }\n", "bulkhead", "route:/hold", 4},
		{"gate", "concurrency:\n  initial_limit: 1\n  min_limit: 1\n  max_limit: 1\n", "shed", "concurrency", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			var releaseOnce sync.Once
			free := func() { releaseOnce.Do(func() { close(release) }) }
			entered := make(chan struct{}, 1)
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/hold" {
					entered <- struct{}{}
					<-release
				}
			}))
			defer up.Close()
			defer free() // before up.Close, which waits for the held request, also when the test fails early
			cfg := testConfig(t, up.URL, "")
			more, err := parseConfig([]byte("tiers: {free: {rate: 1, period: 1s}}\n"+tc.extra), nil)
			if err != nil {
				t.Fatal(err)
			}
			cfg.RouteBulkheads, cfg.Concurrency = more.RouteBulkheads, more.Concurrency
			addrs := startServe(t, cfg)
			proxy := "http://" + addrs["proxy"]
			var held sync.WaitGroup
			held.Go(func() {
				req, _ := http.NewRequest("GET", proxy+"/hold", nil)
				req.Header.Set("X-API-Key", "k")
				if resp, err := http.DefaultClient.Do(req); err == nil {
					resp.Body.Close()
				}
			})
			<-entered
			for i := range 3 {
				resp, body := call(t, "GET", proxy+"/hold", "", "X-API-Key", "k")
				if resp.StatusCode != 503 || !strings.Contains(body, `"reason":"`+tc.reason+`"`) ||
					!strings.Contains(body, `"tier":"free","rule":"`+tc.rule+`"`) {
					t.Fatalf("refusal %d: %d %s, want 503 %s for tier free by rule %s", i, resp.StatusCode, body, tc.reason, tc.rule)
				}
				for _, h := range rateLimitHeaders {
					if v := resp.Header.Get(h); v != "" {
						t.Errorf("refusal %d carries %s: %s", i, h, v)
					}
				}
			}
			_, metrics := call(t, "GET", "http://"+addrs["admin"]+"/metrics", "")
			series := `throttled_decisions_total{decision="` + tc.reason + `",rule="` + tc.rule + `",tier="free"}`
			if got := metricValue(t, metrics, series); got != 3 {
				t.Errorf("%s = %v, want 3", series, got)
			}
			free()
			held.Wait()
			passed := 0
			for i := 0; i < 10; i++ {
				resp, _ := call(t, "GET", proxy+"/other", "", "X-API-Key", "k")
				if resp.StatusCode != 200 {
					break
				}
				passed++
			}
			if passed != tc.after {
				t.Fatalf("%d requests passed after the refusals, want %d", passed, tc.after)
			}
		})
	}
}

// TestUpstreamTimeout: an upstream that never answers gets 504 after
// upstream_timeout, and its gate permit is free again.
func TestUpstreamTimeout(t *testing.T) {
	hang := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hang" {
			<-hang
		}
	}))
	defer up.Close()
	defer close(hang)
	cfg := proxyConfig(t, up.URL, "")
	cfg.UpstreamTimeout = api.Duration(200 * time.Millisecond)
	cfg.Concurrency.InitialLimit, cfg.Concurrency.MinLimit, cfg.Concurrency.MaxLimit = 1, 1, 1
	proxy := "http://" + startServe(t, cfg)["proxy"]
	client := &http.Client{Timeout: 20 * time.Second} // far beyond upstream_timeout: the test fails, not hangs
	resp, err := client.Get(proxy + "/hang")
	if err != nil {
		t.Fatalf("no answer from the proxy: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusGatewayTimeout {
		t.Fatalf("hung upstream: %d, want 504", resp.StatusCode)
	}
	if resp, _ := call(t, "GET", proxy+"/ok", ""); resp.StatusCode != 200 {
		t.Fatalf("after the timeout: %d, want 200 (the only permit was released)", resp.StatusCode)
	}
}

// TestForwardedForChain: behind a trusted proxy the incoming
// X-Forwarded-For chain is extended; from anyone else it is replaced.
func TestForwardedForChain(t *testing.T) {
	seen := make(chan string, 1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- strings.Join(r.Header.Values("X-Forwarded-For"), "|")
	}))
	defer up.Close()
	for _, tc := range []struct {
		trusted []string
		want    string
	}{
		{[]string{"127.0.0.0/8"}, "203.0.113.7, 127.0.0.1"},
		{nil, "127.0.0.1"},
	} {
		cfg := proxyConfig(t, up.URL, "")
		cfg.Identity.TrustedProxies = tc.trusted
		proxy := "http://" + startServe(t, cfg)["proxy"]
		if resp, _ := call(t, "GET", proxy+"/", "", "X-Forwarded-For", "203.0.113.7"); resp.StatusCode != 200 {
			t.Fatalf("%d", resp.StatusCode)
		}
		if got := <-seen; got != tc.want {
			t.Errorf("trusted %v: upstream saw X-Forwarded-For %q, want %q", tc.trusted, got, tc.want)
		}
	}
}

// TestUpstreamRateLimitHeadersReplaced: the upstream's own rate-limit
// headers give way to ours; one value of each reaches the client.
func TestUpstreamRateLimitHeadersReplaced(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, h := range rateLimitHeaders {
			w.Header().Set(h, "upstream")
		}
		w.Header().Set("X-Upstream", "kept")
	}))
	defer up.Close()
	proxy := "http://" + startServe(t, testConfig(t, up.URL, ""))["proxy"]
	resp, _ := call(t, "GET", proxy+"/", "", "X-API-Key", "k")
	if resp.StatusCode != 200 || resp.Header.Get("X-Upstream") != "kept" {
		t.Fatalf("%d, X-Upstream %q", resp.StatusCode, resp.Header.Get("X-Upstream"))
	}
	for _, h := range rateLimitHeaders {
		if v := resp.Header.Values(h); len(v) != 1 || v[0] == "upstream" {
			t.Errorf("%s: %q, want ours alone", h, v)
		}
	}
	if v := resp.Header.Values("X-RateLimit-Limit"); len(v) == 1 && v[0] != "5" {
		t.Errorf("X-RateLimit-Limit %q, want 5 (free)", v[0])
	}
}
