package enforce_test

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"strconv"
	"testing"
	"time"

	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/enforce"
)

// discardWriter is a ResponseWriter that keeps one header map, so the
// benchmark measures the middleware rather than the recorder.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(int)             {}

// BenchmarkMiddleware is the enforcement hot path on the in-memory store:
// identify, resolve the tier, two rules (per API key and per IP), headers.
func BenchmarkMiddleware(b *testing.B) {
	p := enforce.Policy{
		Tiers: []enforce.Tier{{Name: "free", Limit: 1e11, Period: time.Second, Priority: 1}},
		Rules: []enforce.Rule{
			{Name: "per-key", Path: "/", Keys: []string{"header:X-API-Key"}},
			{Name: "per-ip", Path: "/", Keys: []string{"ip"}},
		},
	}
	e, err := enforce.New(limiter.NewMemory(), p, enforce.Settings{Identifier: apiKeyIdentifier{}})
	if err != nil {
		b.Fatal(err)
	}
	h := e.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	req := httptest.NewRequest("GET", "/v1/items", nil)
	req.Header.Set("X-API-Key", "bench-key")
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.ServeHTTP(w, req)
	}
	if w.h.Get(enforce.HeaderLimit) == "" {
		b.Fatal("no rate-limit headers: the rules did not apply")
	}
}

// BenchmarkMiddlewareHTTP is the middleware as `throttled bench http`
// serves it: the default identifier, one rule per API key at the default
// tier, 1000 keys in turn, a peer on loopback, and a hello world that sets
// a header. "none" is the hello world alone: the middleware costs the
// difference.
func BenchmarkMiddlewareHTTP(b *testing.B) {
	e := benchHTTPEnforcer(b)
	body := []byte("Hello, World!")
	hello := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write(body)
	})
	reqs := make([]*http.Request, 1000)
	for i := range reqs {
		reqs[i] = httptest.NewRequest("GET", "/hello", nil)
		reqs[i].RemoteAddr = "127.0.0.1:54321"
		reqs[i].Header.Set("X-API-Key", "k"+strconv.Itoa(i))
	}
	for _, c := range []struct {
		name  string
		h     http.Handler
		limit bool
	}{{"none", hello, false}, {"memory", e.Middleware(hello), true}} {
		b.Run(c.name, func(b *testing.B) {
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				clear(w.h) // a fresh response's headers (keeping the map's room)
				c.h.ServeHTTP(w, reqs[i%len(reqs)])
			}
			if limited := w.h.Get(enforce.HeaderRemaining) != ""; limited != c.limit {
				b.Fatalf("rate-limit headers %v, want %v", limited, c.limit)
			}
		})
	}
}

// BenchmarkHeadersOnTheWire is what net/http does with a response's
// headers beyond the middleware, with the rate-limit headers (memory) and
// without (none), as BenchmarkMiddlewareHTTP serves them: the server
// writes them (Header.Write, the sort and write of every response) and a
// Go client, such as bench http's, parses them (textproto.ReadMIMEHeader).
func BenchmarkHeadersOnTheWire(b *testing.B) {
	e := benchHTTPEnforcer(b)
	hello := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
	})
	req := httptest.NewRequest("GET", "/hello", nil)
	req.RemoteAddr = "127.0.0.1:54321"
	req.Header.Set("X-API-Key", "k1")
	for _, c := range []struct {
		name  string
		h     http.Handler
		limit bool
	}{{"none", hello, false}, {"memory", e.Middleware(hello), true}} {
		rec := httptest.NewRecorder()
		c.h.ServeHTTP(rec, req)
		h := rec.Header()
		if limited := h.Get(enforce.HeaderRemaining) != ""; limited != c.limit {
			b.Fatalf("%s: rate-limit headers %v, want %v", c.name, limited, c.limit)
		}
		b.Run(c.name+"/write", func(b *testing.B) {
			w := bufio.NewWriter(io.Discard)
			b.ReportAllocs()
			for b.Loop() {
				_ = h.Write(w)
				_ = w.Flush()
			}
		})
		var raw bytes.Buffer
		raw.WriteString("HTTP/1.1 200 OK\r\n")
		_ = h.Write(&raw)
		raw.WriteString("\r\n")
		b.Run(c.name+"/parse", func(b *testing.B) {
			r := bytes.NewReader(raw.Bytes())
			br := bufio.NewReader(r)
			b.ReportAllocs()
			for b.Loop() {
				r.Reset(raw.Bytes())
				br.Reset(r)
				tp := textproto.NewReader(br)
				if _, err := tp.ReadLine(); err != nil {
					b.Fatal(err)
				}
				if _, err := tp.ReadMIMEHeader(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchHTTPEnforcer is the enforcer of `throttled bench http`: one rule
// per API key, unassigned keys at the default tier, a quota no client
// reaches, the in-memory store.
func benchHTTPEnforcer(tb testing.TB) *enforce.Enforcer {
	tb.Helper()
	p := enforce.Policy{
		Tiers: []enforce.Tier{{Name: "free", Limit: 1e9, Period: time.Second, Priority: 1}},
		Rules: []enforce.Rule{{Name: "per-key", Path: "/", Keys: []string{"api_key"}}},
	}
	e, err := enforce.New(limiter.NewMemory(), p, enforce.Settings{UnassignedKeys: enforce.UnassignedDefaultTier})
	if err != nil {
		tb.Fatal(err)
	}
	return e
}
