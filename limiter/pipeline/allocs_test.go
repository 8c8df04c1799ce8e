package pipeline_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/enforce"
	"github.com/throttledhq/throttled/limiter/pipeline"
)

// headersNonePipeline is a pipeline with only the decision stage, on the
// in-memory store, for one rule per API key whose headers are none.
func headersNonePipeline(t *testing.T) *pipeline.Pipeline {
	t.Helper()
	pl, err := pipeline.New(pipeline.Settings{Enforcer: headersNoneEnforcer(t)})
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

// headersNoneEnforcer decides headersNonePipeline's rule.
func headersNoneEnforcer(t *testing.T) *enforce.Enforcer {
	t.Helper()
	p := enforce.Policy{Tiers: []enforce.Tier{{Name: "free", Limit: 1e9, Period: time.Second, Priority: 1}},
		Rules: []enforce.Rule{{Name: "per-key", Path: "/", Keys: []string{"api_key"}, Headers: enforce.HeadersNone}}}
	e, err := enforce.New(limiter.NewMemory(), p, enforce.Settings{UnassignedKeys: enforce.UnassignedDefaultTier})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestHeadersNoneNoAllocs: the whole request path with only the decision
// stage, on the in-memory store, for a rule whose headers are none,
// allocates nothing of its own (bench http's memory-none): the bucket key
// is made in the pooled call's memory. Nothing is to be put on the answer,
// so the handler answers through the server's writer itself, and ResultOf
// has no decision for it.
func TestHeadersNoneNoAllocs(t *testing.T) {
	pl := headersNonePipeline(t)
	var got http.ResponseWriter
	var res *enforce.Result
	h := pl.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		got, res = w, pipeline.ResultOf(w)
		w.WriteHeader(http.StatusOK)
	}))
	r := httptest.NewRequest("GET", "/hello", nil)
	r.RemoteAddr = "127.0.0.1:54321"
	r.Header.Set("X-API-Key", "k1")
	w := &statusWriter{h: http.Header{}}
	if n := testing.AllocsPerRun(100, func() { h.ServeHTTP(w, r) }); n != 0 {
		t.Errorf("%v allocations per request, want 0", n)
	}
	if got != http.ResponseWriter(w) || res != nil || len(w.h) != 0 {
		t.Fatalf("the handler got writer %T, ResultOf %v, headers %v; want the server's writer, nil and no headers", got, res, w.h)
	}
}

// stringWriter is a statusWriter that takes strings as they are, as
// net/http's response writer does (io.StringWriter).
type stringWriter struct {
	statusWriter
	got string
}

func (w *stringWriter) WriteString(s string) (int, error) {
	w.got = s
	return w.Write(nil)
}

// TestHandlerStringPassesThrough: a handler that answers with
// io.WriteString, as a hello world does, reaches the server's writer's
// WriteString through the pipeline's: its text is not copied into a new
// []byte per request.
func TestHandlerStringPassesThrough(t *testing.T) {
	pl := headersNonePipeline(t)
	const body = "Hello, World! This answer is longer than a small stack buffer's 32 bytes."
	h := pl.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, body) }))
	r := httptest.NewRequest("GET", "/hello", nil)
	r.RemoteAddr = "127.0.0.1:54321"
	r.Header.Set("X-API-Key", "k1")
	w := &stringWriter{statusWriter: statusWriter{h: http.Header{}}}
	if n := testing.AllocsPerRun(100, func() { h.ServeHTTP(w, r) }); n != 0 {
		t.Errorf("%v allocations per request, want 0", n)
	}
	if w.got != body || w.status != http.StatusOK {
		t.Fatalf("the server's writer got %q with status %d; want the body by WriteString and 200", w.got, w.status)
	}
}

// countLast keeps the last request Settings.Requests counted.
type countLast struct{ got string }

func (c *countLast) Count(tier string, code int, reason string) {
	c.got = tier + " " + strconv.Itoa(code) + " " + reason
}

// TestHeadersNoneAnswerCounted: with headers none the handler still
// answers through the pipeline's writer when Settings.Requests counts
// answers: its 503 is counted as the upstream's error.
func TestHeadersNoneAnswerCounted(t *testing.T) {
	var counted countLast
	pl, err := pipeline.New(pipeline.Settings{Enforcer: headersNoneEnforcer(t), Requests: &counted})
	if err != nil {
		t.Fatal(err)
	}
	h := pl.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	r := httptest.NewRequest("GET", "/hello", nil)
	r.RemoteAddr = "127.0.0.1:54321"
	r.Header.Set("X-API-Key", "k1")
	h.ServeHTTP(httptest.NewRecorder(), r)
	if want := "free 503 upstream_error"; counted.got != want {
		t.Errorf("counted %q, want %q", counted.got, want)
	}
}
