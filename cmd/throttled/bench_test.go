package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter/enforce"
	"github.com/throttledhq/throttled/limiter/redisstore"
)

func TestBenchJSON(t *testing.T) {
	r := testenv.StartRedis(t)
	for _, args := range [][]string{
		{"decisions", "--store", "memory", "--duration", "200ms", "--concurrency", "4", "--json"},
		{"--store", "redis", "--redis-url", r.URL(), "--algorithm", "gcra", "--duration", "300ms", "--concurrency", "8",
			"--memory-keys", "2000", "--json"},
	} {
		var out bytes.Buffer
		if err := bench(args, &out); err != nil {
			t.Fatal(err)
		}
		var res benchResult
		if err := json.Unmarshal(out.Bytes(), &res); err != nil {
			t.Fatalf("%q: %v", out.String(), err)
		}
		if res.Decisions == 0 || res.Errors != 0 || res.DecisionsPerSec <= 0 || res.P99Micros < res.P50Micros ||
			res.P999Micros < res.P99Micros || res.CPUSeconds <= 0 {
			t.Fatalf("%v: %+v", args, res)
		}
		// A key holds at least its name; the memory store has no figure.
		if redisRun := res.Store == "redis"; redisRun != (res.RedisBytesPerKey > float64(len("throttled-bench:gc:{mem:1}"))) {
			t.Fatalf("%v: redis_bytes_per_key %v", args, res.RedisBytesPerKey)
		}
	}
	if err := bench([]string{"--store", "redis", "--max-batch", "-1"}, &bytes.Buffer{}); err == nil {
		t.Fatal("negative --max-batch accepted")
	}
	if err := bench([]string{"--store", "etcd"}, &bytes.Buffer{}); err == nil {
		t.Fatal("unknown store accepted")
	}
}

func TestBenchHTTPJSON(t *testing.T) {
	r := testenv.StartRedis(t)
	var out bytes.Buffer
	err := bench([]string{"http", "--modes", "none,memory,redis,lease", "--redis-url", r.URL(), "--conns", "4",
		"--duration", "150ms", "--runs", "1", "--json"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(&out)
	var modes []string
	for i := 0; dec.More(); i++ {
		var res httpResult
		if err := dec.Decode(&res); err != nil {
			t.Fatal(err)
		}
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

// Every limiting mode of bench http decides each request: the response
// carries the rule's rate-limit headers, and with Redis the store ran the
// script. Before the fix the API keys were anonymous (unassigned), the
// rule keyed by api_key skipped them, and the bench measured no limiting.
func TestBenchHTTPHandlersDecide(t *testing.T) {
	r := testenv.StartRedis(t)
	rdb := r.Client()
	for _, m := range []string{"memory", "redis", "lease"} {
		h, err := benchHandler(m, rdb, redisstore.Settings{})
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
	if n, err := rdb.Exists(context.Background(), benchPrefix+"naive:k1", benchPrefix+"naive:k2").Result(); err != nil || n != 2 {
		t.Errorf("naive-redis left %d of its 2 buckets in redis (%v)", n, err)
	}
	if _, ok := peerHandler("nginx", rdb, 1, 1); ok {
		t.Error("peerHandler made a peer of an unknown mode")
	}
}

// An unknown bench http mode is refused by name, with the modes there are.
func TestBenchHTTPBadMode(t *testing.T) {
	err := bench([]string{"http", "--modes", "none,bogus"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), `"bogus"`) || !strings.Contains(err.Error(), "naive-redis") {
		t.Fatalf("err = %v, want the mode named and the modes listed", err)
	}
}

// Mode wait answers every request with the hello world only after another
// goroutine answered it: 1 request alone, then 32 at once, each handed off
// and answered once.
func TestBenchHTTPWaitControl(t *testing.T) {
	h, err := benchHandler(modeWait, nil, redisstore.Settings{})
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
