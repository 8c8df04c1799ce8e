package enforce_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/echolimit"
	"github.com/throttledhq/throttled/limiter/enforce"
	"github.com/throttledhq/throttled/limiter/identity"
	"github.com/throttledhq/throttled/limiter/pipeline"
)

// adapters are the two HTTP adapters over one Enforcer: its own net/http
// Middleware, and Echo through the request pipeline (its decision stage only).
var adapters = []struct {
	name string
	wrap func(e *enforce.Enforcer) http.Handler
}{
	{"net/http", func(e *enforce.Enforcer) http.Handler { return e.Middleware(okHandler()) }},
	{"echo", func(e *enforce.Enforcer) http.Handler {
		p, err := pipeline.New(pipeline.Settings{Enforcer: e})
		if err != nil {
			panic(err)
		}
		app := echo.New()
		app.Use(echolimit.Middleware(p))
		app.Any("/*", func(c echo.Context) error { return c.String(http.StatusOK, "ok") })
		return app
	}},
}

func okHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) })
}

// forEachAdapter runs f for each adapter against a store on a real Redis.
func forEachAdapter(t *testing.T, f func(t *testing.T, wrap func(*enforce.Enforcer) http.Handler, store limiter.Store)) {
	r := testenv.StartRedis(t)
	for _, a := range adapters {
		t.Run(a.name, func(t *testing.T) {
			f(t, a.wrap, redisStore(r.Client(), t, nil))
		})
	}
}

// multipliers is a fixed MultiplierSource for tests.
type multipliers map[string]float64

func (m multipliers) Multiplier(tier string) float64 {
	if v, ok := m[tier]; ok {
		return v
	}
	return 1
}

// assignments is a fixed TierLookup for tests.
type assignments map[string]string

func (a assignments) TierOf(k string) (string, bool) { t, ok := a[k]; return t, ok }

var testTiers = []enforce.Tier{
	{Name: "free", Limit: 3, Period: time.Minute, Burst: 3, Priority: 1},
	{Name: "premium", Limit: 5, Period: time.Minute, Burst: 5, Priority: 0},
}

func perKeyPolicy() enforce.Policy {
	return enforce.Policy{Tiers: slices.Clone(testTiers), Rules: []enforce.Rule{
		{Name: "per-key", Path: "/", Keys: []string{"header:X-API-Key"}},
	}}
}

type apiKeyIdentifier struct{}

func (apiKeyIdentifier) Identify(r *http.Request) identity.Client {
	return identity.Client{APIKey: r.Header.Get("X-API-Key"), IP: "192.0.2.1"}
}

