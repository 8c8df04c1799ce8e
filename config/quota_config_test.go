package config

import (
	"strings"
	"testing"
	"time"

	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/enforce"
	"github.com/throttledhq/throttled/policy"
)

// quotaConfig has every quota field of issue 15: several limits with a
// calendar day, a calendar-month tier, an unlimited tier, hidden headers.
const quotaConfig = `admin:
  tokens:
    write: change-me
tiers:
  free:     { rate: 1000, period: 1mo, algorithm: fixed_window, align: calendar, priority: 1 }
  internal: { rate: 10, period: 1s, unlimited: true, priority: 0 }
rules:
  - name: api
    match: { path: / }
    key: api_key
    hide_client_headers: true
    limits:
      - { limit: 10, period: 1s }
      - { algorithm: fixed_window, limit: 10000, period: 24h, align: calendar }
`

// TestConfigQuotaFields: the file's quota fields reach the enforcer's
// policy.
func TestConfigQuotaFields(t *testing.T) {
	c, err := Parse([]byte(quotaConfig), nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Compile(c.Policy())
	if err != nil {
		t.Fatal(err)
	}
	free, internal, r := p.Tiers[0], p.Tiers[1], p.Rules[0]
	if free.Align != limiter.AlignCalendar || free.Period != limiter.Month || internal.Unlimited != true || free.Unlimited {
		t.Fatalf("tiers %+v", p.Tiers)
	}
	want := []enforce.Limit{{Limit: 10, Period: time.Second},
		{Algorithm: limiter.FixedWindow, Limit: 10000, Period: limiter.Day, Align: limiter.AlignCalendar}}
	if !r.HideHeaders || len(r.Limits) != 2 || r.Limits[0] != want[0] || r.Limits[1] != want[1] {
		t.Fatalf("rule %+v", r)
	}
}

// TestConfigQuotaErrors: a bad quota field is reported at its YAML path
// and line, in words.
func TestConfigQuotaErrors(t *testing.T) {
	cases := []struct{ name, edit, want string }{
		{"calendar token bucket", strings.Replace(quotaConfig, "algorithm: fixed_window, align: calendar, priority: 1",
			"align: calendar, priority: 1", 1), "line 5: tiers.free.align: calendar windows need algorithm fixed_window"},
		{"calendar 2h", strings.Replace(quotaConfig, "limit: 10000, period: 24h", "limit: 10000, period: 2h", 1),
			"line 14: rules[0].limits[1].period: 2h: calendar windows are 1m, 1h, 24h or 1mo"},
		{"limit and limits", strings.Replace(quotaConfig, "    hide_client_headers: true\n",
			"    limit: 5\n    hide_client_headers: true\n", 1), "line 11: rules[0].limit: set with limits"},
		{"bad align", strings.Replace(quotaConfig, "align: calendar }", "align: daily }", 1),
			`rules[0].limits[1].align: "daily": want period or calendar`},
		{"bad unlimited", strings.Replace(quotaConfig, "unlimited: true", "unlimited: maybe", 1), "unlimited"},
		{"unmatched_tier naming no tier", quotaConfig + "unmatched_tier: gold\n", `unmatched_tier: no tier named "gold"`},
	}
	for _, tc := range cases {
		_, err := Parse([]byte(tc.edit), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.want)
		}
	}
}
