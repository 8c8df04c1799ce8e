package identity

import (
	"net/http"
	"net/netip"
	"net/textproto"
	"strings"
)

// Settings configure New. Zero values mean the defaults
// given on each field.
type Settings struct {
	APIKeyHeader   string         // default "X-API-Key"
	TrustedProxies []netip.Prefix // peers whose X-Forwarded-For is believed; none by default
	IPv6Prefix     int            // IPv6 clients are grouped by this prefix; default 64
	JWT            *JWTVerifier   // nil: JWT subjects are not read
	// Keys verifies API keys; nil: keys are not verified here, and the
	// enforcer believes only assigned keys (see enforce.UnassignedKeys).
	Keys KeyVerifier
	// Untrusted counts requests with X-Forwarded-For from peers outside
	// TrustedProxies (a load balancer missing from the list); nil: not counted.
	Untrusted *UntrustedForwards
}

// New returns the Identifier the product uses: the API key from
// its header (dropped when Keys refuses it), the subject of a verified bearer JWT (a token that fails
// verification is ignored: the request is anonymous), and the client IP
// resolved through trusted proxies only.
func New(s Settings) (Identifier, error) {
	if s.APIKeyHeader == "" {
		s.APIKeyHeader = "X-API-Key"
	}
	ips, err := NewIPResolver(s.TrustedProxies, s.IPv6Prefix)
	if err != nil {
		return nil, err
	}
	return &identifier{header: textproto.CanonicalMIMEHeaderKey(s.APIKeyHeader), ips: ips, jwt: s.JWT, keys: s.Keys,
		untrusted: s.Untrusted}, nil
}

type identifier struct {
	header string // canonical
	ips    *IPResolver
	jwt    *JWTVerifier
	keys   KeyVerifier
	// untrusted counts ignored X-Forwarded-For headers; nil: not counted.
	untrusted *UntrustedForwards
}

// unknownIP keys requests whose peer is not an IP (a Unix socket, say), so
// that they share one bucket rather than escape per-IP rules.
const unknownIP = "unknown"

// Identify reads the request's headers by their canonical names (no
// canonicalizing per request) and names an IPv4 peer by the host part of
// RemoteAddr itself: a well-formed request costs no allocation.
func (i *identifier) Identify(r *http.Request) Client {
	id := i.identifyKeys(r)
	id.IP = i.clientIP(r.RemoteAddr, r.Header)
	return id
}

// identifyKeys is Identify without the IP: the API key and the subject.
func (i *identifier) identifyKeys(r *http.Request) Client {
	id := Client{APIKey: first(r.Header[i.header])}
	if id.APIKey != "" && i.keys != nil {
		id.KeyVerified = i.keys.VerifyKey(r.Context(), id.APIKey)
		if !id.KeyVerified {
			id.APIKey = ""
		}
	}
	if i.jwt != nil {
		if h := first(r.Header["Authorization"]); h != "" {
			id.Subject, _ = i.jwt.Subject(h)
		}
	}
	return id
}

// IdentifyDeferIP is Identify leaving Client.IP "" for ClientIP to give
// when it is needed: a policy keyed by API key needs it only to name an
// anonymous client it refuses, and resolving it costs a request that
// does not need it ≈ 30 ns. A request with X-Forwarded-For is resolved
// at once when such requests from untrusted peers are counted
// (Settings.Untrusted), so that each is counted, once.
func (i *identifier) IdentifyDeferIP(r *http.Request) Client {
	id := i.identifyKeys(r)
	if i.untrusted != nil && len(r.Header["X-Forwarded-For"]) > 0 {
		id.IP = i.clientIP(r.RemoteAddr, r.Header)
	}
	return id
}

// PlainKeyHeader is the canonical name of the API key's header when
// identifying a request takes that header alone (no KeyVerifier, no JWT,
// no counting of forwarded headers), else "": a caller may then read the
// key itself, a map lookup, and ask ClientIP for the IP when it needs it.
func (i *identifier) PlainKeyHeader() string {
	if i.keys != nil || i.jwt != nil || i.untrusted != nil {
		return ""
	}
	return i.header
}

// ClientIP is the IP that Identify names r's client by.
func (i *identifier) ClientIP(r *http.Request) string { return i.clientIP(r.RemoteAddr, r.Header) }

// clientIP is ClientKey of the client's resolved address (unknownIP when
// the peer is not an IP), counting an ignored X-Forwarded-For. An IPv4
// peer that is not a trusted proxy is the client, and net/http writes its
// RemoteAddr as ClientKey does: it is read without netip's general parser
// and named by the host part itself; its X-Forwarded-For is looked up only
// to be counted.
func (i *identifier) clientIP(remote string, h http.Header) string {
	if addr, host, ok := parseIPv4Port(remote); ok && !i.ips.Trusted(addr) {
		i.observe(addr, h)
		return host
	}
	addr, trusted, err := i.ips.resolve(remote, h["X-Forwarded-For"])
	if err != nil {
		return unknownIP
	}
	if !trusted {
		i.observe(addr, h)
	}
	return i.clientKey(addr, remote)
}

// observe counts a request from an untrusted peer that sent
// X-Forwarded-For.
func (i *identifier) observe(peer netip.Addr, h http.Header) {
	if i.untrusted != nil && len(h["X-Forwarded-For"]) > 0 {
		i.untrusted.observe(peer)
	}
}

// first is a header's first value, as http.Header.Get gives it.
func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// clientKey is ips.ClientKey(addr), given as the host part of remote (the
// peer, "ip:port") when that is the very text: no string is made for a
// client that is its IPv4 peer.
func (i *identifier) clientKey(addr netip.Addr, remote string) string {
	var buf [64]byte
	k := i.ips.AppendClientKey(buf[:0], addr)
	host := remote
	if j := strings.LastIndexByte(remote, ':'); j >= 0 {
		host = remote[:j]
	}
	if string(k) == host {
		return host
	}
	return string(k)
}
