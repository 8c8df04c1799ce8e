package proxy_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/enforce"
	"github.com/throttledhq/throttled/limiter/identity"
	"github.com/throttledhq/throttled/limiter/pipeline"
	"github.com/throttledhq/throttled/proxy"
)

// echoForwarded is an upstream that answers the X-Forwarded-For it got.
func echoForwarded(t *testing.T) *url.URL {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.Header.Get("X-Forwarded-For"))
	}))
	t.Cleanup(up.Close)
	u, err := url.Parse(up.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// pipe is a pipeline of one tier and no rules: nothing is limited.
func pipe(t *testing.T) *pipeline.Pipeline {
	t.Helper()
	e, err := enforce.New(limiter.NewMemory(), enforce.Policy{Tiers: []enforce.Tier{{Name: "free", Limit: 10,
		Period: time.Second, Burst: 10}}}, enforce.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := pipeline.New(pipeline.Settings{Enforcer: e})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// newProxy is a Proxy to upstream with no rules, trusting trusted.
func newProxy(t *testing.T, upstream *url.URL, trusted ...string) *proxy.Proxy {
	t.Helper()
	p := pipe(t)
	var pfx []netip.Prefix
	for _, s := range trusted {
		x, err := identity.ParsePrefix(s)
		if err != nil {
			t.Fatal(err)
		}
		pfx = append(pfx, x)
	}
	res, err := identity.NewIPResolver(pfx, 0)
	if err != nil {
		t.Fatal(err)
	}
	px, err := proxy.New(proxy.Settings{Upstream: upstream, Pipeline: p, Trusted: res, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return px
}

// TestForwardedFromTrustedProxies: a trusted peer's X-Forwarded-For chain
// is extended, anyone else's replaced by the peer's address; a trusted
// proxy written as an IPv4-mapped prefix trusts the IPv4 peers in it, as
// the identity resolver does (the proxy's own check used to miss them and
// replaced the chain, so the upstream saw the load balancer as the client).
func TestForwardedFromTrustedProxies(t *testing.T) {
	up := echoForwarded(t)
	for _, tc := range []struct {
		name, trusted, peer, want string
	}{
		{"trusted IPv4", "10.0.0.0/8", "10.1.2.3:5000", "203.0.113.9, 10.1.2.3"},
		{"trusted as IPv4-mapped", "::ffff:10.0.0.0/104", "10.1.2.3:5000", "203.0.113.9, 10.1.2.3"},
		{"untrusted", "10.0.0.0/8", "192.0.2.1:5000", "192.0.2.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			px := newProxy(t, up, tc.trusted)
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = tc.peer
			r.Header.Set("X-Forwarded-For", "203.0.113.9")
			w := httptest.NewRecorder()
			px.ServeHTTP(w, r)
			if w.Code != http.StatusOK || w.Body.String() != tc.want {
				t.Fatalf("upstream saw X-Forwarded-For %q (status %d), want %q", w.Body.String(), w.Code, tc.want)
			}
		})
	}
}

// TestBodyLimit: a declared body above MaxBodyBytes is refused with 413
// before the upstream is called; one that grows past it while streaming
// is answered 413 too.
func TestBodyLimit(t *testing.T) {
	up := echoForwarded(t)
	px, err := proxy.New(proxy.Settings{Upstream: up, Pipeline: pipe(t), MaxBodyBytes: 8, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	declared := httptest.NewRequest(http.MethodPost, "/", strings.NewReader("0123456789"))
	streamed := httptest.NewRequest(http.MethodPost, "/", io.NopCloser(strings.NewReader("0123456789")))
	streamed.ContentLength = -1
	for name, r := range map[string]*http.Request{"declared": declared, "streamed": streamed} {
		w := httptest.NewRecorder()
		px.ServeHTTP(w, r)
		if w.Code != http.StatusRequestEntityTooLarge || !strings.Contains(w.Body.String(), `"max_body_bytes":8`) {
			t.Errorf("%s: %d %s, want 413 naming max_body_bytes 8", name, w.Code, w.Body)
		}
	}
}

// TestNewRefusesBadSettings: no upstream, no pipeline or a negative bound
// is an error naming it.
func TestNewRefusesBadSettings(t *testing.T) {
	p := pipe(t)
	u, _ := url.Parse("http://127.0.0.1:1")
	for _, tc := range []struct {
		s    proxy.Settings
		want string
	}{
		{proxy.Settings{Pipeline: p}, "Upstream"},
		{proxy.Settings{Upstream: u}, "Pipeline"},
		{proxy.Settings{Upstream: u, Pipeline: p, Timeout: -1}, "negative"},
	} {
		if _, err := proxy.New(tc.s); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "proxy: ") {
			t.Errorf("New(%+v): %v, want an error naming %s", tc.s, err, tc.want)
		}
	}
}
