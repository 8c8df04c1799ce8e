package enforce_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/enforce"
	"github.com/throttledhq/throttled/limiter/instrument"
)

// TestLimitsInForce: throttled_limit{tier,rule} is every enforced rule's
// limit per second for each tier times the tier's multiplier (a rule's own
// limits: the tightest), the tier cap as tier_admission, no shadow rule
// and no rule of an unlimited tier; and it follows the multipliers and the
// policy at every scrape.
func TestLimitsInForce(t *testing.T) {
	mults := multipliers{"free": 0.5}
	e, err := enforce.New(limiter.NewMemory(), enforce.Policy{
		Tiers: []enforce.Tier{
			{Name: "free", Limit: 60, Period: time.Minute, Burst: 60, Priority: 1},
			{Name: "premium", Limit: 600, Period: time.Minute, Burst: 600},
			{Name: "internal", Limit: 1, Period: time.Second, Burst: 1, Priority: 2, Unlimited: true},
		},
		Rules: []enforce.Rule{
			{Name: "per-key", Path: "/api", Keys: []string{"api_key"}},
			{Name: "export", Path: "/export", Keys: []string{"api_key"}, Limits: []enforce.Limit{
				{Limit: 10, Period: time.Second, Burst: 10}, {Limit: 120, Period: time.Minute, Burst: 120}}},
			{Name: "watch", Path: "/api", Keys: []string{"api_key"}, Mode: enforce.ModeShadow},
		},
	}, enforce.Settings{Multipliers: mults, Rates: rates{"free": 7}})
	if err != nil {
		t.Fatal(err)
	}
	c := instrument.NewLimits(e.Limits)
	want := `# HELP throttled_limit ` + help(t, c) + `
# TYPE throttled_limit gauge
throttled_limit{rule="export",tier="free"} 1
throttled_limit{rule="export",tier="premium"} 2
throttled_limit{rule="per-key",tier="free"} 0.5
throttled_limit{rule="per-key",tier="premium"} 10
throttled_limit{rule="tier_admission",tier="free"} 7
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	mults["free"] = 1
	if err := e.SetPolicy(enforce.Policy{Tiers: []enforce.Tier{{Name: "free", Limit: 5, Period: time.Second, Burst: 5}},
		Rules: []enforce.Rule{{Name: "per-ip", Path: "/", Keys: []string{"ip"}}}}); err != nil {
		t.Fatal(err)
	}
	want = `# HELP throttled_limit ` + help(t, c) + `
# TYPE throttled_limit gauge
throttled_limit{rule="per-ip",tier="free"} 5
throttled_limit{rule="tier_admission",tier="free"} 7
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Errorf("after the policy changed: %v", err)
	}
}

// help is the collector's help text.
func help(t *testing.T, c *instrument.Limits) string {
	t.Helper()
	ch := make(chan *prometheus.Desc, 1)
	c.Describe(ch)
	s := (<-ch).String()
	_, rest, ok := strings.Cut(s, `help: "`)
	h, _, ok2 := strings.Cut(rest, `", `)
	if !ok || !ok2 {
		t.Fatalf("no help in %s", s)
	}
	return h
}
