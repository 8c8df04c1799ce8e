package enforce_test

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/enforce"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

func TestDecisionOnRequestSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	e, err := enforce.New(limiter.NewMemory(), enforce.Policy{Tiers: testTiers, Rules: []enforce.Rule{
		{Name: "per-ip", Path: "/", Keys: []string{"ip"}, Limit: 1, Period: time.Minute},
	}}, enforce.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		ctx, span := tp.Tracer("test").Start(t.Context(), "request")
		req := httptest.NewRequest("GET", "/", nil).WithContext(ctx)
		e.Middleware(okHandler()).ServeHTTP(httptest.NewRecorder(), req)
		span.End()
	}
	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans", len(spans))
	}
	for i, want := range []string{"allowed", "over_quota"} {
		attrs := map[string]string{}
		for _, kv := range spans[i].Attributes() {
			attrs[string(kv.Key)] = kv.Value.String()
		}
		if attrs["throttled.decision"] != want || attrs["throttled.rule"] != "per-ip" ||
			attrs["throttled.tier"] != "free" || attrs["throttled.remaining"] != "0" {
			t.Errorf("span %d attributes %v, want decision %s", i, attrs, want)
		}
	}
}
