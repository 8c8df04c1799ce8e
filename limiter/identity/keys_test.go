package identity

import (
	"context"
	"net/http/httptest"
	"testing"
)

// TestKeyVerifierDropsRefusedKeys: a key the verifier refuses is dropped
// (the request is anonymous), an accepted one is marked verified, and
// without a verifier the key is kept, unverified.
func TestKeyVerifierDropsRefusedKeys(t *testing.T) {
	good := KeyVerifierFunc(func(_ context.Context, k string) bool { return k == "genuine" })
	tests := []struct {
		name     string
		keys     KeyVerifier
		key      string
		want     string
		verified bool
	}{
		{"accepted", good, "genuine", "genuine", true},
		{"refused", good, "forged", "", false},
		{"no key: not asked", KeyVerifierFunc(func(context.Context, string) bool { panic("asked") }), "", "", false},
		{"no verifier", nil, "claimed", "claimed", false},
	}
	for _, tt := range tests {
		ident, err := New(Settings{Keys: tt.keys})
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest("GET", "/", nil)
		req.RemoteAddr = "192.0.2.1:1"
		if tt.key != "" {
			req.Header.Set("X-API-Key", tt.key)
		}
		id := ident.Identify(req)
		if id.APIKey != tt.want || id.KeyVerified != tt.verified || id.IP != "192.0.2.1" {
			t.Errorf("%s: %+v, want key %q verified %v", tt.name, id, tt.want, tt.verified)
		}
	}
}
