package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/throttledhq/throttled/config"
	"github.com/throttledhq/throttled/config/configtest"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/policy"
)

// rateLimitHeaders are the headers a refusal after the rules must not carry.
var rateLimitHeaders = []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "RateLimit-Policy", "RateLimit"}

// TestRefusalAfterRulesKeepsQuota: a request that the rules admitted and
// a bulkhead or the inner loop's gate then refused (503) keeps its quota
// spent, as every refusal for load does (README, "Quota vs load in one
// key"), and carries no rate-limit headers. Free is 5 a minute: one
// request held upstream, three refused, then one more passes before the
// 429. Each refusal names its rule (the bulkhead, the gate) in its body
// and is counted in throttled_decisions_total.
func TestRefusalAfterRulesKeepsQuota(t *testing.T) {
	for _, tc := range []struct {
		name, extra, reason, rule string
		after                     int
	}{
		{"route bulkhead", "route_bulkheads:\n  /hold: { limit: 1 }\n", "bulkhead", "route:/hold", 1},
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
			cfg := configtest.Serve(t, up.URL, "")
			more, err := config.Parse([]byte("tiers: {free: {rate: 1, period: 1s}}\n"+tc.extra), nil)
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
				resp, body := testenv.Call(t, "GET", proxy+"/hold", "", "X-API-Key", "k")
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
			_, metrics := testenv.Call(t, "GET", "http://"+addrs["admin"]+"/metrics", "")
			series := `throttled_decisions_total{decision="` + tc.reason + `",rule="` + tc.rule + `",tier="free"}`
			if got := testenv.MetricValue(t, metrics, series); got != 3 {
				t.Errorf("%s = %v, want 3", series, got)
			}
			free()
			held.Wait()
			passed := 0
			for i := 0; i < 10; i++ {
				resp, _ := testenv.Call(t, "GET", proxy+"/other", "", "X-API-Key", "k")
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
	cfg.UpstreamTimeout = policy.Duration(200 * time.Millisecond)
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
	if resp, _ := testenv.Call(t, "GET", proxy+"/ok", ""); resp.StatusCode != 200 {
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
		if resp, _ := testenv.Call(t, "GET", proxy+"/", "", "X-Forwarded-For", "203.0.113.7"); resp.StatusCode != 200 {
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
	proxy := "http://" + startServe(t, configtest.Serve(t, up.URL, ""))["proxy"]
	resp, _ := testenv.Call(t, "GET", proxy+"/", "", "X-API-Key", "k")
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

// TestProxyBodyLimit: a request body larger than max_body_bytes (10 MiB by
// default) gets 413 with a JSON error that names the setting and the limit,
// whether its length is declared (refused before the rules and the
// upstream) or not (chunked: refused once the proxy has read past the
// limit); a body of exactly the limit reaches the upstream whole. Oversized
// bodies are the client's fault: they do not open the upstream breaker.
func TestProxyBodyLimit(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
		}
		_, _ = fmt.Fprint(w, n)
	}))
	defer up.Close()
	breaker := "upstream_breaker: {enabled: true, consecutive_failures: 1}\n"
	for _, tc := range []struct {
		yaml  string
		limit int
	}{{"", 10 << 20}, {"max_body_bytes: 1024\n", 1024}} {
		cfg := proxyConfig(t, up.URL, breaker)
		more, err := config.Parse([]byte(minimalTiers+tc.yaml), nil)
		if err != nil {
			t.Fatal(err)
		}
		cfg.MaxBodyBytes = more.MaxBodyBytes
		proxy := "http://" + startServe(t, cfg)["proxy"]
		for _, c := range []struct {
			size    int
			chunked bool
			want    int
		}{{tc.limit, false, 200}, {tc.limit, true, 200}, {tc.limit + 1, false, 413}, {tc.limit + 1, true, 413}} {
			var body io.Reader = bytes.NewReader(make([]byte, c.size))
			if c.chunked {
				body = io.MultiReader(body) // no length known: sent chunked
			}
			req, _ := http.NewRequest("POST", proxy+"/upload", body)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("limit %d, %d bytes (chunked %v): %v", tc.limit, c.size, c.chunked, err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			ok := resp.StatusCode == c.want
			if c.want == 200 {
				ok = ok && string(got) == strconv.Itoa(c.size)
			} else {
				ok = ok && strings.Contains(string(got), `"reason":"body_too_large"`) &&
					strings.Contains(string(got), fmt.Sprintf(`"max_body_bytes":%d`, tc.limit))
			}
			if !ok {
				t.Errorf("limit %d, %d bytes (chunked %v): %d %.200s, want %d", tc.limit, c.size, c.chunked, resp.StatusCode, got, c.want)
			}
		}
		if resp, body := testenv.Call(t, "POST", proxy+"/upload", "small"); resp.StatusCode != 200 {
			t.Errorf("limit %d: a small body after the oversized ones: %d %s, want 200 (breaker closed)", tc.limit, resp.StatusCode, body)
		}
	}
}

// TestMaxBodyBytesConfig: 0 means the default (10 MiB), a negative value is
// refused naming the field.
func TestMaxBodyBytesConfig(t *testing.T) {
	c, err := config.Parse([]byte(minimalTiers+"max_body_bytes: 0\n"), nil)
	if err != nil || c.MaxBodyBytes != 10<<20 {
		t.Fatalf("max_body_bytes 0: %d, %v; want the default 10485760", c.MaxBodyBytes, err)
	}
	if _, err := config.Parse([]byte(minimalTiers+"max_body_bytes: -1\n"), nil); err == nil || !strings.Contains(err.Error(), "max_body_bytes") {
		t.Fatalf("max_body_bytes -1: %v, want an error naming max_body_bytes", err)
	}
}

// TestAdmittedLatencyCountsTheGateWait: the in-process latency signal
// (throttled_admitted_request_duration_seconds) counts an admitted
// request's wait for the inner loop's permit, which the upstream's own
// latency does not: the inner loop keeps the upstream's latency near its
// baseline by queueing, so without the wait a service at capacity read as
// idle to the outer loop. With a limit of 1, a request queued behind one
// held upstream for 300 ms waits for it.
func TestAdmittedLatencyCountsTheGateWait(t *testing.T) {
	release, entered := make(chan struct{}), make(chan struct{}, 1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			entered <- struct{}{}
			<-release
		}
	}))
	defer up.Close()
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	defer free()
	cfg := configtest.Serve(t, up.URL, "")
	more, err := config.Parse([]byte("tiers: {free: {rate: 100, period: 1s}}\n"+
		"concurrency: {initial_limit: 1, min_limit: 1, max_limit: 1, target: 10s, max_wait: 5s, top_max_wait: 5s}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Concurrency = more.Concurrency
	addrs := startServe(t, cfg)
	proxy := "http://" + addrs["proxy"]
	var wg sync.WaitGroup
	codes := make([]int, 2)
	send := func(i int, path string) {
		defer wg.Done()
		resp, _ := testenv.Call(t, "GET", proxy+path, "", "X-API-Key", "k")
		codes[i] = resp.StatusCode
	}
	wg.Add(2)
	go send(0, "/hold")
	<-entered
	go send(1, "/fast") // queued at the gate behind /hold
	const held = 300 * time.Millisecond
	time.Sleep(held)
	free()
	wg.Wait()
	if codes[0] != 200 || codes[1] != 200 {
		t.Fatalf("status codes %v, want both 200", codes)
	}
	_, metrics := testenv.Call(t, "GET", "http://"+addrs["admin"]+"/metrics", "")
	for _, name := range []string{"throttled_admitted_request_duration_seconds", "throttled_upstream_request_duration_seconds"} {
		if n := testenv.MetricValue(t, metrics, name+"_count"); n != 2 {
			t.Fatalf("%s_count = %v, want 2", name, n)
		}
	}
	wait := testenv.MetricValue(t, metrics, "throttled_admitted_request_duration_seconds_sum") -
		testenv.MetricValue(t, metrics, "throttled_upstream_request_duration_seconds_sum")
	// The second request reached the gate within a few ms of being sent;
	// half of the hold leaves room for a slow machine.
	if wait < (held / 2).Seconds() {
		t.Fatalf("admitted latency exceeds the upstream's by %.3fs in all, want at least %v (the gate wait)", wait, held/2)
	}
}
