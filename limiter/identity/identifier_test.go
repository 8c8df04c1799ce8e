package identity

import (
	"net/http/httptest"
	"net/netip"
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

// TestParseIPv4Port: the fast reading of an IPv4 peer takes the forms
// net/http writes and leaves every other to netip (which may refuse it).
func TestParseIPv4Port(t *testing.T) {
	for _, tc := range []struct {
		in, host string // host "": not read here
	}{
		{"198.51.100.7:4711", "198.51.100.7"},
		{"0.0.0.0:0", "0.0.0.0"},
		{"255.255.255.255:65535", "255.255.255.255"},
		{"10.0.0.1:080", "10.0.0.1"}, // netip reads a port's leading zeros too
		{"10.0.0.1:65536", ""},
		{"10.0.0.1:000080", ""}, // netip's to read
		{"10.0.0.01:80", ""},
		{"10.0.0.256:80", ""},
		{"10.0.0.1000:80", ""},
		{"10.0.0:80", ""},
		{"10.0.0.1.2:80", ""},
		{"10.0.0.1", ""},
		{"10.0.0.1:", ""},
		{"10.0.0.1:8a", ""},
		{"10.0.0.1%eth0:80", ""},
		{"[10.0.0.1]:80", ""},
		{":80", ""},
		{"", ""},
	} {
		a, host, ok := parseIPv4Port(tc.in)
		if ok != (tc.host != "") || host != tc.host {
			t.Errorf("%q: %v %q %v, want host %q", tc.in, a, host, ok, tc.host)
		}
	}
}

// FuzzParseIPv4Port: what the fast reading takes, netip reads as the same
// address, whose text is the host part it returns.
func FuzzParseIPv4Port(f *testing.F) {
	for _, s := range []string{"198.51.100.7:4711", "1.2.3.4:0", "01.2.3.4:5", "1.2.3.4:99999", "1.2.3.4"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, host, ok := parseIPv4Port(s)
		if !ok {
			return
		}
		ap, err := netip.ParseAddrPort(s)
		if err != nil || ap.Addr() != a || a.String() != host {
			t.Fatalf("%q: fast %v %q, netip %v %v", s, a, host, ap, err)
		}
	})
}

// BenchmarkIdentifyIPv4Peer: the product's identifier (no trusted proxies,
// no key verifier, no JWT) on a request with an API key from an IPv4 peer,
// as every request of `throttled bench http` is.
func BenchmarkIdentifyIPv4Peer(b *testing.B) {
	id, err := New(Settings{})
	if err != nil {
		b.Fatal(err)
	}
	r := httptest.NewRequest("GET", "/hello", nil)
	r.RemoteAddr = "127.0.0.1:54321"
	r.Header.Set("X-API-Key", "k1")
	b.ReportAllocs()
	for b.Loop() {
		if c := id.Identify(r); c.IP != "127.0.0.1" || c.APIKey != "k1" {
			b.Fatal(c)
		}
	}
}
