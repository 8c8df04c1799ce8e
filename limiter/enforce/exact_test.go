package enforce_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/enforce"
)

// keyLog is a store that notes the bucket key of every decision.
type keyLog struct {
	limiter.Store
	mu   sync.Mutex
	keys []string
}

func (s *keyLog) Decide(ctx context.Context, req limiter.Request) (limiter.Decision, error) {
	s.mu.Lock()
	k := req.Key
	if req.Refund {
		k = "refund " + k
	}
	s.keys = append(s.keys, k)
	s.mu.Unlock()
	return s.Store.Decide(ctx, req)
}

func (s *keyLog) take() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := strings.Join(s.keys, " ")
	s.keys = s.keys[:0]
	return k
}

// longKey is an API key whose bucket key is longer than the store may
// hold (it is replaced by its SHA-256).
var longKey = strings.Repeat("k", 120)

// longRule is a rule name as long as names go.
var longRule = strings.Repeat("r", 64)

// exactSteps are requests in turn and, for each, what the store saw and
// the whole response head: status, then every header in name order with
// all its values.
var exactSteps = []struct{ path, key, want string }{
	{"/a", "f1", `keys per-key|free|2:f1; 200; Ratelimit: "per-key";r=2;t=20; Ratelimit-Policy: "per-key";q=3;w=60; ` +
		`X-Ratelimit-Limit: 3; X-Ratelimit-Remaining: 2; X-Ratelimit-Reset: 1700000020`},
	{"/a", "f1", `keys per-key|free|2:f1; 200; Ratelimit: "per-key";r=1;t=40; Ratelimit-Policy: "per-key";q=3;w=60; ` +
		`X-Ratelimit-Limit: 3; X-Ratelimit-Remaining: 1; X-Ratelimit-Reset: 1700000040`},
	{"/a", "f1", `keys per-key|free|2:f1; 200; Ratelimit: "per-key";r=0;t=60; Ratelimit-Policy: "per-key";q=3;w=60; ` +
		`X-Ratelimit-Limit: 3; X-Ratelimit-Remaining: 0; X-Ratelimit-Reset: 1700000060`},
	{"/a", "f1", `keys per-key|free|2:f1; 429; Ratelimit: "per-key";r=0;t=60; Ratelimit-Policy: "per-key";q=3;w=60; ` +
		`Retry-After: 20; X-Ratelimit-Limit: 3; X-Ratelimit-Remaining: 0; X-Ratelimit-Reset: 1700000060`},
	{"/two", "f1", `keys two|2:f1 two|2:f1#2; 200; Ratelimit: "two";r=4;t=1; Ratelimit-Policy: "two";q=5;w=2; ` +
		`X-Ratelimit-Limit: 5; X-Ratelimit-Remaining: 4; X-Ratelimit-Reset: 1700000001`},
	{"/h", "f1", `keys hidden|2:f1; 200`},
	{"/h", "f1", `keys hidden|2:f1; 429; Retry-After: 30`},
	{"/long", longKey, `keys ` + longRule + `|sha256:ee7525c6c276101e78cea6a3fefba2bafdf11fad7ff49312d730204ed21f6428; 200; ` +
		`Ratelimit: "` + longRule + `";r=1;t=5; Ratelimit-Policy: "` + longRule + `";q=2;w=10; ` +
		`X-Ratelimit-Limit: 2; X-Ratelimit-Remaining: 1; X-Ratelimit-Reset: 1700000005`},
	{"/long", "f1", `keys ` + longRule + `|2:f1; 200; ` +
		`Ratelimit: "` + longRule + `";r=1;t=5; Ratelimit-Policy: "` + longRule + `";q=2;w=10; ` +
		`X-Ratelimit-Limit: 2; X-Ratelimit-Remaining: 1; X-Ratelimit-Reset: 1700000005`},
	{"/a", "p1", `keys per-key|premium|2:p1; 200; Ratelimit: "per-key";r=0;t=12; Ratelimit-Policy: "per-key";q=5;w=60; ` +
		`X-Ratelimit-Limit: 5; X-Ratelimit-Remaining: 0; X-Ratelimit-Reset: 1700000012`},
	{"/a", "p1", `keys per-key|premium|2:p1; 503; Ratelimit: "per-key";r=0;t=24; Ratelimit-Policy: "per-key";q=5;w=60; ` +
		`Retry-After: 60; X-Ratelimit-Limit: 5; X-Ratelimit-Remaining: 0; X-Ratelimit-Reset: 1700000024`},
	{"/both", "f2", `keys both-key|free|2:f2 both-hidden|2:f2; 200; Ratelimit: "both-key";r=2;t=20; Ratelimit-Policy: "both-key";q=3;w=60; ` +
		`X-Ratelimit-Limit: 3; X-Ratelimit-Remaining: 2; X-Ratelimit-Reset: 1700000020`},
	{"/both", "f2", `keys both-key|free|2:f2 both-hidden|2:f2 refund both-key|free|2:f2; 429; Retry-After: 30`},
	{"/none", "f1", `keys ; 200`},
	{"/a", "", `keys ; 200`},
}

