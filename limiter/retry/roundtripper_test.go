package retry

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"
)

var retryT0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// fakeTime is a clock whose Sleep records the wait and advances the clock.
type fakeTime struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func (f *fakeTime) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeTime) Sleep(ctx context.Context, d time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sleeps = append(f.sleeps, d)
	f.now = f.now.Add(d)
	return ctx.Err()
}

func (f *fakeTime) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
}

func (f *fakeTime) Sleeps() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.sleeps...)
}

// scripted is a test server answering with the statuses in order (the last
// one repeats), with Retry-After headers from retryAfter, recording bodies.
type scripted struct {
	*httptest.Server
	hits   atomic.Int64
	mu     sync.Mutex
	bodies []string
}

func newScripted(t *testing.T, statuses []int, retryAfter func(hit int) string) *scripted {
	t.Helper()
	s := &scripted{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(s.hits.Add(1)) - 1
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.bodies = append(s.bodies, string(b))
		s.mu.Unlock()
		if ra := retryAfter(n); ra != "" {
			w.Header().Set("Retry-After", ra)
		}
		w.WriteHeader(statuses[min(n, len(statuses)-1)])
		io.WriteString(w, "refused, try later\n")
	}))
	t.Cleanup(s.Close)
	return s
}

func noRetryAfter(int) string { return "" }

func newRetryClient(t *testing.T, s Settings, ft *fakeTime) *http.Client {
	t.Helper()
	if ft != nil {
		s.Now, s.Sleep = ft.Now, ft.Sleep
	}
	rt, err := NewTransport(nil, s)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Transport: rt}
}