func get(t *testing.T, h http.Handler, path string, hdr ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.RemoteAddr = "192.0.2.1:1234"
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

func refusal(t *testing.T, w *httptest.ResponseRecorder) enforce.Refusal {
	t.Helper()
	var r enforce.Refusal
	if err := json.Unmarshal(w.Body.Bytes(), &r); err != nil {
		t.Fatalf("body %q: %v", w.Body.String(), err)
	}
	return r
}

func TestQuotaIs429AndLoadIs503(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, wrap func(*enforce.Enforcer) http.Handler, store limiter.Store) {
		e, err := enforce.New(store, perKeyPolicy(), enforce.Settings{
			Identifier:  apiKeyIdentifier{},
			Tiers:       assignments{"alice": "free", "pat": "premium"},
			Multipliers: multipliers{"free": 0.34}, // free: admission capacity 1 of 3
			Jitter:      func(n int64) int64 { return n - 1 },
		})
		if err != nil {
			t.Fatal(err)
		}
		h := wrap(e)
		if w := get(t, h, "/x", "X-API-Key", "alice"); w.Code != 200 {
			t.Fatalf("alice #1: %d", w.Code)
		}
		w := get(t, h, "/x", "X-API-Key", "alice")
		if w.Code != http.StatusServiceUnavailable {
			t.Fatalf("alice #2 under load: %d, want 503", w.Code)
		}
		body := refusal(t, w)
		want := enforce.Refusal{Error: "service overloaded, retry later", Reason: "shed", Tier: "free", Rule: "per-key",
			RetryAfterSeconds: body.RetryAfterSeconds}
		if body != want {
			t.Fatalf("503 body %+v, want %+v", body, want)
		}
		// Shed retry: admission capacity 3×0.34 = 1.02, 0.02 left after one;
		// 0.98 token at 3/min × 0.34 = 57.6 s → 58 s, + jitter of up to
		// 58/2 = 29 s (the fake jitter takes the most).
		if ra := w.Header().Get("Retry-After"); ra != "87" || body.RetryAfterSeconds != 87 {
			t.Fatalf("503 Retry-After %q / body %d, want 87", ra, body.RetryAfterSeconds)
		}
		// Premium is not under load: its quota of 5 runs out → 429.
		for i := 0; i < 5; i++ {
			if w := get(t, h, "/x", "X-API-Key", "pat"); w.Code != 200 {
				t.Fatalf("pat #%d: %d", i, w.Code)
			}
		}
		w = get(t, h, "/x", "X-API-Key", "pat")
		if w.Code != http.StatusTooManyRequests {
			t.Fatalf("pat #6: %d, want 429", w.Code)
		}
		if b := refusal(t, w); b.Reason != "over_quota" || b.Tier != "premium" || b.RetryAfterSeconds != 12 {
			t.Fatalf("429 body %+v, want over_quota, premium, 12 s (1 token at 5/min)", b)
		}
		if ra := w.Header().Get("Retry-After"); ra != "12" {
			t.Fatalf("429 Retry-After %q, want 12 (no jitter on 429)", ra)
		}
	})
}

func TestRateLimitHeaders(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, wrap func(*enforce.Enforcer) http.Handler, store limiter.Store) {
		now := time.Unix(1_700_000_000, 0)
		p := perKeyPolicy()
		p.Rules = append(p.Rules, enforce.Rule{Name: "search", Path: "/search", Keys: []string{"header:X-API-Key"},
			Limit: 2, Period: 10 * time.Second})
		e, err := enforce.New(store, p, enforce.Settings{
			Identifier: apiKeyIdentifier{}, Now: func() time.Time { return now },
		})
		if err != nil {
			t.Fatal(err)
		}
		h := wrap(e)
		// /x: only per-key (free by default: 3/min): 2 left, full again in 20 s.
		w := get(t, h, "/x", "X-API-Key", "k1")
		wantHeaders(t, w, map[string]string{
			"X-RateLimit-Limit": "3", "X-RateLimit-Remaining": "2", "X-RateLimit-Reset": strconv.FormatInt(now.Unix()+20, 10),
			"RateLimit-Policy": `"per-key";q=3;w=60`, "RateLimit": `"per-key";r=2;t=20`, "Retry-After": "",
		})
		// /search: per-key has 1 left, search (2 per 10 s) has 1 left and resets in 5 s.
		// Equal remaining: the longer reset (per-key, 40 s) is the more restrictive.
		w = get(t, h, "/search", "X-API-Key", "k1")
		wantHeaders(t, w, map[string]string{"X-RateLimit-Remaining": "1", "RateLimit-Policy": `"per-key";q=3;w=60`})
		// Again: search is at 0, per-key at 0 → per-key (longer reset)...
		w = get(t, h, "/search", "X-API-Key", "k1")
		wantHeaders(t, w, map[string]string{"X-RateLimit-Remaining": "0", "RateLimit": `"per-key";r=0;t=60`})
		// ...and then per-key refuses: its headers, with Retry-After.
		w = get(t, h, "/search", "X-API-Key", "k1")
		if w.Code != 429 {
			t.Fatalf("4th: %d, want 429", w.Code)
		}
		wantHeaders(t, w, map[string]string{"RateLimit-Policy": `"per-key";q=3;w=60`, "Retry-After": "20"})
		// A route no rule matches carries no rate-limit headers.
		e2, _ := enforce.New(store, enforce.Policy{Tiers: testTiers, Rules: []enforce.Rule{
			{Name: "api", Path: "/api", Keys: []string{"ip"}}}}, enforce.Settings{})
		w = get(t, wrap(e2), "/other")
		wantHeaders(t, w, map[string]string{"X-RateLimit-Limit": "", "RateLimit": ""})
	})
}

