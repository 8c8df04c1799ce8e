package enforce_test

import (
	"context"
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/enforce"
	"github.com/throttledhq/throttled/limiter/identity"
)

// keyedPolicy spends the tier quota per client and per API key: free
// (the anonymous and default tier) allows 3 a minute, premium 5.
func keyedPolicy() enforce.Policy {
	return enforce.Policy{Tiers: testTiers, DefaultTier: "free", AnonymousTier: "free", Rules: []enforce.Rule{
		{Name: "per-client", Path: "/", Keys: []string{"client"}},
		{Name: "per-key", Path: "/", Keys: []string{"api_key"}},
	}}
}

// admittedWithRandomKeys sends n requests from one IP, each with a fresh
// random API key, and counts the admitted ones.
func admittedWithRandomKeys(t *testing.T, e *enforce.Enforcer, n int) int {
	t.Helper()
	ok := 0
	for i := 0; i < n; i++ {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.RemoteAddr = "203.0.113.7:5000"
		req.Header.Set("X-API-Key", rand.Text())
		if e.Check(context.Background(), req).Allowed {
			ok++
		}
	}
	return ok
}

func newIdentityEnforcer(t *testing.T, p enforce.Policy, is identity.Settings, s enforce.Settings) *enforce.Enforcer {
	t.Helper()
	id, err := identity.New(is)
	if err != nil {
		t.Fatal(err)
	}
	s.Identifier = id
	e, err := enforce.New(limiter.NewMemory(), p, s)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestUnassignedKeysAreAnonymous: 1,000 requests with 1,000 random keys from
// one IP are limited as one anonymous client (3 a minute), while an
// assigned key keeps its own bucket and tier.
func TestUnassignedKeysAreAnonymous(t *testing.T) {
	e := newIdentityEnforcer(t, keyedPolicy(), identity.Settings{}, enforce.Settings{Tiers: assignments{"pat": "premium"}})
	if got := admittedWithRandomKeys(t, e, 1000); got != 3 {
		t.Fatalf("1,000 random keys from one IP: %d admitted, want 3 (one anonymous client of tier free)", got)
	}
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.RemoteAddr = "203.0.113.7:5000"
	req.Header.Set("X-API-Key", "pat")
	if res := e.Check(context.Background(), req); !res.Allowed || res.Tier != "premium" || res.Decision.Remaining != 4 {
		t.Fatalf("assigned key pat behind the same IP: %+v, want allowed, premium, 4 of 5 left", res)
	}
}

// TestUnassignedKeysDefaultTier: with UnassignedDefaultTier (keys verified
// upstream) every key is a client of the default tier.
func TestUnassignedKeysDefaultTier(t *testing.T) {
	e := newIdentityEnforcer(t, keyedPolicy(), identity.Settings{},
		enforce.Settings{UnassignedKeys: enforce.UnassignedDefaultTier})
	if got := admittedWithRandomKeys(t, e, 100); got != 100 {
		t.Fatalf("100 keys believed as presented: %d admitted, want 100", got)
	}
}

// TestKeyVerifier: a key the verifier accepts is a client of its own (of
// the default tier when unassigned); a key it refuses is anonymous.
func TestKeyVerifier(t *testing.T) {
	calls := 0
	verify := identity.KeyVerifierFunc(func(_ context.Context, key string) bool {
		calls++
		return strings.HasPrefix(key, "good-")
	})
	e := newIdentityEnforcer(t, keyedPolicy(), identity.Settings{Keys: verify}, enforce.Settings{})
	if got := admittedWithRandomKeys(t, e, 50); got != 3 {
		t.Fatalf("50 unverified keys: %d admitted, want 3 (one anonymous client)", got)
	}
	for _, k := range []string{"good-1", "good-2"} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.RemoteAddr = "203.0.113.7:5000"
		req.Header.Set("X-API-Key", k)
		if res := e.Check(context.Background(), req); !res.Allowed || res.Tier != "free" || res.Decision.Remaining != 2 {
			t.Fatalf("verified key %s: %+v, want allowed with a bucket of its own (2 of 3 left)", k, res)
		}
	}
	if calls != 52 {
		t.Fatalf("verifier called %d times, want once per request (52)", calls)
	}
}

func TestParseUnassignedKeys(t *testing.T) {
	for s, want := range map[string]enforce.UnassignedKeys{"": enforce.UnassignedAnonymous,
		"anonymous": enforce.UnassignedAnonymous, "default_tier": enforce.UnassignedDefaultTier} {
		if got, err := enforce.ParseUnassignedKeys(s); err != nil || got != want {
			t.Errorf("ParseUnassignedKeys(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	if _, err := enforce.ParseUnassignedKeys("trust"); err == nil {
		t.Error("ParseUnassignedKeys(trust): no error")
	}
	if s := enforce.UnassignedDefaultTier.String(); s != "default_tier" {
		t.Errorf("String() = %q", s)
	}
}
