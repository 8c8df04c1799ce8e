package pipeline_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/throttledhq/throttled/bulkhead"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/enforce"
	"github.com/throttledhq/throttled/limiter/pipeline"
)

// A service behind the pipeline: 2 requests a minute per API key, at most
// 8 of the tier's requests in flight, and a breaker per route.
func Example() {
	e, err := enforce.New(limiter.NewMemory(), enforce.Policy{
		Tiers: []enforce.Tier{{Name: "free", Limit: 2, Period: time.Minute, Burst: 2}},
		Rules: []enforce.Rule{{Name: "per-key", Path: "/api", Keys: []string{"header:X-API-Key"}}},
	}, enforce.Settings{})
	if err != nil {
		panic(err)
	}
	free, _ := bulkhead.New("tier:free", bulkhead.Settings{Limit: 8}, nil)
	breakers, _ := bulkhead.NewBreakerSet(bulkhead.BreakerSettings{Deadline: time.Second}, nil)
	p, err := pipeline.New(pipeline.Settings{Enforcer: e,
		Bulkheads: map[string]*bulkhead.Bulkhead{"free": free},
		Breakers:  breakers, BreakerRoutes: []string{"/api"}})
	if err != nil {
		panic(err)
	}
	h := p.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "hello") }))
	for range 3 {
		req := httptest.NewRequest(http.MethodGet, "/api/items", nil)
		req.Header.Set("X-API-Key", "k1")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Println(rec.Code, rec.Header().Get(enforce.HeaderRemaining))
	}
	// Output:
	// 200 1
	// 200 0
	// 429 0
}