func do(t *testing.T, c *http.Client, req *http.Request) int {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func get(t *testing.T, url string) *http.Request {
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func TestRetryAfterSeconds(t *testing.T) {
	srv := newScripted(t, []int{429, 200}, func(n int) string { return map[int]string{0: "1"}[n] })
	ft := &fakeTime{now: retryT0}
	c := newRetryClient(t, Settings{}, ft)
	if code := do(t, c, get(t, srv.URL)); code != 200 {
		t.Fatalf("status %d, want 200", code)
	}
	if srv.hits.Load() != 2 {
		t.Errorf("%d requests, want 2", srv.hits.Load())
	}
	if s := ft.Sleeps(); len(s) != 1 || s[0] != time.Second {
		t.Errorf("sleeps %v, want [1s]", s)
	}
}

func TestRetryAfterDate(t *testing.T) {
	ft := &fakeTime{now: retryT0}
	date := retryT0.Add(3 * time.Second).Format(http.TimeFormat)
	srv := newScripted(t, []int{503, 200}, func(n int) string { return map[int]string{0: date}[n] })
	c := newRetryClient(t, Settings{}, ft)
	if code := do(t, c, get(t, srv.URL)); code != 200 {
		t.Fatalf("status %d, want 200", code)
	}
	if s := ft.Sleeps(); len(s) != 1 || s[0] != 3*time.Second {
		t.Errorf("sleeps %v, want [3s]", s)
	}
}

func TestRetryBackoff(t *testing.T) {
	// 503 without Retry-After: full jitter, wait n uniform in
	// [0, min(MaxDelay, BaseDelay·2^(n-1))]. Rand is pinned to its top.
	srv := newScripted(t, []int{503, 503, 503, 503, 503, 200}, noRetryAfter)
	ft := &fakeTime{now: retryT0}
	c := newRetryClient(t, Settings{MaxAttempts: 6, BaseDelay: time.Second, MaxDelay: 3 * time.Second,
		Rand: func() float64 { return 0.5 }}, ft)
	if code := do(t, c, get(t, srv.URL)); code != 200 {
		t.Fatalf("status %d, want 200", code)
	}
	want := []time.Duration{500 * time.Millisecond, time.Second, 1500 * time.Millisecond,
		1500 * time.Millisecond, 1500 * time.Millisecond}
	if s := ft.Sleeps(); !equalDurations(s, want) {
		t.Errorf("sleeps %v, want %v", s, want)
	}
	// With the real random source every wait lies in [0, cap].
	srv2 := newScripted(t, []int{503}, noRetryAfter)
	ft2 := &fakeTime{now: retryT0}
	c2 := newRetryClient(t, Settings{MaxAttempts: 8, BaseDelay: 10 * time.Millisecond,
		MaxDelay: 50 * time.Millisecond, BudgetMinPerSecond: 100}, ft2)
	for range 10 {
		if code := do(t, c2, get(t, srv2.URL)); code != 503 {
			t.Fatalf("status %d, want 503", code)
		}
	}
	s := ft2.Sleeps()
	if len(s) != 70 {
		t.Fatalf("%d waits, want 70", len(s))
	}
	for i, d := range s {
		if lim := min(50*time.Millisecond, 10*time.Millisecond<<(i%7)); d < 0 || d > lim {
			t.Errorf("wait %d = %v, want within [0, %v]", i, d, lim)
		}
	}
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestRetryMethods(t *testing.T) {
	tests := []struct {
		name     string
		method   string
		header   string
		retryAll bool
		want     int64 // requests seen by the server
	}{
		{"GET", "GET", "", false, 3},
		{"HEAD", "HEAD", "", false, 3},
		{"PUT", "PUT", "", false, 3},
		{"DELETE", "DELETE", "", false, 3},
		{"POST", "POST", "", false, 1},
		{"PATCH", "PATCH", "", false, 1},
		{"POST with Idempotency-Key", "POST", "Idempotency-Key", false, 3},
		{"POST with X-Idempotency-Key", "POST", "X-Idempotency-Key", false, 3},
		{"POST, RetryAll", "POST", "", true, 3},
		{"PATCH, RetryAll", "PATCH", "", true, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newScripted(t, []int{429}, func(int) string { return "1" })
			c := newRetryClient(t, Settings{RetryAll: tt.retryAll}, &fakeTime{now: retryT0})
			req, _ := http.NewRequest(tt.method, srv.URL, strings.NewReader("payload"))
			if tt.header != "" {
				req.Header.Set(tt.header, "k-123")
			}
			if code := do(t, c, req); code != 429 {
				t.Fatalf("status %d, want 429", code)
			}
			if got := srv.hits.Load(); got != tt.want {
				t.Errorf("%d requests, want %d", got, tt.want)
			}
		})
	}
}

func TestRetryBody(t *testing.T) {
	srv := newScripted(t, []int{429, 503, 201}, func(int) string { return "0" })
	c := newRetryClient(t, Settings{}, &fakeTime{now: retryT0})
	payload := bytes.Repeat([]byte("0123456789"), 1000)
	req, _ := http.NewRequest("PUT", srv.URL, bytes.NewReader(payload))
	if code := do(t, c, req); code != 201 {
		t.Fatalf("status %d, want 201", code)
	}
	if len(srv.bodies) != 3 {
		t.Fatalf("%d requests, want 3", len(srv.bodies))
	}
	for i, b := range srv.bodies {
		if b != string(payload) {
			t.Errorf("request %d: body of %d bytes differs from the %d sent", i, len(b), len(payload))
		}
	}
	// A body that cannot be rewound is sent once.
	srv2 := newScripted(t, []int{429, 200}, func(int) string { return "0" })
	req2, _ := http.NewRequest("PUT", srv2.URL, iotest.OneByteReader(strings.NewReader("once")))
	if req2.GetBody != nil {
		t.Fatal("test needs a request without GetBody")
	}
	if code := do(t, c, req2); code != 429 || srv2.hits.Load() != 1 {
		t.Errorf("status %d after %d requests, want 429 after 1", code, srv2.hits.Load())
	}
}

func TestRetryBudget(t *testing.T) {
	// Frozen clock, BudgetRatio 0.5 and a reserve of 1: requests earn half
	// a retry each; the reserve pays for the first retry.
	srv := newScripted(t, []int{429}, func(int) string { return "1" })
	ft := &fakeTime{now: retryT0}
	s := Settings{MaxAttempts: 2, BudgetRatio: 0.5, BudgetMinPerSecond: 0.25,
		Sleep: func(context.Context, time.Duration) error { return nil }, Now: ft.Now}
	rt, err := NewTransport(nil, s)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: rt}
	steps := []struct {
		advance time.Duration
		hits    int64
	}{
		{0, 2},                // earned 0.5 < 1; reserve 1 → 0
		{0, 2},                // earned 1 → 0
		{0, 1},                // earned 0.5, reserve 0: the 429 goes to the caller
		{0, 2},                // earned 1 → 0
		{0, 1},                // earned 0.5
		{2 * time.Second, 1},  // earned 0.5·e^-0.2 + 0.5 = 0.91, reserve 2s × 0.25 = 0.5: no
		{4 * time.Second, 2},  // earned 0.91·e^-0.4 + 0.5 = 1.11 → 0.11
		{60 * time.Second, 2}, // earned ≈ 0.5, reserve refilled to its cap 1 → 0
	}
	for i, st := range steps {
		ft.Advance(st.advance)
		before := srv.hits.Load()
		if code := do(t, c, get(t, srv.URL)); code != 429 {
			t.Fatalf("t%d: status %d, want 429", i, code)
		}
		if got := srv.hits.Load() - before; got != st.hits {
			t.Errorf("t%d: %d requests, want %d", i, got, st.hits)
		}
	}
}

func TestRetryGivesUp(t *testing.T) {
	tests := []struct {
		name       string
		statuses   []int
		retryAfter string
		s          Settings
		want       int // final status
		hits       int64
		sleeps     int
	}{
		{"200 not retried", []int{200}, "", Settings{}, 200, 1, 0},
		{"500 not retried", []int{500}, "1", Settings{}, 500, 1, 0},
		{"502 not retried", []int{502}, "1", Settings{}, 502, 1, 0},
		{"MaxAttempts default", []int{429}, "1", Settings{}, 429, 3, 2},
		{"MaxAttempts 1", []int{429}, "1", Settings{MaxAttempts: 1}, 429, 1, 0},
		{"MaxAttempts 4", []int{503}, "", Settings{MaxAttempts: 4}, 503, 4, 3},
		{"Retry-After above the cap", []int{429, 200}, "31", Settings{}, 429, 1, 0},
		{"Retry-After at the cap", []int{429, 200}, "30", Settings{}, 200, 2, 1},
		{"Retry-After huge", []int{429, 200}, "99999999999999999999", Settings{}, 429, 1, 0},
		{"Retry-After garbage: backoff", []int{429, 200}, "soon", Settings{}, 200, 2, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newScripted(t, tt.statuses, func(int) string { return tt.retryAfter })
			ft := &fakeTime{now: retryT0}
			c := newRetryClient(t, tt.s, ft)
			if code := do(t, c, get(t, srv.URL)); code != tt.want {
				t.Errorf("status %d, want %d", code, tt.want)
			}
			if srv.hits.Load() != tt.hits || len(ft.Sleeps()) != tt.sleeps {
				t.Errorf("%d requests and %d waits, want %d and %d", srv.hits.Load(), len(ft.Sleeps()), tt.hits, tt.sleeps)
			}
		})
	}
}

