package config

import (
	"strings"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter/enforce"
	"github.com/throttledhq/throttled/policy"
)

func TestReadmeConfigParses(t *testing.T) {
	c, err := Parse([]byte(testenv.ReadmeConfig), nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Tiers["free"].Rate != 10 || c.Tiers["premium"].Period.D() != time.Second || len(c.Rules) != 2 ||
		c.Rules[0].Key[0] != "header:X-API-Key" || c.Admin.Tokens["write"] != "change-me" {
		t.Fatalf("parsed %+v", c)
	}
	// Defaults were filled in one place.
	if c.Controller.Period.D() != 5*time.Second || c.Fallback.Deadline.D() != 50*time.Millisecond {
		t.Fatalf("defaults: %+v %+v", c.Controller, c.Fallback)
	}
	p, err := policy.Compile(c.Policy())
	if err != nil || p.Validate() != nil || len(p.Tiers) != 2 {
		t.Fatalf("policy %+v: %v", p, err)
	}
	if u := UnassignedKeysOf(&c.Identity); u != enforce.UnassignedAnonymous {
		t.Fatalf("identity.unassigned_keys defaults to %v, want anonymous", u)
	}
}

func TestConfigErrorsCarryLines(t *testing.T) {
	cases := []struct {
		name, edit, want string
	}{
		{"unknown key", "listen: 127.0.0.1:8080\nlisten_typo: x\n", "unknown key"},
		{"bad rate", strings.Replace(testenv.ReadmeConfig, "rate: 10,", "rate: -1,", 1), "line 10: tiers.free.rate"},
		{"bad key source", strings.Replace(testenv.ReadmeConfig, "key: ip", "key: cookie", 1), "line 19"},
		{"bad duration", strings.Replace(testenv.ReadmeConfig, "period: 1s, burst: 100", "period: soon, burst: 100", 1), "soon"},
		{"bad upstream", strings.Replace(testenv.ReadmeConfig, "http://127.0.0.1:8081", "ftp://x", 1), "line 2: upstream"},
		{"bad token role", strings.Replace(testenv.ReadmeConfig, "write: change-me", "admin: change-me", 1), "line 6: admin.tokens.admin"},
		{"bad unassigned_keys", strings.Replace(testenv.ReadmeConfig, "trusted_proxies: []", "trusted_proxies: []\n  unassigned_keys: trust", 1), "identity.unassigned_keys"},
	}
	for _, tc := range cases {
		_, err := Parse([]byte(tc.edit), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want it to contain %q", tc.name, err, tc.want)
		}
	}
	// "unknown field" errors name the line too.
	_, err := Parse([]byte("listen: 127.0.0.1:8080\nlisten_typo: x\n"), nil)
	if err == nil || !strings.Contains(err.Error(), `line 2: listen_typo: unknown key; did you mean "listen"?`) {
		t.Errorf("unknown key error %v, want its line 2 and the nearest key", err)
	}
}

func TestConfigEnvironmentOverrides(t *testing.T) {
	c, err := Parse([]byte(testenv.ReadmeConfig), []string{
		"THROTTLED_REDIS_URL=redis://127.0.0.1:7000/1",
		"THROTTLED_CONTROLLER_PERIOD=2s",
		"THROTTLED_FALLBACK_INSTANCES=4",
		"PATH=/bin",
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.Redis.URL != "redis://127.0.0.1:7000/1" || c.Controller.Period.D() != 2*time.Second || c.Fallback.Instances != 4 {
		t.Fatalf("overrides not applied: %+v %+v %+v", c.Redis, c.Controller, c.Fallback)
	}
	if _, err := Parse([]byte(testenv.ReadmeConfig), []string{"THROTTLED_FALLBACK_INSTANCES=many"}); err == nil ||
		!strings.Contains(err.Error(), "THROTTLED_FALLBACK_INSTANCES") {
		t.Fatalf("bad override: %v", err)
	}
}

// With an upstream the inner loop runs by default, its target follows the
// controller's latency target, and the outer loop reads its refused
// fraction as the saturation signal; concurrency.disabled turns all of it
// off. Bad concurrency settings name their field.
func TestConfigInnerLoopDefaults(t *testing.T) {
	c, err := Parse([]byte(testenv.ReadmeConfig+"controller:\n  latency_target: 200ms\n  probe_after: 30s\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !c.InnerLoop() || c.Concurrency.Target.D() != 200*time.Millisecond || c.Concurrency.MaxWait.D() != 50*time.Millisecond ||
		c.Concurrency.TopMaxWait.D() != 100*time.Millisecond ||
		c.Controller.SaturationTarget != 0.05 || c.Prometheus.SaturationQuery != "max(throttled_concurrency_saturation)" ||
		!c.SaturationIsRefused() {
		t.Fatalf("inner loop defaults: %+v, controller %+v, prometheus %+v", c.Concurrency, c.Controller, c.Prometheus)
	}
	if s := ControllerSettings(c, c.Tiers); s.ProbeAfter != 30*time.Second {
		t.Fatalf("controller.probe_after → %v", s.ProbeAfter)
	}
	off, err := Parse([]byte(testenv.ReadmeConfig+"concurrency:\n  disabled: true\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if off.InnerLoop() || off.Controller.SaturationTarget != 0 || off.Prometheus.SaturationQuery != "" {
		t.Fatalf("disabled: inner loop %v, saturation target %v, query %q", off.InnerLoop(), off.Controller.SaturationTarget, off.Prometheus.SaturationQuery)
	}
	_, err = Parse([]byte(testenv.ReadmeConfig+"concurrency:\n  min_limit: 50\n  max_limit: 10\n"), nil)
	if err == nil || !strings.Contains(err.Error(), "concurrency") || !strings.Contains(err.Error(), "max_limit") {
		t.Fatalf("max_limit below min_limit: %v, want an error naming concurrency and max_limit", err)
	}
	for _, bad := range []struct{ yaml, path string }{
		{"concurrency:\n  max_wait: 600ms\n", "concurrency.max_wait"}, // beyond the 500ms target
		{"concurrency:\n  top_max_wait: 1s\n", "concurrency.top_max_wait"},
		{"concurrency:\n  max_queue: -1\n", "concurrency.max_queue"},
	} {
		_, err = Parse([]byte(testenv.ReadmeConfig+bad.yaml), nil)
		if err == nil || !strings.Contains(err.Error(), bad.path) {
			t.Errorf("%q: err = %v, want one naming %s", bad.yaml, err, bad.path)
		}
	}
}
