package identity

import (
	"net/http/httptest"
	"testing"
)

// TestIdentifyIP: the client IP of Identify is ClientKey of the resolved
// address whatever form the peer takes, including when it reuses the
// peer's own text.
func TestIdentifyIP(t *testing.T) {
	id, err := New(Settings{TrustedProxies: testTrusted})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ peer, xff, want string }{
		{"198.51.100.7:4711", "", "198.51.100.7"},
		{"198.51.100.7", "", "198.51.100.7"},                   // a bare IP
		{"[::ffff:198.51.100.7]:80", "", "198.51.100.7"},       // IPv4-mapped: unmapped
		{"[2001:db8:1:2:3:4:5:6]:80", "", "2001:db8:1:2::/64"}, // IPv6: its /64
		{"[fe80::1%eth0]:80", "", "fe80::/64"},                 // a zone is dropped
		{"198.51.100.7:4711", "203.0.113.9", "198.51.100.7"},   // untrusted: its header is ignored
		{"10.0.0.1:4711", "203.0.113.9", "203.0.113.9"},        // a trusted proxy: the hop
		{"10.0.0.1:4711", "10.0.0.2", "10.0.0.2"},              // every hop trusted: the left-most
		{"10.0.0.1:4711", "", "10.0.0.1"},                      // a trusted peer without a header
		{"unix", "", unknownIP},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = tc.peer
		if tc.xff != "" {
			r.Header.Set("X-Forwarded-For", tc.xff)
		}
		if got := id.Identify(r).IP; got != tc.want {
			t.Errorf("peer %s xff %q: IP %q, want %q", tc.peer, tc.xff, got, tc.want)
		}
	}
}

// TestIdentifyAllocs: identifying an API key sent from an IPv4 peer
// allocates nothing, as the middleware does it on every request.
func TestIdentifyAllocs(t *testing.T) {
	id, err := New(Settings{})
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "198.51.100.7:4711"
	r.Header.Set("X-API-Key", "k1")
	if c := id.Identify(r); c.APIKey != "k1" || c.IP != "198.51.100.7" {
		t.Fatalf("Identify = %+v", c)
	}
	if n := testing.AllocsPerRun(100, func() { id.Identify(r) }); n != 0 {
		t.Errorf("Identify allocates %v times, want 0", n)
	}
}
