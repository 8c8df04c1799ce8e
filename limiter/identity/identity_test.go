package identity

import (
	"errors"
	"fmt"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

// testTrusted are the proxies the identity tests trust.
var testTrusted = []netip.Prefix{
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("127.0.0.0/8"),
	netip.MustParsePrefix("fd00::/8"),
	netip.MustParsePrefix("::1/128"),
}

func newTestResolver(t testing.TB, bits int) *IPResolver {
	t.Helper()
	r, err := NewIPResolver(testTrusted, bits)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestClientIP(t *testing.T) {
	r := newTestResolver(t, 0)
	tests := []struct {
		name   string
		remote string
		xff    []string
		want   string
	}{
		{"untrusted peer, no xff", "203.0.113.7:4711", nil, "203.0.113.7"},
		{"untrusted peer spoofs xff", "203.0.113.7:4711", []string{"1.2.3.4"}, "203.0.113.7"},
		{"untrusted peer spoofs trusted xff", "203.0.113.7:4711", []string{"10.0.0.1, 198.51.100.1"}, "203.0.113.7"},
		{"untrusted v6 peer", "[2001:db8::1]:443", []string{"1.2.3.4"}, "2001:db8::1"},
		{"bare ip peer", "203.0.113.7", []string{"1.2.3.4"}, "203.0.113.7"},
		{"trusted peer, no xff", "10.0.0.1:80", nil, "10.0.0.1"},
		{"trusted peer, empty xff", "10.0.0.1:80", []string{""}, "10.0.0.1"},
		{"one proxy", "10.0.0.1:80", []string{"203.0.113.7"}, "203.0.113.7"},
		{"proxy chain", "10.0.0.3:80", []string{"203.0.113.7, 10.0.0.1, 10.0.0.2"}, "203.0.113.7"},
		{"chain over several lines", "10.0.0.3:80", []string{"203.0.113.7", "10.0.0.1", "10.0.0.2"}, "203.0.113.7"},
		{"spoofed left-most ignored", "10.0.0.3:80", []string{"1.1.1.1, 10.0.0.9, 203.0.113.7, 10.0.0.1"}, "203.0.113.7"},
		{"spoofed line ignored", "10.0.0.3:80", []string{"1.1.1.1", "203.0.113.7,10.0.0.1"}, "203.0.113.7"},
		{"all trusted: left-most", "10.0.0.3:80", []string{"192.168.1.1, 10.0.0.1"}, "192.168.1.1"},
		{"malformed stops at last good hop", "10.0.0.3:80", []string{"203.0.113.7, unknown, 10.0.0.1"}, "10.0.0.1"},
		{"malformed right-most: peer", "10.0.0.3:80", []string{"203.0.113.7, garbage"}, "10.0.0.3"},
		{"hop with port", "10.0.0.3:80", []string{"203.0.113.7:5555"}, "203.0.113.7"},
		{"bracketed v6 hop", "10.0.0.3:80", []string{"[2001:db8::7]"}, "2001:db8::7"},
		{"bracketed v6 hop with port", "10.0.0.3:80", []string{"[2001:db8::7]:99"}, "2001:db8::7"},
		{"bare v6 hop", "[::1]:80", []string{"2001:db8::7"}, "2001:db8::7"},
		{"v6 trusted proxy", "[fd00::1]:80", []string{"203.0.113.7, fd00::2"}, "203.0.113.7"},
		{"empty elements skipped", "10.0.0.3:80", []string{"203.0.113.7,, ,10.0.0.1"}, "203.0.113.7"},
		{"mapped peer is v4", "[::ffff:203.0.113.7]:80", nil, "203.0.113.7"},
		{"mapped trusted peer", "[::ffff:10.0.0.1]:80", []string{"203.0.113.7"}, "203.0.113.7"},
		{"mapped hop is v4", "10.0.0.1:80", []string{"::ffff:203.0.113.7"}, "203.0.113.7"},
		{"mapped trusted hop", "10.0.0.1:80", []string{"203.0.113.7, ::ffff:10.1.1.1"}, "203.0.113.7"},
		{"zone dropped", "[fe80::1%eth0]:80", nil, "fe80::1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.ClientIP(tt.remote, tt.xff)
			if err != nil {
				t.Fatalf("ClientIP(%q, %q): %v", tt.remote, tt.xff, err)
			}
			if got.String() != tt.want {
				t.Errorf("ClientIP(%q, %q) = %v, want %s", tt.remote, tt.xff, got, tt.want)
			}
		})
	}
}

func TestClientIPBadPeer(t *testing.T) {
	r := newTestResolver(t, 0)
	for _, remote := range []string{"", "@", "localhost:80", "1.2.3:80", "[::1", "10.0.0.1:"} {
		a, err := r.ClientIP(remote, []string{"203.0.113.7"})
		if !errors.Is(err, ErrBadAddr) || a.IsValid() {
			t.Errorf("ClientIP(%q) = %v, %v; want ErrBadAddr", remote, a, err)
		}
	}
}

func TestClientIPRequest(t *testing.T) {
	r := newTestResolver(t, 0)
	req := httptest.NewRequest("GET", "/", nil)
	req.RemoteAddr = "10.0.0.2:1234"
	req.Header.Add("X-Forwarded-For", "1.1.1.1, 198.51.100.4")
	req.Header.Add("X-Forwarded-For", "10.0.0.1")
	req.Header.Set("X-Real-IP", "9.9.9.9")
	got, err := r.RequestIP(req)
	if err != nil || got != netip.MustParseAddr("198.51.100.4") {
		t.Fatalf("RequestIP = %v, %v; want 198.51.100.4", got, err)
	}
	req.RemoteAddr = "198.51.100.77:1234" // untrusted: X-Forwarded-For and X-Real-IP ignored
	got, err = r.RequestIP(req)
	if err != nil || got != netip.MustParseAddr("198.51.100.77") {
		t.Fatalf("RequestIP = %v, %v; want 198.51.100.77", got, err)
	}
}

func TestClientIPKey(t *testing.T) {
	r64 := newTestResolver(t, 0)
	r48 := newTestResolver(t, 48)
	r128 := newTestResolver(t, 128)
	tests := []struct {
		r    *IPResolver
		addr string
		want string
	}{
		{r64, "192.0.2.1", "192.0.2.1"},
		{r48, "192.0.2.1", "192.0.2.1"},
		{r64, "::ffff:192.0.2.1", "192.0.2.1"},
		{r64, "2001:db8:1:2:aaaa:bbbb:cccc:dddd", "2001:db8:1:2::/64"},
		{r64, "2001:db8:1:2::1", "2001:db8:1:2::/64"},
		{r48, "2001:db8:1:2:aaaa:bbbb:cccc:dddd", "2001:db8:1::/48"},
		{r48, "2001:db8:1:ffff::1", "2001:db8:1::/48"},
		{r128, "2001:db8::1", "2001:db8::1/128"},
		{r64, "fe80::1%eth0", "fe80::/64"},
	}
	for _, tt := range tests {
		if got := tt.r.ClientKey(netip.MustParseAddr(tt.addr)); got != tt.want {
			t.Errorf("/%d ClientKey(%s) = %q, want %q", tt.r.v6bits, tt.addr, got, tt.want)
		}
	}
	if got := r64.ClientKey(netip.Addr{}); got != "" {
		t.Errorf("ClientKey(zero) = %q, want empty", got)
	}
	// Two hosts in one /64 share a key; different /64s do not.
	a := r64.ClientKey(netip.MustParseAddr("2001:db8:0:1::a"))
	b := r64.ClientKey(netip.MustParseAddr("2001:db8:0:1::b"))
	c := r64.ClientKey(netip.MustParseAddr("2001:db8:0:2::a"))
	if a != b || a == c {
		t.Errorf("grouping: %q %q %q", a, b, c)
	}
	if got := string(r64.AppendClientKey([]byte("per-ip:"), netip.MustParseAddr("192.0.2.9"))); got != "per-ip:192.0.2.9" {
		t.Errorf("AppendClientKey = %q", got)
	}
}

func TestClientIPResolverConfig(t *testing.T) {
	for _, bits := range []int{-1, 129, 1000} {
		if _, err := NewIPResolver(nil, bits); !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), "ipv6 prefix") {
			t.Errorf("NewIPResolver(nil, %d) error = %v, want ErrBadConfig naming the prefix", bits, err)
		}
	}
	if _, err := NewIPResolver([]netip.Prefix{{}}, 0); !errors.Is(err, ErrBadConfig) {
		t.Errorf("zero prefix: error = %v, want ErrBadConfig", err)
	}
	// An IPv4-mapped or unmasked trusted prefix still matches IPv4 peers.
	r, err := NewIPResolver([]netip.Prefix{
		netip.MustParsePrefix("::ffff:172.16.0.0/108"),
		netip.MustParsePrefix("100.64.3.4/10"),
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"172.16.9.9", "172.31.0.1", "100.64.0.1", "::ffff:100.127.0.1"} {
		if !r.Trusted(netip.MustParseAddr(s)) {
			t.Errorf("Trusted(%s) = false", s)
		}
	}
	for _, s := range []string{"172.32.0.1", "100.128.0.1", "10.0.0.1"} {
		if r.Trusted(netip.MustParseAddr(s)) {
			t.Errorf("Trusted(%s) = true", s)
		}
	}
}

