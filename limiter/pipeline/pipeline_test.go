package pipeline_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/throttledhq/throttled/bulkhead"
	"github.com/throttledhq/throttled/limiter/pipeline"
)

func TestNewChecksSettings(t *testing.T) {
	set, err := bulkhead.NewBreakerSet(bulkhead.BreakerSettings{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t)
	f.build(netHTTP{})
	for _, tc := range []struct {
		s    pipeline.Settings
		want string
	}{
		{pipeline.Settings{}, "pipeline: Settings.Enforcer is required"},
		{pipeline.Settings{Enforcer: f.s.Enforcer, Breakers: set, BreakerRoutes: []string{"/a", ""}}, "pipeline: Settings.BreakerRoutes: empty pattern"},
	} {
		if _, err := pipeline.New(tc.s); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v): %v, want %q", tc.s, err, tc.want)
		}
	}
}

// A handler reads its request's decision from the writer it was given,
// through any in-process front (and the breaker's writer); nil when no rule
// applied.
func TestResultOf(t *testing.T) {
	for _, fr := range []front{netHTTP{}, echoFront{}} {
		t.Run(fr.name(), func(t *testing.T) {
			f := newFixture(t)
			breakers(time.Minute)(f)
			var got []string
			f.serve(fr, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				seen := "none"
				if res := pipeline.ResultOf(w); res != nil {
					seen = res.Tier + " " + res.Rule
				}
				got = append(got, seen)
			}))
			f.get("/api/items", 1)
			f.get("/health", 1)
			if strings.Join(got, ",") != "free per-key,none" {
				t.Errorf("ResultOf saw %q, want [free per-key none]", got)
			}
		})
	}
}
