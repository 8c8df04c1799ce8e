package enforce_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/enforce"
)

var (
	legacyHeaders = []string{enforce.HeaderLimit, enforce.HeaderRemaining, enforce.HeaderReset}
	ietfHeaders   = []string{enforce.HeaderPolicy, enforce.HeaderRateLimit}
)

// TestHeaderSets: each rule's header set writes exactly its headers on an
// admitted request and on a refused one, which carries Retry-After
// whatever the set; a rule's set is its own (the other rule, on another
// path, keeps the default).
func TestHeaderSets(t *testing.T) {
	clock := func() time.Time { return time.Unix(1_700_000_000, 0) }
	for _, tc := range []struct {
		set        enforce.HeaderSet
		name       string
		want, none []string
	}{
		{enforce.HeadersBoth, "both", append(legacyHeaders[:3:3], ietfHeaders...), nil},
		{enforce.HeadersIETF, "ietf", ietfHeaders, legacyHeaders},
		{enforce.HeadersLegacy, "legacy", legacyHeaders, ietfHeaders},
		{enforce.HeadersNone, "none", nil, append(legacyHeaders[:3:3], ietfHeaders...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.set.String() != tc.name {
				t.Errorf("String() %q, want %q", tc.set, tc.name)
			}
			p := enforce.Policy{Tiers: testTiers, Rules: []enforce.Rule{
				{Name: "set", Path: "/set", Keys: []string{"header:X-API-Key"}, Limit: 1, Period: time.Minute, Headers: tc.set},
				{Name: "default", Path: "/default", Keys: []string{"header:X-API-Key"}, Limit: 1, Period: time.Minute},
			}}
			e, err := enforce.New(limiter.NewMemory(limiter.WithClock(clock)), p, enforce.Settings{Now: clock})
			if err != nil {
				t.Fatal(err)
			}
			h := e.Middleware(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) }))
			for i, wantCode := range []int{204, 429} {
				w := get(t, h, "/set", "X-API-Key", "k")
				if w.Code != wantCode {
					t.Fatalf("request %d: %d, want %d", i+1, w.Code, wantCode)
				}
				wantPresent(t, w, tc.want, tc.none)
				if ra := w.Header().Get(enforce.HeaderRetryAfter); (wantCode == 429) != (ra != "") {
					t.Errorf("request %d (%d): Retry-After %q", i+1, w.Code, ra)
				}
			}
			w := get(t, h, "/default", "X-API-Key", "k")
			wantPresent(t, w, append(legacyHeaders[:3:3], ietfHeaders...), nil)
		})
	}
}

// TestHeaderSetNoneReportsAShowingRule: as with hide_client_headers, the
// headers report the rule that shows them, though a rule with headers none
// is tighter.
func TestHeaderSetNoneReportsAShowingRule(t *testing.T) {
	clock := func() time.Time { return time.Unix(1_700_000_000, 0) }
	p := enforce.Policy{Tiers: testTiers, Rules: []enforce.Rule{
		{Name: "tight", Path: "/", Keys: []string{"header:X-API-Key"}, Limit: 2, Period: time.Minute, Headers: enforce.HeadersNone},
		{Name: "loose", Path: "/", Keys: []string{"header:X-API-Key"}, Limit: 100, Period: time.Minute, Headers: enforce.HeadersIETF},
	}}
	e, err := enforce.New(limiter.NewMemory(limiter.WithClock(clock)), p, enforce.Settings{Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	w := get(t, e.Middleware(http.NotFoundHandler()), "/", "X-API-Key", "k")
	wantHeaders(t, w, map[string]string{enforce.HeaderPolicy: `"loose";q=100;w=60`, enforce.HeaderLimit: ""})
}

// TestHeaderSetValidated: a header set beyond the known ones is refused,
// naming the field.
func TestHeaderSetValidated(t *testing.T) {
	p := enforce.Policy{Tiers: testTiers, Rules: []enforce.Rule{{Name: "r", Path: "/", Keys: []string{"ip"}, Headers: 9}}}
	if err := p.Validate(); err == nil || !contains(err.Error(), "rules[0] (r): headers 9: unknown") {
		t.Errorf("Validate: %v, want rules[0] (r): headers 9: unknown", err)
	}
	if _, err := enforce.ParseHeaderSet("both,ietf"); err == nil {
		t.Error(`ParseHeaderSet("both,ietf"): no error`)
	}
}

// TestHeaderSetAllocs: every set writes its headers without allocating
// beyond the request's scratch, as TestMiddlewareAllocs for the default.
func TestHeaderSetAllocs(t *testing.T) {
	for _, set := range []enforce.HeaderSet{enforce.HeadersIETF, enforce.HeadersLegacy, enforce.HeadersNone} {
		p := enforce.Policy{Tiers: []enforce.Tier{{Name: "free", Limit: 1e9, Period: time.Second}},
			Rules: []enforce.Rule{{Name: "per-key", Path: "/", Keys: []string{"api_key"}, Headers: set}}}
		e, err := enforce.New(limiter.NewMemory(), p, enforce.Settings{UnassignedKeys: enforce.UnassignedDefaultTier})
		if err != nil {
			t.Fatal(err)
		}
		h := e.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		r := httptest.NewRequest("GET", "/hello", nil)
		r.RemoteAddr = "127.0.0.1:54321"
		r.Header.Set("X-API-Key", "k1")
		w := &discardWriter{h: http.Header{}}
		if n := testing.AllocsPerRun(100, func() { clear(w.h); h.ServeHTTP(w, r) }); n > 1 {
			t.Errorf("%s: %v allocations per request, want ≤ 1", set, n)
		}
	}
}

func wantPresent(t *testing.T, w *httptest.ResponseRecorder, present, absent []string) {
	t.Helper()
	for _, k := range present {
		if w.Header().Get(k) == "" {
			t.Errorf("%d: no %s", w.Code, k)
		}
	}
	for _, k := range absent {
		if v := w.Header().Get(k); v != "" {
			t.Errorf("%d: %s %q, want none", w.Code, k, v)
		}
	}
}

// BenchmarkHeaderSets is BenchmarkMiddlewareHTTP's memory mode with each
// header set: what each set's headers cost a request.
func BenchmarkHeaderSets(b *testing.B) {
	for _, set := range []enforce.HeaderSet{enforce.HeadersBoth, enforce.HeadersIETF, enforce.HeadersLegacy, enforce.HeadersNone} {
		p := enforce.Policy{Tiers: []enforce.Tier{{Name: "free", Limit: 1e9, Period: time.Second, Priority: 1}},
			Rules: []enforce.Rule{{Name: "per-key", Path: "/", Keys: []string{"api_key"}, Headers: set}}}
		e, err := enforce.New(limiter.NewMemory(), p, enforce.Settings{UnassignedKeys: enforce.UnassignedDefaultTier})
		if err != nil {
			b.Fatal(err)
		}
		h := e.Middleware(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
		}))
		req := httptest.NewRequest("GET", "/hello", nil)
		req.RemoteAddr = "127.0.0.1:54321"
		req.Header.Set("X-API-Key", "k1")
		b.Run(set.String(), func(b *testing.B) {
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				h.ServeHTTP(w, req)
			}
		})
	}
}
