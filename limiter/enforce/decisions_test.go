package enforce_test

import (
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/enforce"
)

// decisionCounts records Settings.Decisions as "tier/rule/decision" → n.
type decisionCounts struct {
	mu sync.Mutex
	m  map[string]int
}

func (d *decisionCounts) Count(tier, rule, decision string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil {
		d.m = map[string]int{}
	}
	d.m[tier+"/"+rule+"/"+decision]++
}

func (d *decisionCounts) get() map[string]int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return maps.Clone(d.m)
}

// refusalLines records Settings.RefusalLog calls.
type refusalLines struct{ lines []string }

func (r *refusalLines) Refused(tier, rule, reason, client string) {
	r.lines = append(r.lines, strings.Join([]string{tier, rule, reason, client}, " "))
}

// TestDecisionsAsClientsSawThem: each rule's decisions are counted as the
// client saw them. A shadow rule's refusals passed (shadow_over_quota, no
// over_quota); a delay rule's held-then-admitted requests are delayed, its
// intermediate store refusals are not counted, and a wait past max_wait is
// a real over_quota; a tier cap's refusal is shed. Only real refusals
// reach the refusal log, the client by its top-K key.
func TestDecisionsAsClientsSawThem(t *testing.T) {
	for _, tc := range []struct {
		name     string
		rule     enforce.Rule
		rates    rates
		requests int
		want     map[string]int
		log      []string
	}{
		{name: "shadow", requests: 5,
			rule: enforce.Rule{Name: "trial", Path: "/", Keys: []string{"ip"}, Limit: 2, Period: time.Minute, Mode: enforce.ModeShadow},
			want: map[string]int{"free/trial/allowed": 2, "free/trial/shadow_over_quota": 3}},
		{name: "shadow shed", requests: 2,
			rule:  enforce.Rule{Name: "trial", Path: "/", Keys: []string{"ip"}, Mode: enforce.ModeShadow},
			rates: nil, // the tier's quota (3/min) at multiplier 0.4: one admitted
			want:  map[string]int{"free/trial/allowed": 1, "free/trial/shadow_shed": 1}},
		{name: "delay", requests: 3, // burst 1 at 10/s: two wait 100 ms each, within 250 ms
			rule: enforce.Rule{Name: "smooth", Path: "/", Keys: []string{"ip"}, Limit: 10, Period: time.Second, Burst: 1,
				Mode: enforce.ModeDelay, MaxWait: 250 * time.Millisecond},
			want: map[string]int{"free/smooth/allowed": 1, "free/smooth/delayed": 2}},
		{name: "delay past max_wait", requests: 2,
			rule: enforce.Rule{Name: "smooth", Path: "/", Keys: []string{"ip"}, Limit: 10, Period: time.Second, Burst: 1,
				Mode: enforce.ModeDelay, MaxWait: 50 * time.Millisecond},
			want: map[string]int{"free/smooth/allowed": 1, "free/smooth/over_quota": 1},
			log:  []string{"free smooth over_quota ip:192.0.2.1"}},
		{name: "tier cap", requests: 2, rates: rates{"free": 1},
			rule: enforce.Rule{Name: "per-ip", Path: "/", Keys: []string{"ip"}, Limit: 10, Period: time.Second},
			want: map[string]int{"free/per-ip/allowed": 2, "free/tier_admission/allowed": 1, "free/tier_admission/shed": 1},
			log:  []string{"free tier_admission shed "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := &fakeSleep{now: t0}
			var counts decisionCounts
			var log refusalLines
			s := enforce.Settings{Now: fs.Now, Sleep: fs.Sleep, Decisions: &counts, RefusalLog: &log}
			if tc.rates != nil {
				s.Rates = tc.rates
			}
			if tc.name == "shadow shed" {
				s.Multipliers = multipliers{"free": 0.4}
			}
			e, err := enforce.New(limiter.NewMemory(limiter.WithClock(fs.Now)),
				enforce.Policy{Tiers: testTiers, Rules: []enforce.Rule{tc.rule}}, s)
			if err != nil {
				t.Fatal(err)
			}
			h := e.Middleware(okHandler())
			for range tc.requests {
				get(t, h, "/")
			}
			if got := counts.get(); !maps.Equal(got, tc.want) {
				t.Errorf("decisions %v, want %v", got, tc.want)
			}
			if strings.Join(log.lines, "\n") != strings.Join(tc.log, "\n") {
				t.Errorf("refusal log %q, want %q", log.lines, tc.log)
			}
		})
	}
}

// TestCheckKeysCountsDecisions: the gateway checks count as the
// middleware's do, and a refused API key reaches the log as its top-K key
// (a fingerprint), never as itself.
func TestCheckKeysCountsDecisions(t *testing.T) {
	var counts decisionCounts
	var log refusalLines
	e := checkEnforcer(t, limiter.NewMemory(), enforce.Settings{Decisions: &counts, RefusalLog: &log})
	for range 4 {
		if _, err := e.CheckKeys(t.Context(), []enforce.Query{{Rule: "per-key", Key: "secret-key"}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	got := counts.get()
	if got["free/per-key/allowed"] != 3 || got["free/per-key/over_quota"] != 1 || len(got) != 2 {
		t.Errorf("decisions %v, want 3 allowed and 1 over_quota for free/per-key", got)
	}
	if len(log.lines) != 1 || strings.Contains(log.lines[0], "secret-key") || !strings.HasPrefix(log.lines[0], "free per-key over_quota key:") {
		t.Errorf("refusal log %q, want one over_quota line with the key's fingerprint", log.lines)
	}
}