func ExampleIPResolver() {
	r, _ := NewIPResolver([]netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, 0)
	// A load balancer at 10.0.0.5 forwards a request whose client sent a
	// forged X-Forwarded-For entry.
	ip, _ := r.ClientIP("10.0.0.5:3456", []string{"6.6.6.6, 2001:db8:aa:bb::1, 10.0.0.9"})
	fmt.Println(ip, r.ClientKey(ip))
	// Output: 2001:db8:aa:bb::1 2001:db8:aa:bb::/64
}

func BenchmarkClientIP(b *testing.B) {
	r := newTestResolver(b, 0)
	xff := []string{"198.51.100.1, 203.0.113.7, 10.0.0.1", "10.0.0.2"}
	b.ReportAllocs()
	for b.Loop() {
		a, err := r.ClientIP("10.0.0.3:45678", xff)
		if err != nil || !a.Is4() {
			b.Fatal(a, err)
		}
	}
}

func BenchmarkClientKey(b *testing.B) {
	r := newTestResolver(b, 0)
	a := netip.MustParseAddr("2001:db8:1:2:3:4:5:6")
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		buf = r.AppendClientKey(buf[:0], a)
	}
}

// FuzzClientIP checks that ClientIP never panics, returns a valid unmapped,
// zone-free address or an error, answers the peer itself whenever the peer
// is untrusted, and otherwise answers the peer or one of the hops.
// The xff argument holds header lines separated by '\n'.
func FuzzClientIP(f *testing.F) {
	f.Add("203.0.113.7:4711", "1.2.3.4")
	f.Add("10.0.0.3:80", "203.0.113.7, 10.0.0.1, 10.0.0.2")
	f.Add("10.0.0.3:80", "1.1.1.1\n203.0.113.7,10.0.0.1")
	f.Add("[fd00::1]:80", "[2001:db8::7]:99, unknown, fd00::2")
	f.Add("[::ffff:10.0.0.1]:80", "::ffff:203.0.113.7")
	f.Add("@", "1.2.3.4")
	r := newTestResolver(f, 0)
	f.Fuzz(func(t *testing.T, remote, xff string) {
		lines := strings.Split(xff, "\n")
		got, err := r.ClientIP(remote, lines)
		peer, peerOK := fuzzParse(remote)
		if err != nil {
			if peerOK || got.IsValid() {
				t.Fatalf("ClientIP(%q, %q) = %v, %v; peer parses as %v", remote, xff, got, err, peer)
			}
			return
		}
		if !got.IsValid() || got.Is4In6() || got.Zone() != "" {
			t.Fatalf("ClientIP(%q, %q) = %#v: not a valid plain address", remote, xff, got)
		}
		if !peerOK {
			t.Fatalf("ClientIP(%q) = %v, want an error for an unparseable peer", remote, got)
		}
		if !r.Trusted(peer) && got != peer {
			t.Fatalf("untrusted peer %v: ClientIP = %v, want the peer", peer, got)
		}
		if got != peer && !fuzzIsHop(got, lines) {
			t.Fatalf("ClientIP(%q, %q) = %v: neither the peer nor a hop", remote, xff, got)
		}
		key := r.ClientKey(got)
		if p, err := netip.ParsePrefix(key); err == nil {
			if !got.Is6() || !p.Contains(got) || p.Bits() != DefaultIPv6Prefix {
				t.Fatalf("ClientKey(%v) = %q", got, key)
			}
		} else if a, err := netip.ParseAddr(key); err != nil || a != got || !a.Is4() {
			t.Fatalf("ClientKey(%v) = %q", got, key)
		}
	})
}