func wantHeaders(t *testing.T, w *httptest.ResponseRecorder, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got := w.Header().Get(k); got != v {
			t.Errorf("%s: %q, want %q (status %d)", k, got, v, w.Code)
		}
	}
}

// TestLayeredRulesDoNotLeak: a request refused by a later rule gives back
// what the earlier rules took.
func TestLayeredRulesDoNotLeak(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, wrap func(*enforce.Enforcer) http.Handler, store limiter.Store) {
		p := enforce.Policy{Tiers: testTiers, Rules: []enforce.Rule{
			{Name: "per-ip", Path: "/", Keys: []string{"ip"}, Limit: 5, Period: time.Minute},
			{Name: "expensive", Path: "/export", Keys: []string{"ip"}, Limit: 1, Period: time.Minute},
		}}
		e, err := enforce.New(store, p, enforce.Settings{})
		if err != nil {
			t.Fatal(err)
		}
		h := wrap(e)
		if w := get(t, h, "/export"); w.Code != 200 {
			t.Fatalf("first export: %d", w.Code)
		}
		for i := 0; i < 10; i++ { // refused by "expensive": must not spend per-ip
			if w := get(t, h, "/export"); w.Code != 429 || refusal(t, w).Rule != "expensive" {
				t.Fatalf("export #%d: %d %s", i+2, w.Code, w.Body.String())
			}
		}
		// per-ip spent 1 of 5: four more pass on another path.
		for i := 0; i < 4; i++ {
			if w := get(t, h, "/home"); w.Code != 200 {
				t.Fatalf("home #%d: %d: the refused exports leaked per-ip tokens", i+1, w.Code)
			}
		}
		if w := get(t, h, "/home"); w.Code != 429 || refusal(t, w).Rule != "per-ip" {
			t.Fatalf("home #5: %d %s, want 429 by per-ip", w.Code, w.Body.String())
		}
	})
}

