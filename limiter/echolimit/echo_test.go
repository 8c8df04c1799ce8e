package echolimit_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/throttledhq/throttled/bulkhead"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/echolimit"
	"github.com/throttledhq/throttled/limiter/enforce"
	"github.com/throttledhq/throttled/limiter/pipeline"
)

// newApp is an Echo app behind a pipeline with a 3-a-minute rule on /api and
// a breaker that opens on the second failure in a row; seen records the
// status that a middleware before the pipeline sees, and what its next
// returned.
func newApp(t *testing.T, handler echo.HandlerFunc) (app *echo.Echo, seen *[]string) {
	t.Helper()
	e, err := enforce.New(limiter.NewMemory(), enforce.Policy{
		Tiers: []enforce.Tier{{Name: "free", Limit: 3, Period: time.Minute, Burst: 3}},
		Rules: []enforce.Rule{{Name: "per-ip", Path: "/api", Keys: []string{"ip"}}},
	}, enforce.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	set, err := bulkhead.NewBreakerSet(bulkhead.BreakerSettings{ConsecutiveFailures: 2, OpenTimeout: time.Hour, Deadline: time.Minute}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := pipeline.New(pipeline.Settings{Enforcer: e, Breakers: set})
	if err != nil {
		t.Fatal(err)
	}
	seen = new([]string)
	app = echo.New()
	app.Use(func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			resp := c.Response()
			err := next(c)
			if c.Response() != resp {
				t.Error("the pipeline left its own Response in the context")
			}
			*seen = append(*seen, http.StatusText(resp.Status)+" "+errText(err))
			return err
		}
	})
	app.Use(echolimit.Middleware(p))
	app.GET("/api", handler)
	return app, seen
}

func errText(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}

func get(app http.Handler) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	app.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api", nil))
	return rec
}

// An error the handler returns goes through Echo's error handler within
// the pipeline: the answer it writes carries the rate-limit headers, the
// breaker counts its status (5xx: a failure), and the middleware before
// sees that status and no error.
func TestHandlerErrorsCountByTheirStatus(t *testing.T) {
	app, seen := newApp(t, func(echo.Context) error { return echo.NewHTTPError(http.StatusInternalServerError, "boom") })
	for i := range 2 {
		rec := get(app)
		if rec.Code != 500 || !strings.Contains(rec.Body.String(), "boom") || rec.Header().Get(enforce.HeaderLimit) != "3" {
			t.Fatalf("error %d: %d %q, X-RateLimit-Limit %q: want Echo's 500 with ours", i, rec.Code, rec.Body, rec.Header().Get(enforce.HeaderLimit))
		}
	}
	rec := get(app)
	if rec.Code != 503 || !strings.Contains(rec.Body.String(), `"reason":"breaker_open"`) ||
		!strings.Contains(rec.Body.String(), `"rule":"upstream:default"`) || rec.Header().Get(enforce.HeaderLimit) != "" {
		t.Fatalf("after 2 errors: %d %q, want 503 breaker_open by upstream:default without rate-limit headers", rec.Code, rec.Body)
	}
	want := "Internal Server Error nil,Internal Server Error nil,Service Unavailable nil"
	if got := strings.Join(*seen, ","); got != want {
		t.Errorf("the middleware before saw %q, want %q", got, want)
	}
}

// A 4xx error is the client's: the breaker stays closed. The refusal of
// the rules goes through Echo's Response too.
func TestClientErrorsDoNotOpenTheBreaker(t *testing.T) {
	app, seen := newApp(t, func(echo.Context) error { return echo.ErrNotFound })
	for i := range 3 {
		if rec := get(app); rec.Code != 404 || rec.Header().Get(enforce.HeaderRemaining) != strconv.Itoa(2-i) {
			t.Fatalf("call %d: %d, X-RateLimit-Remaining %q", i, rec.Code, rec.Header().Get(enforce.HeaderRemaining))
		}
	}
	if rec := get(app); rec.Code != 429 || !strings.Contains(rec.Body.String(), `"reason":"over_quota"`) {
		t.Fatalf("over quota: %d %q, want 429 over_quota (the breaker closed)", rec.Code, rec.Body)
	}
	want := "Not Found nil,Not Found nil,Not Found nil,Too Many Requests nil"
	if got := strings.Join(*seen, ","); got != want {
		t.Errorf("the middleware before saw %q, want %q", got, want)
	}
}
