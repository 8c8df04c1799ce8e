package enforce_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/enforce"
)

// TestShadowRulesStayOutOfClientHeaders: a shadow rule is enforced by
// nobody, so its limit must not shape clients: the rate-limit headers come
// from the enforced rule, or are absent when only shadow rules applied,
// whichever rule is tighter; a shadow rule's would-be refusal passes
// without headers of its own.
func TestShadowRulesStayOutOfClientHeaders(t *testing.T) {
	clock := func() time.Time { return time.Unix(1_700_000_000, 0) }
	p := enforce.Policy{Tiers: []enforce.Tier{{Name: "free", Limit: 100, Period: time.Minute, Burst: 100}},
		Rules: []enforce.Rule{
			{Name: "enforced", Path: "/both", Keys: []string{"header:X-API-Key"}},
			{Name: "trial", Path: "/both", Keys: []string{"header:X-API-Key"}, Mode: enforce.ModeShadow, Limit: 2, Period: time.Minute},
			{Name: "trial-only", Path: "/shadow", Keys: []string{"header:X-API-Key"}, Mode: enforce.ModeShadow, Limit: 2, Period: time.Minute},
		}}
	e, err := enforce.New(limiter.NewMemory(limiter.WithClock(clock)), p, enforce.Settings{Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	h := e.Middleware(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) }))
	for i := range 4 { // the shadow rules' 2 pass, then they would refuse
		for path, want := range map[string]string{"/both": "100", "/shadow": ""} {
			r := httptest.NewRequest("GET", path, nil)
			r.Header.Set("X-API-Key", "k")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			got := w.Header()
			if w.Code != 204 || got.Get(enforce.HeaderLimit) != want || got.Get(enforce.HeaderRetryAfter) != "" {
				t.Errorf("request %d to %s: %d, %s %q, Retry-After %q; want 204 and the limit %q", i+1, path, w.Code,
					enforce.HeaderLimit, got.Get(enforce.HeaderLimit), got.Get(enforce.HeaderRetryAfter), want)
			}
			if pol := got.Get(enforce.HeaderPolicy); want == "" && pol != "" || want != "" && pol != `"enforced";q=100;w=60` {
				t.Errorf("request %d to %s: %s %q, want the enforced rule's only", i+1, path, enforce.HeaderPolicy, pol)
			}
		}
	}
}
