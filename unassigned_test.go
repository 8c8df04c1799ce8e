package throttled

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	rlsv3common "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/throttledhq/throttled/config"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter/rls/rlstest"
)

// unassignedConfig has three tiers of distinct quotas, so that a rate-limit
// header, a check's answer, the rate limit service's metadata and the admin
// API each tell which tier a key got.
const unassignedConfig = `listen: 127.0.0.1:0
admin:
  listen: 127.0.0.1:0
  tokens: { write: %s }
rls: { listen: 127.0.0.1:0 }
check: { enabled: true }
tiers:
  premium: { rate: 100, period: 1m, burst: 100, priority: 0 }
  free:    { rate: 10,  period: 1m, burst: 10,  priority: 1 }
  anon:    { rate: 3,   period: 1m, burst: 3,   priority: 2 }
default_tier: free
anonymous_tier: anon
assignments: { k-premium: premium }
identity: { unassigned_keys: %s }
rules:
  - name: per-client
    match: { path: /api }
    key: client
`

// TestUnassignedKeyTierAgrees asks the four ways in which a key's tier is
// told (the middleware, POST /v1/check, the rate limit service and GET
// /v1/keys/{key}) about an assigned and an unassigned key, with each
// identity.unassigned_keys rule: all four name the same tier.
func TestUnassignedKeyTierAgrees(t *testing.T) {
	for _, tc := range []struct{ rule, unassigned string }{
		{"anonymous", "anon"},
		{"default_tier", "free"},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			cfg, err := config.Parse([]byte(fmt.Sprintf(unassignedConfig, testenv.WriteToken, tc.rule)), nil)
			if err != nil {
				t.Fatal(err)
			}
			s := run(t, cfg)
			for key, want := range map[string]string{"k-premium": "premium", "k-nobody": tc.unassigned} {
				told := map[string]string{
					"middleware": middlewareTier(t, s, key),
					"check":      checkTier(t, s, key),
					"rls":        rlsTier(t, s, key),
					"admin":      adminTier(t, s, key),
				}
				for front, got := range told {
					if got != want {
						t.Errorf("key %s: %s tells tier %q, want %q (all: %v)", key, front, got, want, told)
					}
				}
			}
		})
	}
}

// tierOfLimit names the tier by its quota, as X-RateLimit-Limit shows it.
var tierOfLimit = map[string]string{"100": "premium", "10": "free", "3": "anon"}

func middlewareTier(t *testing.T, s *Instance, key string) string {
	h := s.Middleware(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) }))
	r := httptest.NewRequest("GET", "/api/x", nil)
	r.Header.Set("X-API-Key", key)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != 204 {
		t.Fatalf("middleware: %d %s", w.Code, w.Body)
	}
	return tierOfLimit[w.Header().Get("X-RateLimit-Limit")]
}

func checkTier(t *testing.T, s *Instance, key string) string {
	w := httptest.NewRecorder()
	s.AdminHandler().ServeHTTP(w, httptest.NewRequest("POST", "/v1/check",
		strings.NewReader(`{"rule":"per-client","key":"`+key+`"}`)))
	var v struct{ Tier string }
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil || w.Code != 200 {
		t.Fatalf("check: %d %s", w.Code, w.Body)
	}
	return v.Tier
}

func rlsTier(t *testing.T, s *Instance, key string) string {
	c, _ := rlstest.Serve(t, s.RLS())
	resp, err := c.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: "throttled",
		Descriptors: []*rlsv3common.RateLimitDescriptor{{Entries: []*rlsv3common.RateLimitDescriptor_Entry{
			{Key: "rule", Value: "per-client"}, {Key: "key", Value: key}}}}})
	if err != nil {
		t.Fatalf("rls: %v", err)
	}
	return resp.GetDynamicMetadata().GetFields()["tier"].GetStringValue()
}

func adminTier(t *testing.T, s *Instance, key string) string {
	w := httptest.NewRecorder()
	r := httptest.NewRequest("GET", "/v1/keys/"+key, nil)
	r.Header.Set("Authorization", "Bearer "+testenv.WriteToken)
	s.AdminHandler().ServeHTTP(w, r)
	var v struct {
		EffectiveTier string `json:"effective_tier"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil || w.Code != 200 {
		t.Fatalf("admin: %d %s", w.Code, w.Body)
	}
	return v.EffectiveTier
}
