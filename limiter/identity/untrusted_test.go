package identity

import (
	"context"
	"fmt"
	"net/http/httptest"
	"net/netip"
	"testing"
)

// TestUntrustedForwardsCounted: a request is counted when it carries
// X-Forwarded-For and its peer is not a trusted proxy, and only then;
// First is the first such peer.
func TestUntrustedForwardsCounted(t *testing.T) {
	var u UntrustedForwards
	id, err := New(Settings{TrustedProxies: testTrusted, Untrusted: &u})
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		peer, xff string
		want      uint64 // the count after this request
	}{
		{"10.0.0.1:1", "203.0.113.9", 0},     // a trusted proxy: its header is believed
		{"198.51.100.7:1", "", 0},            // untrusted, no header: nothing to warn about
		{"198.51.100.7:1", "203.0.113.9", 1}, // untrusted with a header: ignored, counted
		{"198.51.100.8:1", "203.0.113.9", 2},
		{"[2001:db8::1]:1", "203.0.113.9", 3},
		{"unix", "203.0.113.9", 3}, // not an IP peer: identified as unknown, not counted
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = tc.peer
		if tc.xff != "" {
			r.Header.Set("X-Forwarded-For", tc.xff)
		}
		c := id.Identify(r)
		if got := u.Count(); got != tc.want {
			t.Errorf("#%d peer %s xff %q: count %d, want %d (client %+v)", i, tc.peer, tc.xff, got, tc.want, c)
		}
	}
	if first := u.First(); first != netip.MustParseAddr("198.51.100.7") {
		t.Errorf("First() = %v, want the first untrusted peer 198.51.100.7", first)
	}
}

// TestUntrustedForwardsNoAllocs: counting costs the hot path no allocation
// once the first peer is recorded.
func TestUntrustedForwardsNoAllocs(t *testing.T) {
	var u UntrustedForwards
	id, err := New(Settings{Untrusted: &u})
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "198.51.100.7:1"
	r.Header.Set("X-Forwarded-For", "203.0.113.9")
	id.Identify(r)
	base := testing.AllocsPerRun(100, func() { id.Identify(r) })
	plain, _ := New(Settings{})
	if want := testing.AllocsPerRun(100, func() { plain.Identify(r) }); base != want {
		t.Fatalf("Identify with counting: %v allocs, without: %v", base, want)
	}
}

func ExampleUntrustedForwards() {
	var u UntrustedForwards
	id, _ := New(Settings{Untrusted: &u}) // no trusted proxies: every header is ignored
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "198.51.100.7:4711"
	r.Header.Set("X-Forwarded-For", "203.0.113.9")
	fmt.Println(id.Identify(r).IP, u.Count(), u.First())
	// Output: 198.51.100.7 1 198.51.100.7
}

// TestIdentifyDeferIP: IdentifyDeferIP is Identify without the IP, which
// ClientIP gives; a request with X-Forwarded-For from an untrusted peer is
// resolved at once when such requests are counted, and counted once
// however the enforcer asks after.
func TestIdentifyDeferIP(t *testing.T) {
	var u UntrustedForwards
	for _, s := range []Settings{{}, {TrustedProxies: testTrusted, Untrusted: &u}} {
		idf, err := New(s)
		if err != nil {
			t.Fatal(err)
		}
		d := idf.(*identifier)
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = "198.51.100.7:1"
		r.Header.Set("X-API-Key", "k1")
		if c := d.IdentifyDeferIP(r); c.APIKey != "k1" || c.IP != "" || d.ClientIP(r) != "198.51.100.7" {
			t.Errorf("%+v: IdentifyDeferIP %+v, ClientIP %q; want key k1, no IP, then 198.51.100.7", s, c, d.ClientIP(r))
		}
		r.Header.Set("X-Forwarded-For", "203.0.113.9")
		c, want := d.IdentifyDeferIP(r), ""
		if s.Untrusted != nil {
			want = "198.51.100.7"
		}
		if c.IP != want || u.Count() != 1 && s.Untrusted != nil {
			t.Errorf("%+v with X-Forwarded-For: IP %q (want %q), counted %d (want 1)", s, c.IP, want, u.Count())
		}
	}
}

// TestPlainKeyHeader: the API key's header is the whole identification
// only without a key verifier, a JWT verifier or counting of forwarded
// headers.
func TestPlainKeyHeader(t *testing.T) {
	for _, tc := range []struct {
		s    Settings
		want string
	}{
		{Settings{}, "X-Api-Key"},
		{Settings{APIKeyHeader: "x-client-key"}, "X-Client-Key"},
		{Settings{Untrusted: &UntrustedForwards{}}, ""},
		{Settings{Keys: KeyVerifierFunc(func(context.Context, string) bool { return true })}, ""},
	} {
		idf, err := New(tc.s)
		if err != nil {
			t.Fatal(err)
		}
		if got := idf.(*identifier).PlainKeyHeader(); got != tc.want {
			t.Errorf("%+v: PlainKeyHeader %q, want %q", tc.s, got, tc.want)
		}
	}
}
