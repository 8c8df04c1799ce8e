package enforce_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/enforce"
)

// limitStore reports limit as every decision's Limit, as a store deciding
// on a share of the quota may.
type limitStore struct {
	limiter.Store
	limit int64
}

func (s limitStore) Decide(ctx context.Context, req limiter.Request) (limiter.Decision, error) {
	d, err := s.Store.Decide(ctx, req)
	d.Limit = s.limit
	return d, err
}

// TestHeadersOfEachLimit: the headers name the limit that was reported:
// a rule's second limit, each tier's quota, and a store's own Limit.
func TestHeadersOfEachLimit(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now }
	p := enforce.Policy{Tiers: testTiers, Rules: []enforce.Rule{
		{Name: "two", Path: "/two", Keys: []string{"header:X-API-Key"}, Limits: []enforce.Limit{
			{Limit: 100, Period: time.Minute}, {Limit: 5, Period: 1500 * time.Millisecond}}},
		{Name: "per-key", Path: "/x", Keys: []string{"header:X-API-Key"}},
	}}
	tiers := assignments{"p1": "premium"}
	for _, tc := range []struct {
		name, path, key string
		store           limiter.Store
		want            map[string]string
	}{
		{"second limit", "/two", "f1", nil, map[string]string{"X-RateLimit-Limit": "5",
			"RateLimit-Policy": `"two";q=5;w=2`, "RateLimit": `"two";r=4;t=1`}},
		{"free tier", "/x", "f1", nil, map[string]string{"X-RateLimit-Limit": "3",
			"RateLimit-Policy": `"per-key";q=3;w=60`, "X-RateLimit-Remaining": "2"}},
		{"premium tier", "/x", "p1", nil, map[string]string{"X-RateLimit-Limit": "5",
			"RateLimit-Policy": `"per-key";q=5;w=60`, "X-RateLimit-Reset": strconv.FormatInt(now.Unix()+12, 10)}},
		{"the store's limit", "/x", "p1", limitStore{limiter.NewMemory(limiter.WithClock(clock)), 7},
			map[string]string{"X-RateLimit-Limit": "7", "RateLimit-Policy": `"per-key";q=7;w=60`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.store
			if s == nil {
				s = limiter.NewMemory(limiter.WithClock(clock))
			}
			e, err := enforce.New(s, p, enforce.Settings{Identifier: apiKeyIdentifier{}, Tiers: tiers, Now: clock})
			if err != nil {
				t.Fatal(err)
			}
			w := get(t, e.Middleware(http.NotFoundHandler()), tc.path, "X-API-Key", tc.key)
			wantHeaders(t, w, tc.want)
		})
	}
}

// TestMiddlewareAllocs: deciding a request and writing its rate-limit
// headers costs the middleware one allocation (the request's scratch: the
// bucket key, the header values and their slices), beyond the headers
// map's own room.
func TestMiddlewareAllocs(t *testing.T) {
	e := benchHTTPEnforcer(t)
	h := e.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	r := httptest.NewRequest("GET", "/hello", nil)
	r.RemoteAddr = "127.0.0.1:54321"
	r.Header.Set("X-API-Key", "k1")
	w := &discardWriter{h: http.Header{}}
	h.ServeHTTP(w, r)
	if w.h.Get(enforce.HeaderRemaining) == "" {
		t.Fatal("no rate-limit headers: the rule did not apply")
	}
	if n := testing.AllocsPerRun(100, func() { clear(w.h); h.ServeHTTP(w, r) }); n > 1 {
		t.Errorf("%v allocations per request, want ≤ 1", n)
	}
}
