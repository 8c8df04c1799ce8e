package pipeline_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/throttledhq/throttled/bulkhead"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/echolimit"
	"github.com/throttledhq/throttled/limiter/enforce"
	"github.com/throttledhq/throttled/limiter/instrument"
	"github.com/throttledhq/throttled/limiter/pipeline"
)

// statusWriter keeps one header map and the status written, so that the
// benchmark measures the pipeline rather than a recorder.
type statusWriter struct {
	h      http.Header
	status int
}

func (w *statusWriter) Header() http.Header  { return w.h }
func (w *statusWriter) WriteHeader(code int) { w.status = code }
func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	return len(b), nil
}

// benchEnforcer has BenchmarkMiddleware's policy (limiter/enforce): two
// rules, per API key and per IP, on the in-memory store, with a limit of
// limit a second.
func benchEnforcer(b *testing.B, limit int64) *enforce.Enforcer {
	p := enforce.Policy{
		Tiers: []enforce.Tier{{Name: "free", Limit: limit, Period: time.Second, Priority: 1}},
		Rules: []enforce.Rule{
			{Name: "per-key", Path: "/", Keys: []string{"header:X-API-Key"}},
			{Name: "per-ip", Path: "/", Keys: []string{"ip"}},
		},
	}
	e, err := enforce.New(limiter.NewMemory(), p, enforce.Settings{})
	if err != nil {
		b.Fatal(err)
	}
	return e
}

// allStages adds every stage after the decision to s, none of them full.
func allStages(b *testing.B, s pipeline.Settings) pipeline.Settings {
	g, err := bulkhead.NewGate("upstream", bulkhead.GateSettings{Limit: 1 << 20}, nil)
	if err != nil {
		b.Fatal(err)
	}
	bh, err := bulkhead.New("tier:free", bulkhead.Settings{Limit: 1 << 20}, nil)
	if err != nil {
		b.Fatal(err)
	}
	set, err := bulkhead.NewBreakerSet(bulkhead.BreakerSettings{Deadline: time.Minute}, nil)
	if err != nil {
		b.Fatal(err)
	}
	s.Gate, s.Bulkheads, s.Breakers, s.BreakerRoutes = g, map[string]*bulkhead.Bulkhead{"free": bh}, set, []string{"/v1"}
	s.Answers = histogramObserver{prometheus.NewHistogram(prometheus.HistogramOpts{Name: "admitted"})}
	req, err := instrument.NewRequests(nil)
	if err != nil {
		b.Fatal(err)
	}
	s.Requests = req
	return s
}

func mustPipeline(b *testing.B, s pipeline.Settings) *pipeline.Pipeline {
	p, err := pipeline.New(s)
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkPipeline is the request path on the in-memory store beside the
// decision alone (enforce.Middleware): an admitted request through the
// decision stage only and through every stage (gate, bulkhead, breaker,
// Answers), on net/http and Echo, and a request refused with 429.
func BenchmarkPipeline(b *testing.B) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	admit, refuse := benchEnforcer(b, 1e11), benchEnforcer(b, 1)
	decision := mustPipeline(b, pipeline.Settings{Enforcer: admit})
	full := mustPipeline(b, allStages(b, pipeline.Settings{Enforcer: admit}))
	onEcho := func(p *pipeline.Pipeline) http.Handler {
		e := echo.New()
		e.Use(echolimit.Middleware(p))
		e.GET("/v1/items", echo.WrapHandler(ok))
		return e
	}
	for _, c := range []struct {
		name   string
		h      http.Handler
		status int
	}{
		{"admitted/enforce.Middleware", admit.Middleware(ok), 200},
		{"admitted/decision", decision.Handler(ok), 200},
		{"admitted/all-stages", full.Handler(ok), 200},
		{"admitted/echo/decision", onEcho(decision), 200},
		{"admitted/echo/all-stages", onEcho(full), 200},
		{"refused429/enforce.Middleware", refuse.Middleware(ok), 429},
		{"refused429/decision", mustPipeline(b, pipeline.Settings{Enforcer: refuse}).Handler(ok), 429},
	} {
		b.Run(c.name, func(b *testing.B) {
			req := httptest.NewRequest("GET", "/v1/items", nil)
			req.Header.Set("X-API-Key", "bench-key")
			w := &statusWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				w.status = 0
				c.h.ServeHTTP(w, req)
			}
			if w.status != c.status || w.h.Get(enforce.HeaderRemaining) == "" {
				b.Fatalf("status %d, X-RateLimit-Remaining %q: want %d with rate-limit headers", w.status, w.h.Get(enforce.HeaderRemaining), c.status)
			}
		})
	}
}

// histogramObserver observes the admitted time in a histogram, as the
// product's upstream metrics do.
type histogramObserver struct{ h prometheus.Histogram }

func (o histogramObserver) Answered(_ int, admitted, _ time.Duration) {
	o.h.Observe(admitted.Seconds())
}
