package identity

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// Sentinel errors for client identity and for the settings of the optional
// parts (identity, JWT, retry transport).
var (
	// ErrBadAddr reports a socket peer address that is not an IP address.
	ErrBadAddr = errors.New("identity: bad remote address")
	// ErrBadConfig reports a setting that cannot work; the message names it.
	ErrBadConfig = errors.New("identity: bad configuration")
)

// DefaultIPv6Prefix is the prefix length that groups IPv6 clients when
// NewIPResolver is given 0: a /64 is what one site or one host usually gets.
const DefaultIPv6Prefix = 64

// IPResolver finds the client's IP address behind trusted reverse proxies,
// and the key that groups clients for rate limiting.
//
// The rule: the client is the socket's peer (RemoteAddr) unless that peer is
// a trusted proxy. Then X-Forwarded-For is read right to left (every header
// line, each comma-separated) and the client is the right-most hop that is
// not a trusted proxy: every hop to its right was appended by our own
// infrastructure, everything to its left is whatever the client chose to
// send. If every hop is trusted, the left-most one is the client. A hop that
// is not an IP address (e.g. "unknown", or an obfuscated identifier) stops
// the walk: the client is then the last good hop seen (the one to its right,
// or the peer), so a malformed header can only make the answer coarser,
// never attacker-chosen.
//
// X-Real-IP and the RFC 7239 Forwarded header are never read, and
// X-Forwarded-For is ignored when the peer is not trusted.
//
// Hops may be "ip", "ip:port", "[ipv6]" or "[ipv6]:port"; zones are dropped
// and IPv4-mapped IPv6 addresses are read as IPv4.
//
// An IPResolver is immutable and safe for concurrent use.
type IPResolver struct {
	trusted []netip.Prefix
	v6bits  int
}

// NewIPResolver returns a resolver that trusts X-Forwarded-For from peers in
// trusted, and groups IPv6 clients by ipv6Prefix bits (0 means
// DefaultIPv6Prefix; otherwise 1..128). IPv4 clients are single addresses.
func NewIPResolver(trusted []netip.Prefix, ipv6Prefix int) (*IPResolver, error) {
	if ipv6Prefix == 0 {
		ipv6Prefix = DefaultIPv6Prefix
	}
	if ipv6Prefix < 1 || ipv6Prefix > 128 {
		return nil, fmt.Errorf("%w: ipv6 prefix /%d must be in 1..128", ErrBadConfig, ipv6Prefix)
	}
	r := &IPResolver{v6bits: ipv6Prefix, trusted: make([]netip.Prefix, 0, len(trusted))}
	for i, p := range trusted {
		if !p.IsValid() {
			return nil, fmt.Errorf("%w: trusted proxy prefix #%d is not a valid prefix", ErrBadConfig, i)
		}
		r.trusted = append(r.trusted, normalizePrefix(p))
	}
	return r, nil
}

// ParsePrefix reads a trusted proxy as configured: a CIDR ("10.0.0.0/8",
// masked) or a single address (its /32 or /128).
func ParsePrefix(s string) (netip.Prefix, error) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, errors.New("want a CIDR like 10.0.0.0/8 or an address")
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// normalizePrefix masks p and turns an IPv4-mapped prefix (::ffff:a.b.c.d/n,
// n ≥ 96) into its IPv4 form, since addresses are compared unmapped.
func normalizePrefix(p netip.Prefix) netip.Prefix {
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p.Masked()
}

// Trusted reports whether addr is inside a trusted proxy prefix. It is
// small enough to inline, so that a resolver without trusted proxies (the
// default) costs every request a length test, not a call.
func (r *IPResolver) Trusted(addr netip.Addr) bool {
	return len(r.trusted) > 0 && r.inTrusted(addr)
}