func TestRetryContextCancel(t *testing.T) {
	reached := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3600")
		w.WriteHeader(429)
		reached <- struct{}{}
	}))
	defer srv.Close()
	// The real sleep, waiting for an hour unless the context ends it.
	c := newRetryClient(t, Settings{MaxRetryAfter: 2 * time.Hour}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
	type result struct {
		resp *http.Response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := c.Do(req)
		done <- result{resp, err}
	}()
	<-reached
	cancel()
	select {
	case r := <-done:
		if !errors.Is(r.err, context.Canceled) || r.resp != nil {
			t.Fatalf("Do = %v, %v; want context.Canceled", r.resp, r.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("RoundTrip still waiting 30s after its context was cancelled")
	}
}

func TestRetryDeadline(t *testing.T) {
	// A wait that would outlast the deadline is not started: the caller
	// gets the refusal and can read its Retry-After.
	srv := newScripted(t, []int{429, 200}, func(int) string { return "10" })
	ft := &fakeTime{now: time.Now()}
	c := newRetryClient(t, Settings{}, ft)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
	if code := do(t, c, req); code != 429 || srv.hits.Load() != 1 || len(ft.Sleeps()) != 0 {
		t.Errorf("status %d after %d requests and %v waits; want 429, 1, none", code, srv.hits.Load(), ft.Sleeps())
	}
}

// closeCounter wraps a transport, counting response bodies closed.
type closeCounter struct {
	next   http.RoundTripper
	closed atomic.Int64
}

type countedBody struct {
	io.ReadCloser
	c *closeCounter
}

func (b countedBody) Close() error { b.c.closed.Add(1); return b.ReadCloser.Close() }

func (c *closeCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(r)
	if err == nil {
		resp.Body = countedBody{resp.Body, c}
	}
	return resp, err
}

func TestRetryClosesDiscarded(t *testing.T) {
	srv := newScripted(t, []int{429, 503, 200}, func(int) string { return "0" })
	cc := &closeCounter{next: http.DefaultTransport}
	ft := &fakeTime{now: retryT0}
	rt, err := NewTransport(cc, Settings{Now: ft.Now, Sleep: ft.Sleep})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := rt.RoundTrip(get(t, srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || cc.closed.Load() != 2 {
		t.Errorf("status %d with %d bodies closed; want 200 with 2", resp.StatusCode, cc.closed.Load())
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "refused, try later\n" || cc.closed.Load() != 3 {
		t.Errorf("returned body %q, %d closed", b, cc.closed.Load())
	}
}

func TestRetrySettings(t *testing.T) {
	tests := []struct {
		s    Settings
		want string
	}{
		{Settings{MaxAttempts: -1}, "MaxAttempts -1"},
		{Settings{BaseDelay: -time.Second}, "BaseDelay"},
		{Settings{BaseDelay: 10 * time.Second}, "MaxDelay 5s must be ≥ BaseDelay (10s)"},
		{Settings{MaxRetryAfter: -1}, "MaxRetryAfter"},
		{Settings{BudgetWindow: -1}, "BudgetWindow"},
		{Settings{BudgetRatio: -0.1}, "BudgetRatio"},
		{Settings{BudgetMinPerSecond: math.Inf(1)}, "BudgetMinPerSecond +Inf"},
		{Settings{BudgetRatio: math.NaN()}, "BudgetRatio NaN"},
	}
	for _, tt := range tests {
		if _, err := NewTransport(nil, tt.s); !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: error %v, want ErrBadConfig naming %q", tt.s, err, tt.want)
		}
	}
	if _, err := NewTransport(nil, Settings{}); err != nil {
		t.Errorf("zero settings: %v", err)
	}
}

func TestRetryAfterParse(t *testing.T) {
	now := retryT0
	tests := []struct {
		v    string
		want time.Duration
		ok   bool
	}{
		{"", 0, false},
		{"0", 0, true},
		{"1", time.Second, true},
		{"120", 2 * time.Minute, true},
		{"-1", 0, false},
		{"+1", 0, false},
		{"1.5", 0, false},
		{"soon", 0, false},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
		{"Sunday, 02-Mar-25 12:00:00 GMT", 24 * time.Hour, true}, // RFC 850, obsolete but allowed
		{"99999999999999999999", time.Duration(1<<63 - 1), true},
	}
	for _, tt := range tests {
		got, ok := parseRetryAfter(tt.v, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseRetryAfter(%q) = %v, %v; want %v, %v", tt.v, got, ok, tt.want, tt.ok)
		}
	}
}

func BenchmarkRetryTransportPassThrough(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	rt, err := NewTransport(nil, Settings{})
	if err != nil {
		b.Fatal(err)
	}
	req, _ := http.NewRequest("GET", srv.URL, nil)
	b.ReportAllocs()
	for b.Loop() {
		resp, err := rt.RoundTrip(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}