// exactEnforcer is the enforcer exactSteps run against, at a fixed
// instant, with no jitter; premium is shed to a fifth.
func exactEnforcer(t *testing.T) (*enforce.Enforcer, *keyLog) {
	t.Helper()
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now }
	p := enforce.Policy{Tiers: slices.Clone(testTiers), Rules: []enforce.Rule{
		{Name: "per-key", Path: "/a", Keys: []string{"header:X-API-Key"}},
		{Name: "both-key", Path: "/both", Keys: []string{"header:X-API-Key"}},
		{Name: "two", Path: "/two", Keys: []string{"header:X-API-Key"}, Limits: []enforce.Limit{
			{Limit: 100, Period: time.Minute}, {Limit: 5, Period: 1500 * time.Millisecond}}},
		{Name: "hidden", Path: "/h", Keys: []string{"header:X-API-Key"}, Limit: 1, Period: 30 * time.Second, HideHeaders: true},
		{Name: "both-hidden", Path: "/both", Keys: []string{"header:X-API-Key"}, Limit: 1, Period: 30 * time.Second, HideHeaders: true},
		{Name: longRule, Path: "/long", Keys: []string{"header:X-API-Key"}, Limit: 2, Period: 10 * time.Second},
	}}
	store := &keyLog{Store: limiter.NewMemory(limiter.WithClock(clock))}
	e, err := enforce.New(store, p, enforce.Settings{Identifier: apiKeyIdentifier{}, Tiers: assignments{"p1": "premium"},
		Multipliers: multipliers{"premium": 0.2}, Now: clock, Jitter: func(int64) int64 { return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	return e, store
}

// head is a response head in exactSteps' form.
func head(status int, h http.Header) string {
	var b strings.Builder
	fmt.Fprint(&b, status)
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range h {
			if k != "Content-Type" && !yield(k) {
				return
			}
		}
	}) {
		fmt.Fprintf(&b, "; %s: %s", k, strings.Join(h[k], ", "))
	}
	return b.String()
}

// TestHeadersExactly: the middleware, and Check then WriteHeaders (as the
// proxy writes them, once or twice), give every request exactly the bucket
// keys, status and headers it always had.
func TestHeadersExactly(t *testing.T) {
	for _, path := range []string{"middleware", "check", "check twice"} {
		t.Run(path, func(t *testing.T) {
			e, store := exactEnforcer(t)
			mw := e.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
			for i, st := range exactSteps {
				r := httptest.NewRequest(http.MethodGet, st.path, nil)
				if st.key != "" {
					r.Header.Set("X-API-Key", st.key)
				}
				var got string
				switch path {
				case "middleware":
					w := httptest.NewRecorder()
					mw.ServeHTTP(w, r)
					got = head(w.Code, w.Header())
				default:
					res := e.Check(r.Context(), r)
					status := http.StatusOK
					if !res.Allowed {
						status = res.Status
					}
					h := http.Header{}
					res.WriteHeaders(h)
					got = head(status, h)
					if path == "check twice" {
						again := http.Header{}
						res.WriteHeaders(again)
						for _, v := range h {
							v[0] = "changed" // the first map's values are its own
						}
						got = head(status, again)
					}
				}
				if got = "keys " + store.take() + "; " + got; got != st.want {
					t.Errorf("step %d (%s %s):\n got %s\nwant %s", i, st.path, st.key, got, st.want)
				}
			}
		})
	}
}

// TestCheckThenHeadersAllocs: Check then WriteHeaders, as the proxy calls
// them, cost the one allocation the middleware costs; a second
// WriteHeaders makes its own scratch, one more.
func TestCheckThenHeadersAllocs(t *testing.T) {
	e := benchHTTPEnforcer(t)
	r := httptest.NewRequest("GET", "/hello", nil)
	r.RemoteAddr = "127.0.0.1:54321"
	r.Header.Set("X-API-Key", "k1")
	h := http.Header{}
	for _, c := range []struct {
		writes int
		want   float64
	}{{1, 1}, {2, 2}} {
		n := testing.AllocsPerRun(100, func() {
			res := e.Check(r.Context(), r)
			for range c.writes {
				clear(h)
				res.WriteHeaders(h)
			}
		})
		if h.Get(enforce.HeaderRemaining) == "" {
			t.Fatal("no rate-limit headers: the rule did not apply")
		}
		if n != c.want {
			t.Errorf("Check and %d WriteHeaders: %v allocations, want %v", c.writes, n, c.want)
		}
	}
}

// TestTwoLimitsAllocs: a rule of two limits makes its second bucket key in
// the request's scratch too: one allocation, as for one limit.
func TestTwoLimitsAllocs(t *testing.T) {
	p := enforce.Policy{Tiers: slices.Clone(testTiers), Rules: []enforce.Rule{
		{Name: "two", Path: "/two", Keys: []string{"api_key"}, Limits: []enforce.Limit{
			{Limit: 1000, Period: time.Minute}, {Limit: 500, Period: 1500 * time.Millisecond}}}}}
	e, err := enforce.New(limiter.NewMemory(), p, enforce.Settings{UnassignedKeys: enforce.UnassignedDefaultTier})
	if err != nil {
		t.Fatal(err)
	}
	h := e.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	r := httptest.NewRequest("GET", "/two", nil)
	r.RemoteAddr = "127.0.0.1:54321"
	r.Header.Set("X-API-Key", "f1")
	w := &discardWriter{h: http.Header{}}
	// 100 runs, all admitted: AllocsPerRun counts the process's every
	// allocation, and over 3 runs a few of another goroutine's (a loaded
	// host's timing) read as 2 per request.
	if n := testing.AllocsPerRun(100, func() { clear(w.h); h.ServeHTTP(w, r) }); n != 1 {
		t.Errorf("%v allocations per request, want 1", n)
	}
	if w.h.Get(enforce.HeaderPolicy) != `"two";q=500;w=2` {
		t.Fatalf("headers %v, want the second limit's", w.h)
	}
}
