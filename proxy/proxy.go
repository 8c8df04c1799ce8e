package proxy

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/throttledhq/throttled/limiter/enforce"
	"github.com/throttledhq/throttled/limiter/identity"
	"github.com/throttledhq/throttled/limiter/instrument"
	"github.com/throttledhq/throttled/limiter/pipeline"
)

// Defaults of the zero Settings fields.
const (
	DefaultMaxBodyBytes = 10 << 20
	DefaultTimeout      = 30 * time.Second
)

// Settings are a Proxy's. Upstream and Pipeline are required; every other
// zero value means its default.
type Settings struct {
	Upstream *url.URL
	Pipeline *pipeline.Pipeline
	// Timeout bounds the wait for the upstream's response headers, so that
	// a hung upstream cannot hold a permit forever (504). Zero:
	// DefaultTimeout.
	Timeout time.Duration
	// MaxBodyBytes bounds a request's body (413). Zero: DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Trusted says which peers' X-Forwarded-* to keep (its Trusted
	// prefixes). Nil: nobody's.
	Trusted *identity.IPResolver
	// Inject writes the trace context of ctx into the upstream request's
	// headers, so that the upstream's spans continue ours. Nil: none.
	Inject func(ctx context.Context, h http.Header)
	// Logger gets one warning per failed upstream call. Nil: slog.Default().
	Logger *slog.Logger
	// Transport reaches the upstream. Nil: a transport that keeps enough
	// idle connections to the one upstream host for the requests in flight
	// and gives up on response headers after Timeout.
	Transport http.RoundTripper
}

// Proxy is an http.Handler: the pipeline, then the upstream.
type Proxy struct {
	s     Settings
	inner http.Handler
}

// New checks s and returns its Proxy.
func New(s Settings) (*Proxy, error) {
	if s.Upstream == nil || s.Upstream.Host == "" {
		return nil, errors.New("proxy: Settings.Upstream: want a URL with a host")
	}
	if s.Pipeline == nil {
		return nil, errors.New("proxy: Settings.Pipeline is required")
	}
	if s.Timeout < 0 || s.MaxBodyBytes < 0 {
		return nil, errors.New("proxy: Settings.Timeout and MaxBodyBytes must not be negative")
	}
	setDefault(&s.Timeout, DefaultTimeout)
	setDefault(&s.MaxBodyBytes, DefaultMaxBodyBytes)
	if s.Logger == nil {
		s.Logger = slog.Default()
	}
	if s.Transport == nil {
		s.Transport = transport(s.Timeout)
	}
	p := &Proxy{s: s}
	rp := &httputil.ReverseProxy{Rewrite: p.rewrite, Transport: s.Transport,
		ModifyResponse: upgradeOursWin, ErrorHandler: p.upstreamError}
	p.inner = s.Pipeline.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "" && pipeline.ResultOf(w) != nil { // see upgradeOursWin
			r = r.WithContext(context.WithValue(r.Context(), limitedKey{}, true))
		}
		rp.ServeHTTP(w, r)
	}))
	return p, nil
}

func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// ServeHTTP bounds the body, then runs the pipeline and the upstream.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength > p.s.MaxBodyBytes { // declared: refused before a rule counts it
		refuseBody(w, p.s.MaxBodyBytes)
		p.s.Pipeline.Count("", http.StatusRequestEntityTooLarge, instrument.ReasonInvalid)
		return
	}
	r, release := limitBody(w, r, p.s.MaxBodyBytes)
	defer release()
	p.inner.ServeHTTP(w, r)
}

// transport keeps enough idle connections to the one upstream host for the
// requests in flight (net/http's default keeps 2, so a busy sidecar would
// dial for almost every request), and gives up on an upstream that has not
// answered (headers) within timeout.
func transport(timeout time.Duration) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns, t.MaxIdleConnsPerHost = 1024, 1024
	t.ResponseHeaderTimeout = timeout
	return t
}

// rewrite points a request at the upstream with X-Forwarded-*: from a
// trusted proxy the incoming X-Forwarded-For chain is extended (and its
// X-Forwarded-Host and -Proto kept), from anyone else it is replaced by the
// peer's address.
func (p *Proxy) rewrite(pr *httputil.ProxyRequest) {
	pr.SetURL(p.s.Upstream)
	if p.s.Inject != nil {
		p.s.Inject(pr.Out.Context(), pr.Out.Header)
	}
	if !p.fromTrusted(pr.In.RemoteAddr) {
		pr.SetXForwarded()
		return
	}
	in := pr.In.Header
	if xff := in.Values("X-Forwarded-For"); len(xff) > 0 {
		pr.Out.Header["X-Forwarded-For"] = []string{strings.Join(xff, ", ")}
	}
	pr.SetXForwarded()
	for _, h := range []string{"X-Forwarded-Host", "X-Forwarded-Proto"} {
		if v := in.Get(h); v != "" {
			pr.Out.Header.Set(h, v)
		}
	}
}

// fromTrusted reports whether the peer at addr (host:port) is a trusted
// proxy, by the identity resolver's own rule.
func (p *Proxy) fromTrusted(addr string) bool {
	if p.s.Trusted == nil {
		return false
	}
	ap, err := netip.ParseAddrPort(addr)
	return err == nil && p.s.Trusted.Trusted(ap.Addr())
}

type limitedKey struct{}

// upgradeOursWin drops the upstream's rate-limit headers from its 101 to a
// limited request: ReverseProxy adds the upstream's headers to the
// client's after it hijacks the connection, when the pipeline has put ours
// there, so only this keeps the client from seeing two of each. Every
// other answer gets ours in place of the upstream's from the pipeline.
func upgradeOursWin(resp *http.Response) error {
	if resp.StatusCode == http.StatusSwitchingProtocols && resp.Request.Context().Value(limitedKey{}) != nil {
		for _, h := range []string{enforce.HeaderLimit, enforce.HeaderRemaining, enforce.HeaderReset,
			enforce.HeaderPolicy, enforce.HeaderRateLimit, enforce.HeaderRetryAfter} {
			resp.Header.Del(h)
		}
	}
	return nil
}

// upstreamError answers a failed upstream call: 413 when the request's
// body passed MaxBodyBytes, 504 when no response headers came in time,
// 502 otherwise.
func (p *Proxy) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	if tooBig := (*http.MaxBytesError)(nil); errors.As(context.Cause(r.Context()), &tooBig) {
		refuseBody(w, tooBig.Limit)
		return
	}
	p.s.Logger.Warn("upstream", "err", err)
	code, msg := upstreamFailure(err)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(`{"error":"` + msg + `","reason":"upstream_error"}` + "\n"))
}

// upstreamFailure is the status and the client's account of a failed
// upstream call: what failed, in a few fixed words that name no address
// (the log has the whole error).
func upstreamFailure(err error) (int, string) {
	var ne net.Error
	var dns *net.DNSError
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return http.StatusGatewayTimeout, "upstream sent no response headers in time"
	case errors.Is(err, syscall.ECONNREFUSED):
		return http.StatusBadGateway, "upstream unreachable: connection refused"
	case errors.As(err, &dns):
		return http.StatusBadGateway, "upstream unreachable: host not found"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return http.StatusBadGateway, "upstream closed the connection before answering"
	}
	return http.StatusBadGateway, "upstream request failed"
}