func TestPolicyValidation(t *testing.T) {
	good := perKeyPolicy()
	cases := []struct {
		name string
		edit func(p *enforce.Policy)
		want string
	}{
		{"no tiers", func(p *enforce.Policy) { p.Tiers = nil }, "tiers"},
		{"bad tier name", func(p *enforce.Policy) { p.Tiers[0].Name = "a b" }, "tiers[0].name"},
		{"dup tier", func(p *enforce.Policy) { p.Tiers[1].Name = "free" }, "duplicate"},
		{"zero rate", func(p *enforce.Policy) { p.Tiers[0].Limit = 0 }, "limit"},
		{"unknown default", func(p *enforce.Policy) { p.DefaultTier = "gold" }, "default_tier"},
		{"path", func(p *enforce.Policy) { p.Rules[0].Path = "x" }, "match.path"},
		{"no key", func(p *enforce.Policy) { p.Rules[0].Keys = nil }, "key"},
		{"bad key", func(p *enforce.Policy) { p.Rules[0].Keys = []string{"cookie"} }, "key source"},
		{"delay without wait", func(p *enforce.Policy) { p.Rules[0].Mode = enforce.ModeDelay }, "max_wait"},
		{"method", func(p *enforce.Policy) { p.Rules[0].Methods = []string{"get"} }, "methods"},
		{"cost over burst", func(p *enforce.Policy) { p.Rules[0].Cost = 4 }, "cost 4"},
	}
	for _, c := range cases {
		p := perKeyPolicy()
		c.edit(&p)
		_, err := enforce.New(limiter.NewMemory(), p, enforce.Settings{})
		if err == nil || !contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one naming %q", c.name, err, c.want)
		}
	}
	// A bad SetPolicy keeps the current policy.
	e, err := enforce.New(limiter.NewMemory(), good, enforce.Settings{Identifier: apiKeyIdentifier{}})
	if err != nil {
		t.Fatal(err)
	}
	bad := perKeyPolicy()
	bad.Tiers = nil
	if err := e.SetPolicy(bad); err == nil {
		t.Fatal("SetPolicy accepted a policy without tiers")
	}
	req := httptest.NewRequest("GET", "/", nil)
	req.Header.Set("X-API-Key", "k")
	if res := e.Check(context.Background(), req); !res.Limited || res.Rule != "per-key" {
		t.Fatalf("after a refused SetPolicy: %+v, want the old policy in force", res)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

type refusalCounter map[string]uint64

func (r refusalCounter) Add(k string, n uint64) { r[k] += n }

func TestRefusedClientsCountedWithoutSecrets(t *testing.T) {
	counts := refusalCounter{}
	e, err := enforce.New(limiter.NewMemory(), perKeyPolicy(), enforce.Settings{
		Identifier: apiKeyIdentifier{}, Tiers: assignments{"sk_live_secret": "free"}, Refusals: counts})
	if err != nil {
		t.Fatal(err)
	}
	h := e.Middleware(okHandler())
	for i := 0; i < 5; i++ {
		get(t, h, "/", "X-API-Key", "sk_live_secret")
	}
	if len(counts) != 1 {
		t.Fatalf("counts %v, want one client", counts)
	}
	for k, n := range counts {
		if strings.Contains(k, "secret") || !strings.HasPrefix(k, "key:") || n != 2 {
			t.Fatalf("counted %q ×%d: want a key: fingerprint ×2, never the key itself", k, n)
		}
	}
}

func TestInspectReadsWithoutSpending(t *testing.T) {
	e, err := enforce.New(limiter.NewMemory(), perKeyPolicy(), enforce.Settings{
		Identifier: apiKeyIdentifier{}, Tiers: assignments{"pat": "premium"}})
	if err != nil {
		t.Fatal(err)
	}
	h := e.Middleware(okHandler())
	get(t, h, "/", "X-API-Key", "pat")
	get(t, h, "/", "X-API-Key", "pat")
	for i := 0; i < 2; i++ {
		st, err := e.Inspect(context.Background(), "pat")
		if err != nil || len(st) != 1 || st[0].Rule != "per-key" || st[0].Tier != "premium" || st[0].Limit != 5 || st[0].Remaining != 3 {
			t.Fatalf("inspect %d: %+v %v, want per-key premium 3 of 5 left", i, st, err)
		}
	}
}

// TestTierQuotaBucketsAreSeparatePerTier: behind one IP, a free client that
// spends its per-IP quota leaves a premium client's per-IP quota whole.
func TestTierQuotaBucketsAreSeparatePerTier(t *testing.T) {
	p := enforce.Policy{Tiers: testTiers, Rules: []enforce.Rule{{Name: "per-ip", Path: "/", Keys: []string{"ip"}}}}
	e, err := enforce.New(limiter.NewMemory(), p, enforce.Settings{
		Identifier: apiKeyIdentifier{}, Tiers: assignments{"pat": "premium", "fred": "free"}})
	if err != nil {
		t.Fatal(err)
	}
	h := e.Middleware(okHandler())
	for i := 0; i < 4; i++ { // free: 3 per minute
		get(t, h, "/", "X-API-Key", "fred")
	}
	w := get(t, h, "/", "X-API-Key", "pat")
	if w.Code != 200 || w.Header().Get("X-RateLimit-Remaining") != "4" {
		t.Fatalf("premium behind the same IP: %d remaining %s, want 200 with 4 of 5 left",
			w.Code, w.Header().Get("X-RateLimit-Remaining"))
	}
}
