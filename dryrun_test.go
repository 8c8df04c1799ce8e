package throttled

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/throttledhq/throttled/config/configtest"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/policy"
)

// TestDryRunFromConfig: the config's dry run reaches the Instance's
// enforcer. With the free tier's multiplier pinned at 0.05 (admission for
// 1 of its 5 a minute), six requests of one free key: without a dry run
// 200, four 503s and a 429; controller.dry_run passes the sheds (counted
// throttled_decisions_total{decision="dry_run_shed"}) and keeps the 429;
// dry_run passes the quota excess too (dry_run_over_quota).
func TestDryRunFromConfig(t *testing.T) {
	for _, tc := range []struct {
		name          string
		top, ctl      bool
		codes         []int
		shed, overDry float64
	}{
		{name: "off", codes: []int{200, 503, 503, 503, 503, 429}},
		{name: "controller.dry_run", ctl: true, codes: []int{200, 200, 200, 200, 200, 429}, shed: 4},
		{name: "dry_run", top: true, codes: []int{200, 200, 200, 200, 200, 200}, shed: 4, overDry: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := configtest.Serve(t, "", "")
			cfg.DryRun, cfg.Controller.DryRun = tc.top, tc.ctl
			reg := prometheus.NewRegistry()
			s, err := New(context.Background(), cfg, Options{Logger: quiet.Logger, Registerer: reg})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			s.mults.setPins(map[string]policy.Pin{"free": {Tier: "free", Multiplier: 0.05, Until: time.Now().Add(time.Hour)}})
			h := s.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
			var codes []int
			for range 6 {
				r := httptest.NewRequest(http.MethodGet, "/", nil)
				r.Header.Set("X-API-Key", "k")
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				codes = append(codes, w.Code)
			}
			if !slices.Equal(codes, tc.codes) {
				t.Errorf("answers %v, want %v", codes, tc.codes)
			}
			admin := httptest.NewServer(s.AdminHandler())
			defer admin.Close()
			_, metrics := testenv.Call(t, http.MethodGet, admin.URL+"/metrics", "")
			for label, want := range map[string]float64{"dry_run_shed": tc.shed, "dry_run_over_quota": tc.overDry} {
				series := `throttled_decisions_total{decision="` + label + `",rule="per-key",tier="free"}`
				if got := testenv.MetricValue(t, metrics, series); got != want {
					t.Errorf("%s = %v, want %v", series, got, want)
				}
			}
		})
	}
}
