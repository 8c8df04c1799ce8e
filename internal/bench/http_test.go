package bench

import (
	"context"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter/enforce"
	"github.com/throttledhq/throttled/limiter/redisstore"
)

// A round measures every mode, none first, with its figures: requests/s,
// none's ratio 1, half load, latency quantiles in order, the process's CPU
// per request and, for redis, the Redis server's.
func TestRound(t *testing.T) {
	r := testenv.StartRedis(t)
	ms, needsRedis, err := ParseModes("memory,redis,lease")
	if err != nil || !needsRedis {
		t.Fatalf("ParseModes: %v, %v, needs Redis %v", ms, err, needsRedis)
	}
	res, err := Round(HTTPSettings{Modes: ms, Redis: r.Client(), Conns: 4, Keys: 1000, Duration: 150 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var modes []string
	for i, res := range res {
		if res.RequestsPerSec <= 0 || res.Errors != 0 || res.HalfLoadRPS <= 0 || res.P99Micros < res.P50Micros ||
			i == 0 && res.Ratio != 1 || res.CPUMicros <= 0 || res.Mode == "redis" && res.RedisCPUMicros <= 0 {
			t.Fatalf("%+v", res)
		}
		modes = append(modes, res.Mode)
	}
	if got := strings.Join(modes, ","); got != "none,memory,redis,lease" {
		t.Fatalf("modes %s", got)
	}
}

// ParseModes puts none first once, says which lists need Redis, and
// refuses an unknown mode by name, with the modes there are.
func TestParseModes(t *testing.T) {
	for list, want := range map[string]string{"none": "none", "memory,wait": "none,memory,wait", "none,xrate": "none,xrate"} {
		ms, needsRedis, err := ParseModes(list)
		if err != nil || strings.Join(ms, ",") != want || needsRedis {
			t.Errorf("ParseModes(%q) = %v, %v, %v; want %s without Redis", list, ms, needsRedis, err, want)
		}
	}
	if _, needsRedis, err := ParseModes("naive-redis"); err != nil || !needsRedis {
		t.Errorf("naive-redis: needs Redis %v, %v", needsRedis, err)
	}
	_, _, err := ParseModes("none,bogus")
	if err == nil || !strings.Contains(err.Error(), `"bogus"`) || !strings.Contains(err.Error(), "naive-redis") {
		t.Fatalf("err = %v, want the mode named and the modes listed", err)
	}
}

// Every limiting mode of bench http decides each request: the response
// carries the rule's rate-limit headers, and with Redis the store ran the
// script. Before the fix the API keys were anonymous (unassigned), the
// rule keyed by api_key skipped them, and the bench measured no limiting.
func TestBenchHTTPHandlersDecide(t *testing.T) {
	r := testenv.StartRedis(t)
	rdb := r.Client()
	for _, m := range []string{"memory", "redis", "lease"} {
		h, err := Handler(m, rdb, redisstore.Settings{})
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest("GET", "/hello", nil)
		req.Header.Set("X-API-Key", "k1")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != 200 || w.Header().Get(enforce.HeaderLimit) == "" {
			t.Errorf("%s: %d, headers %v: want 200 with the rule's rate-limit headers", m, w.Code, w.Header())
		}
	}
	if n, err := rdb.DBSize(context.Background()).Result(); err != nil || n == 0 {
		t.Errorf("redis holds %d keys (%v) after the redis and lease modes decided: want their buckets", n, err)
	}
}

// Mode memory-noheaders decides (with a quota of one per key, a key's
// second request is refused) and sends none of the rate-limit headers.
func TestBenchHTTPNoHeaders(t *testing.T) {
	h, err := limitedHandler(memoryNoHeaders, nil, redisstore.Settings{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for range 2 {
		req := httptest.NewRequest("GET", "/hello", nil)
		req.Header.Set("X-API-Key", "k1")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		got = append(got, w.Code)
		for k := range w.Header() {
			if strings.Contains(strings.ToLower(k), "ratelimit") {
				t.Errorf("header %s sent: want no rate-limit headers", k)
			}
		}
	}
	if want := []int{200, 429}; !slices.Equal(got, want) {
		t.Errorf("k1 twice answered %v, want %v", got, want)
	}
}

// Each peer of bench http limits per API key: with a quota of one request
// (rate 1/s, burst 1) a key's second request at once is refused with 429,
// while another key is still served.
func TestBenchHTTPPeersDecide(t *testing.T) {
	r := testenv.StartRedis(t)
	rdb := r.Client()
	for _, m := range []string{peerXRate, peerEcho, peerNaiveRedis} {
		h, ok := peerHandler(m, rdb, 1, 1)
		if !ok {
			t.Fatalf("%s: no peer", m)
		}
		var got []int
		for _, key := range []string{"k1", "k1", "k2"} {
			req := httptest.NewRequest("GET", "/hello", nil)
			req.Header.Set("X-API-Key", key)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			got = append(got, w.Code)
		}
		if want := []int{200, 429, 200}; !slices.Equal(got, want) {
			t.Errorf("%s: k1, k1, k2 answered %v, want %v", m, got, want)
		}
	}
	if n, err := rdb.Exists(context.Background(), Prefix+"naive:k1", Prefix+"naive:k2").Result(); err != nil || n != 2 {
		t.Errorf("naive-redis left %d of its 2 buckets in redis (%v)", n, err)
	}
	if _, ok := peerHandler("nginx", rdb, 1, 1); ok {
		t.Error("peerHandler made a peer of an unknown mode")
	}
}

// Mode wait answers every request with the hello world only after another
// goroutine answered it: 1 request alone, then 32 at once, each handed off
// and answered once.
func TestBenchHTTPWaitControl(t *testing.T) {
	h, err := Handler(modeWait, nil, redisstore.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	w, ok := h.(*waiter)
	if !ok {
		t.Fatalf("mode wait serves %T, want *waiter", h)
	}
	serve := func() (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/hello", nil))
		return rec.Code, rec.Body.String()
	}
	if code, body := serve(); code != 200 || body != "Hello, World!" || w.answered.Load() != 1 {
		t.Fatalf("one request: %d %q, %d answered; want 200 Hello, World!, 1", code, body, w.answered.Load())
	}
	var wg sync.WaitGroup
	var bad atomic.Int64
	for range 32 {
		wg.Go(func() {
			if code, body := serve(); code != 200 || body != "Hello, World!" {
				bad.Add(1)
			}
		})
	}
	wg.Wait()
	if n := w.answered.Load(); n != 33 || bad.Load() != 0 {
		t.Errorf("after 32 more at once: %d answered, %d bad answers; want 33 and 0", n, bad.Load())
	}
}

// Each memory mode of a header set decides (a key's second request is
// refused) and sends exactly the rate-limit headers of its set.
func TestBenchHTTPHeaderSets(t *testing.T) {
	for m, want := range map[string][]string{
		"memory":        {"Ratelimit", "Ratelimit-Policy", "X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset"},
		"memory-ietf":   {"Ratelimit", "Ratelimit-Policy"},
		"memory-legacy": {"X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset"},
		"memory-none":   nil,
	} {
		h, err := limitedHandler(m, nil, redisstore.Settings{}, 1)
		if err != nil {
			t.Fatal(err)
		}
		for i, code := range []int{200, 429} {
			req := httptest.NewRequest("GET", "/hello", nil)
			req.Header.Set("X-API-Key", "k1")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			var got []string
			for k := range w.Header() {
				if strings.Contains(strings.ToLower(k), "ratelimit") {
					got = append(got, k)
				}
			}
			slices.Sort(got)
			if w.Code != code || !slices.Equal(got, want) {
				t.Errorf("%s, request %d: %d with %v, want %d with %v", m, i+1, w.Code, got, code, want)
			}
		}
	}
}
