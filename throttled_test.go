package throttled

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/throttledhq/throttled/config"
	"github.com/throttledhq/throttled/config/configtest"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/policy"
)

var quiet = Options{Logger: slog.New(slog.DiscardHandler)}

// TestNewValidatesAConfigBuiltInCode: New fills the defaults of a Config
// made in code and refuses one with a bad value, naming its path.
func TestNewValidatesAConfigBuiltInCode(t *testing.T) {
	cfg := configtest.Serve(t, "", "")
	cfg.Controller.ErrorRatioTarget = 2
	_, err := New(context.Background(), cfg, quiet)
	if err == nil || !strings.Contains(err.Error(), "controller.error_ratio_target") {
		t.Fatalf("New: %v, want an error naming controller.error_ratio_target", err)
	}
	bare := &config.Config{Admin: config.AdminConfig{Listen: "127.0.0.1:0"},
		Tiers: map[string]policy.Tier{"free": {Rate: 10, Period: policy.Duration(time.Second), Burst: 10}}}
	s, err := New(context.Background(), bare, quiet)
	if err != nil {
		t.Fatalf("New of a zero Config with an admin listener: %v", err)
	}
	_ = s.Close()
	if bare.Concurrency.Target == 0 || bare.Controller.Period == 0 {
		t.Fatalf("defaults not filled: concurrency %+v, controller period %v", bare.Concurrency, bare.Controller.Period)
	}
}

// registererOnly is a prometheus.Registerer that is no Gatherer.
type registererOnly struct{ prometheus.Registerer }

// TestOptionsMetrics: a Registerer that cannot be gathered needs a
// Gatherer (ErrNoGatherer); given both, throttled's metrics land in the
// caller's registry and /metrics serves them.
func TestOptionsMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := New(context.Background(), configtest.Serve(t, "", ""), Options{Registerer: registererOnly{reg}}); !errors.Is(err, ErrNoGatherer) {
		t.Fatalf("New: %v, want ErrNoGatherer", err)
	}
	s, err := New(context.Background(), configtest.Serve(t, "", ""), Options{Logger: quiet.Logger, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := s.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set("X-API-Key", "k")
	h.ServeHTTP(httptest.NewRecorder(), r)
	if n := testutil.ToFloat64(s.answers.requests.WithLabelValues("418")); n != 1 {
		t.Fatalf("throttled_upstream_requests_total{code=418} = %v in the caller's registry, want 1", n)
	}
	if n, err := testutil.GatherAndCount(reg, "throttled_upstream_requests_total"); err != nil || n != 1 {
		t.Fatalf("the caller's registry holds %d series of the answers (%v), want 1", n, err)
	}
	_, metrics := testenv.Call(t, "GET", httptest.NewServer(s.AdminHandler()).URL+"/metrics", "")
	if !strings.Contains(metrics, `throttled_upstream_requests_total{code="418"} 1`) {
		t.Fatalf("/metrics does not serve the caller's registry:\n%.400s", metrics)
	}
}

// TestControllerOnlyServesNoTraffic: an instance made with
// Options.ControllerOnly has no fronts: Proxy says so, Middleware panics.
func TestControllerOnlyServesNoTraffic(t *testing.T) {
	s, err := New(context.Background(), configtest.Serve(t, testenv.Upstream(t).URL, ""),
		Options{Logger: quiet.Logger, ControllerOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Proxy(); !errors.Is(err, ErrControllerOnly) {
		t.Fatalf("Proxy: %v, want ErrControllerOnly", err)
	}
	defer func() {
		if r := recover(); r != ErrControllerOnly {
			t.Fatalf("Middleware: recovered %v, want a panic with ErrControllerOnly", r)
		}
	}()
	s.Middleware(http.NotFoundHandler())
}
