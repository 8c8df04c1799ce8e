package enforce_test

import (
	"net/http"
	"net/http/httptest"
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