// inTrusted is Trusted's walk over the trusted prefixes.
func (r *IPResolver) inTrusted(addr netip.Addr) bool {
	addr = normalizeAddr(addr)
	for _, p := range r.trusted {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// RequestIP is ClientIP for an incoming request: its RemoteAddr and every
// X-Forwarded-For header line.
func (r *IPResolver) RequestIP(req *http.Request) (netip.Addr, error) {
	return r.ClientIP(req.RemoteAddr, req.Header.Values("X-Forwarded-For"))
}

// ClientIP returns the client's address given the socket peer remoteAddr
// ("ip:port", as in http.Request.RemoteAddr, or a bare IP) and the
// X-Forwarded-For header lines in the order received. It fails only when
// remoteAddr is not an IP address (for example a Unix socket peer).
func (r *IPResolver) ClientIP(remoteAddr string, xff []string) (netip.Addr, error) {
	a, _, err := r.resolve(remoteAddr, xff)
	return a, err
}

// resolve is ClientIP, and whether the peer is a trusted proxy (when it is
// not, the client is the peer and xff was ignored).
func (r *IPResolver) resolve(remoteAddr string, xff []string) (netip.Addr, bool, error) {
	peer, ok := parseHop(remoteAddr)
	if !ok {
		return netip.Addr{}, false, fmt.Errorf("%w: %q is not ip:port or ip", ErrBadAddr, remoteAddr)
	}
	if !r.Trusted(peer) {
		return peer, false, nil
	}
	return r.walk(peer, xff), true, nil
}

// walk reads xff right to left from a trusted peer (see IPResolver).
func (r *IPResolver) walk(peer netip.Addr, xff []string) netip.Addr {
	last := peer
	for i := len(xff) - 1; i >= 0; i-- {
		line := xff[i]
		for end := len(line); end >= 0; {
			start := strings.LastIndexByte(line[:end], ',') + 1
			hop := strings.TrimSpace(line[start:end])
			end = start - 1 // -1 after the first element: the loop ends
			if hop == "" {
				continue
			}
			a, ok := parseHop(hop)
			if !ok {
				return last
			}
			if !r.Trusted(a) {
				return a
			}
			last = a
		}
	}
	return last
}

// parseHop reads "ip", "ip:port", "[ipv6]" or "[ipv6]:port". It picks the
// parser by shape, so that well-formed input allocates nothing (a failed
// netip parse allocates its error; a zone allocates and is then dropped).
func parseHop(s string) (netip.Addr, bool) {
	if a, _, ok := parseIPv4Port(s); ok {
		return a, true
	}
	var a netip.Addr
	var err error
	switch {
	case len(s) > 2 && s[0] == '[' && s[len(s)-1] == ']':
		if a, err = netip.ParseAddr(s[1 : len(s)-1]); err == nil && !a.Is6() {
			return netip.Addr{}, false
		}
	case strings.HasPrefix(s, "[") || strings.Count(s, ":") == 1:
		var ap netip.AddrPort
		ap, err = netip.ParseAddrPort(s)
		a = ap.Addr()
	default:
		a, err = netip.ParseAddr(s)
	}
	if err != nil {
		return netip.Addr{}, false
	}
	return normalizeAddr(a), true
}

// parseIPv4Port reads "a.b.c.d:port" as net/http writes an IPv4 peer
// (decimal fields without leading zeros, a port of up to five digits),
// and returns the address and the text of its host part. Anything else
// is not ok, and is left to netip's parser; what is ok netip reads alike.
func parseIPv4Port(s string) (a netip.Addr, host string, ok bool) {
	var ip [4]byte
	i := 0
	for f := range ip {
		v, start := 0, i
		for ; i < len(s) && '0' <= s[i] && s[i] <= '9' && i-start < 3; i++ {
			v = v*10 + int(s[i]-'0')
		}
		if i == start || v > 255 || s[start] == '0' && i-start > 1 {
			return netip.Addr{}, "", false
		}
		sep := byte('.')
		if f == len(ip)-1 {
			sep, host = ':', s[:i]
		}
		if i == len(s) || s[i] != sep {
			return netip.Addr{}, "", false
		}
		ip[f] = byte(v)
		i++
	}
	port := 0
	if n := len(s) - i; n == 0 || n > 5 {
		return netip.Addr{}, "", false
	}
	for ; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return netip.Addr{}, "", false
		}
		port = port*10 + int(s[i]-'0')
	}
	if port > 65535 {
		return netip.Addr{}, "", false
	}
	return netip.AddrFrom4(ip), host, true
}

func normalizeAddr(a netip.Addr) netip.Addr {
	return a.Unmap().WithZone("")
}

// ClientKey returns the key that groups addr with its neighbours: an IPv4
// address as itself ("192.0.2.1"), an IPv6 address as its prefix in CIDR
// form ("2001:db8:1:2::/64"). It returns "" for the zero Addr.
func (r *IPResolver) ClientKey(addr netip.Addr) string {
	var buf [64]byte
	return string(r.AppendClientKey(buf[:0], addr))
}

// AppendClientKey appends ClientKey(addr) to dst, for callers that build a
// larger key and want no allocation.
func (r *IPResolver) AppendClientKey(dst []byte, addr netip.Addr) []byte {
	if !addr.IsValid() {
		return dst
	}
	addr = normalizeAddr(addr)
	if addr.Is4() {
		return addr.AppendTo(dst)
	}
	p, _ := addr.Prefix(r.v6bits) // cannot fail: v6bits is in 1..128
	return p.AppendTo(dst)
}