// fuzzParse reads an address independently of parseHop.
func fuzzParse(s string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]"))
	if err != nil {
		ap, err := netip.ParseAddrPort(s)
		if err != nil {
			return netip.Addr{}, false
		}
		a = ap.Addr()
	}
	if strings.HasPrefix(s, "[") != strings.HasSuffix(s, "]") || (strings.HasPrefix(s, "[") && a.Is4()) {
		if _, err := netip.ParseAddrPort(s); err != nil {
			return netip.Addr{}, false
		}
	}
	return a.Unmap().WithZone(""), true
}

func fuzzIsHop(a netip.Addr, lines []string) bool {
	for _, l := range lines {
		for _, h := range strings.Split(l, ",") {
			if b, ok := fuzzParse(strings.TrimSpace(h)); ok && b == a {
				return true
			}
		}
	}
	return false
}

// TestParsePrefix: a trusted proxy is a CIDR (masked) or one address; the
// error names the form wanted.
func TestParsePrefix(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"10.1.2.3/8", "10.0.0.0/8"},
		{"192.168.1.7", "192.168.1.7/32"},
		{"::1", "::1/128"},
		{"::ffff:10.0.0.0/104", "::ffff:10.0.0.0/104"},
	} {
		p, err := ParsePrefix(tc.in)
		if err != nil || p.String() != tc.want {
			t.Errorf("ParsePrefix(%q) = %v, %v; want %s", tc.in, p, err, tc.want)
		}
	}
	if _, err := ParsePrefix("10.0.0"); err == nil || !strings.Contains(err.Error(), "want a CIDR") {
		t.Errorf("ParsePrefix(10.0.0): err %v, want one naming the CIDR form", err)
	}
}
