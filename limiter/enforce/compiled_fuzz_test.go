package enforce

import (
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/throttledhq/throttled/limiter/identity"
)

// FuzzRuleKey feeds arbitrary paths, API keys, forwarded-for chains and peer
// addresses through matching, identification and key building: never a
// panic, keys always start with the rule's name and stay bounded.
func FuzzRuleKey(f *testing.F) {
	f.Add("/v1/items/42", "key-1", "198.51.100.1, 10.0.0.1", "10.0.0.2:443")
	f.Add("/", "", "", "[2001:db8::1]:80")
	f.Add("//a/../b", strings.Repeat("k", 300), "garbage, , ::ffff:1.2.3.4", "not-an-ip")
	f.Add("/v1/items", "{tag}", "unknown", "@")
	p := Policy{Tiers: []Tier{{Name: "t", Limit: 10, Period: time.Second}}, Rules: []Rule{
		{Name: "items", Path: "/v1/items/:id", Keys: []string{"api_key", "ip"}},
		{Name: "all", Path: "/", Keys: []string{"header:X-API-Key", "route", "client"}},
	}}
	c, err := compile(&p)
	if err != nil {
		f.Fatal(err)
	}
	ident, err := identity.New(identity.Settings{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, path, apiKey, xff, peer string) {
		r := &http.Request{Method: "GET", URL: &url.URL{Path: path}, RemoteAddr: peer,
			Header: http.Header{"X-Api-Key": {apiKey}, "X-Forwarded-For": {xff}}}
		id := ident.Identify(r)
		for i := range c.rules {
			cr := &c.rules[i]
			if !cr.matches(r.Method, path) {
				continue
			}
			key, ok := cr.key(&id, r, c.def, new(arena))
			if !ok {
				continue
			}
			if !strings.HasPrefix(key, cr.Name+"|") {
				t.Fatalf("key %q does not start with the rule name", key)
			}
			if len(key) > max(maxKeyLen, len(cr.Name)+len("|sha256:")+64) {
				t.Fatalf("key of %d bytes", len(key))
			}
		}
	})
}
