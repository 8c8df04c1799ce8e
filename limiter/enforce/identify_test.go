package enforce_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/enforce"
	"github.com/throttledhq/throttled/limiter/identity"
)

// identityEnforcer limits each client (by the "client" or "ip" source) to
// one request a minute, so a second request in the same bucket is a 429.
func identityEnforcer(t *testing.T, store limiter.Store, keys string, s identity.Settings) *enforce.Enforcer {
	t.Helper()
	id, err := identity.New(s)
	if err != nil {
		t.Fatal(err)
	}
	e, err := enforce.New(store, enforce.Policy{Tiers: testTiers, Rules: []enforce.Rule{
		{Name: "one", Path: "/", Keys: []string{keys}, Limit: 1, Period: time.Minute},
	}}, enforce.Settings{Identifier: id})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func from(t *testing.T, h http.Handler, peer string, hdr ...string) int {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.RemoteAddr = peer
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w.Code
}

func TestSpoofedForwardedForLandsOnSocketIP(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, wrap func(*enforce.Enforcer) http.Handler, store limiter.Store) {
		h := wrap(identityEnforcer(t, store, "ip", identity.Settings{
			TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}))
		if c := from(t, h, "203.0.113.7:5000", "X-Forwarded-For", "198.51.100.1"); c != 200 {
			t.Fatalf("first: %d", c)
		}
		// A new forged XFF (and X-Real-IP) each time: still the peer's bucket.
		for _, fake := range []string{"198.51.100.2", "198.51.100.3, 10.0.0.1"} {
			if c := from(t, h, "203.0.113.7:5001", "X-Forwarded-For", fake, "X-Real-IP", "192.0.2.99"); c != 429 {
				t.Fatalf("spoofed XFF %q from an untrusted peer: %d, want 429 (socket IP's bucket)", fake, c)
			}
		}
	})
}

func TestTrustedProxyChain(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, wrap func(*enforce.Enforcer) http.Handler, store limiter.Store) {
		h := wrap(identityEnforcer(t, store, "ip", identity.Settings{
			TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}))
		// client 198.51.100.9 → proxy 10.1.1.1 → proxy 10.2.2.2 (peer). The
		// left-most entry is the client's own claim and is ignored.
		chain := []string{"X-Forwarded-For", "6.6.6.6, 198.51.100.9, 10.1.1.1"}
		if c := from(t, h, "10.2.2.2:443", chain...); c != 200 {
			t.Fatalf("first via chain: %d", c)
		}
		// The same client via another proxy path shares the bucket...
		if c := from(t, h, "10.9.9.9:443", "X-Forwarded-For", "7.7.7.7, 198.51.100.9"); c != 429 {
			t.Fatalf("same client, other proxy: %d, want 429", c)
		}
		// ...and the proxies' own addresses are not buckets of their own.
		if c := from(t, h, "10.2.2.2:443", "X-Forwarded-For", "198.51.100.10"); c != 200 {
			t.Fatalf("another client via the same proxy: %d, want 200", c)
		}
	})
}

func TestIPv6Grouping(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, wrap func(*enforce.Enforcer) http.Handler, store limiter.Store) {
		h := wrap(identityEnforcer(t, store, "ip", identity.Settings{}))
		if c := from(t, h, "[2001:db8:1:2::1]:5000"); c != 200 {
			t.Fatalf("first: %d", c)
		}
		if c := from(t, h, "[2001:db8:1:2:ffff::9]:5000"); c != 429 {
			t.Fatalf("same /64: %d, want 429", c)
		}
		if c := from(t, h, "[2001:db8:1:3::1]:5000"); c != 200 {
			t.Fatalf("next /64: %d, want 200", c)
		}
		h48 := wrap(identityEnforcer(t, store, "ip", identity.Settings{IPv6Prefix: 48}))
		from(t, h48, "[2001:db8:9:1::1]:1")
		if c := from(t, h48, "[2001:db8:9:2::1]:1"); c != 429 {
			t.Fatalf("same /48: %d, want 429", c)
		}
	})
}

func TestForgedJWTIsAnonymous(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	v, err := identity.NewJWTVerifier(identity.JWTConfig{PublicKeyPEM: pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})})
	if err != nil {
		t.Fatal(err)
	}
	sign := func(k *ecdsa.PrivateKey, sub string) string {
		tok, err := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{"sub": sub, "exp": time.Now().Add(time.Hour).Unix()}).SignedString(k)
		if err != nil {
			t.Fatal(err)
		}
		return "Bearer " + tok
	}
	forger, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	forEachAdapter(t, func(t *testing.T, wrap func(*enforce.Enforcer) http.Handler, store limiter.Store) {
		h := wrap(identityEnforcer(t, store, "jwt", identity.Settings{JWT: v}))
		// A verified subject has its own bucket.
		if c := from(t, h, "192.0.2.1:1", "Authorization", sign(key, "alice")); c != 200 {
			t.Fatalf("alice: %d", c)
		}
		if c := from(t, h, "192.0.2.1:1", "Authorization", sign(key, "alice")); c != 429 {
			t.Fatalf("alice again: %d, want 429", c)
		}
		// A forged token claiming "bob" is anonymous: the jwt rule does not
		// apply, and bob's bucket is untouched.
		for i := 0; i < 3; i++ {
			if c := from(t, h, "192.0.2.1:1", "Authorization", sign(forger, "bob")); c != 200 {
				t.Fatalf("forged bob #%d: %d, want 200 (anonymous, no jwt bucket)", i, c)
			}
		}
		if c := from(t, h, "192.0.2.1:1", "Authorization", sign(key, "bob")); c != 200 {
			t.Fatalf("real bob: %d, want 200 (forgeries spent nothing of his)", c)
		}
	})
	// And the tier of a forged subject is the anonymous tier.
	assign := assignments{"bob": "premium"}
	id, _ := identity.New(identity.Settings{JWT: v})
	e, _ := enforce.New(limiter.NewMemory(), enforce.Policy{Tiers: testTiers, AnonymousTier: "free",
		Rules: []enforce.Rule{{Name: "ip", Path: "/", Keys: []string{"ip"}}}},
		enforce.Settings{Identifier: id, Tiers: assign})
	req := httptest.NewRequest("GET", "/", nil)
	req.Header.Set("Authorization", sign(forger, "bob"))
	if res := e.Check(req.Context(), req); res.Tier != "free" {
		t.Fatalf("forged bob's tier %q, want free (anonymous)", res.Tier)
	}
	req.Header.Set("Authorization", sign(key, "bob"))
	if res := e.Check(req.Context(), req); res.Tier != "premium" {
		t.Fatalf("real bob's tier %q, want premium", res.Tier)
	}
}
