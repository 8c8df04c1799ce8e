package config

import (
	"bytes"
	"log/slog"
	"reflect"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/throttledhq/throttled/internal/testenv"
)

// TestConfigCheckReportsEveryError: one run reports every problem of the
// file and the environment, sorted by line, each with its YAML path, in
// plain words (it used to stop at the first YAML error and at one tier or
// rule error, and duration errors lost their line).
func TestConfigCheckReportsEveryError(t *testing.T) {
	_, err := Parse([]byte(testenv.BadConfig), []string{
		"THROTTLED_LISTN=127.0.0.1:1", "THROTTLED_IDENTITY_TRUSTED_PROXIES=10.0.0.0/8, nonsense"})
	want := []string{
		"line 2: upstream: want an http:// or https:// URL with a host",
		"line 6: admin.tokens.admin: want read or write as the key",
		"warning: line 6: admin.tokens.admin: " + shortTokenMsg,
		`line 8: controller.perod: unknown key; did you mean "period"?`,
		`line 9: controller.latency_target: want a duration such as "1s" or "250ms", got "soon"`,
		`line 11: tiers.free.rate: want an integer, got "ten"`,
		"line 12: tiers.premium.period: required: want 1ms..366d",
		"line 12: tiers.premium.priority: 5000: want 0..1000",
		"line 12: tiers.premium.rate: 0: want 1..1000000000000",
		"line 13: tiers.gold: want a mapping of keys, got a list",
		`line 17: rules[0].key: "cookie": want ip, api_key, jwt, client, route or header:NAME`,
		`line 19: rules[1].match.path: "x": must start with /`,
		`line 21: rules[1].mode: "later": want enforce, shadow or delay`,
		`line 23: fallback.instances: want an integer, got "many"`,
		`warning: default_tier: not set: clients without an assignment and anonymous ones take the lowest-priority tier, now "premium"; a tier added with a lower priority would take them all: name it`,
		"THROTTLED_IDENTITY_TRUSTED_PROXIES: identity.trusted_proxies[1]: want a CIDR like 10.0.0.0/8 or an address",
		`THROTTLED_LISTN: unknown variable; did you mean "THROTTLED_LISTEN"?`,
	}
	if err == nil {
		t.Fatal("no error")
	}
	if got := strings.Split(err.Error(), "\n"); !reflect.DeepEqual(got, want) {
		t.Fatalf("report:\n%s\nwant:\n%s", err, strings.Join(want, "\n"))
	}
}

// TestConfigTypeErrorsInPlainWords: no Go struct internals in the report.
func TestConfigTypeErrorsInPlainWords(t *testing.T) {
	for _, src := range []string{
		"tiers: 5\n", "tiers:\n  free: { rate: [1], period: 1s }\n", "admin: { allow_public: maybe }\n",
		"rules: { name: x }\n", "controller: { headroom: high }\n", "upstream_breaker: { routes: /x }\n",
	} {
		_, err := Parse([]byte(src), nil)
		if err == nil || strings.Contains(err.Error(), "Go ") || strings.Contains(err.Error(), "unmarshal") ||
			!strings.Contains(err.Error(), "line ") || !strings.Contains(err.Error(), "want ") {
			t.Errorf("%q: %v, want an error on its line in plain words", src, err)
		}
	}
}

// TestConfigEnvironmentLists: a list field takes comma-separated values
// from the environment (it used to be refused).
func TestConfigEnvironmentLists(t *testing.T) {
	c, err := Parse([]byte(testenv.ReadmeConfig), []string{
		"THROTTLED_IDENTITY_TRUSTED_PROXIES=10.0.0.0/8, 192.168.1.1,",
		"THROTTLED_UPSTREAM_BREAKER_ROUTES=/a,/b"})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.Identity.TrustedProxies, []string{"10.0.0.0/8", "192.168.1.1"}) ||
		!reflect.DeepEqual(c.UpstreamBreaker.Routes, []string{"/a", "/b"}) {
		t.Fatalf("trusted_proxies %q, routes %q", c.Identity.TrustedProxies, c.UpstreamBreaker.Routes)
	}
}

// TestConfigEnvironmentUnknownNames: a THROTTLED_* name that sets nothing
// is an error with the nearest name; the admin tokens and the tests' knobs
// are not configuration.
func TestConfigEnvironmentUnknownNames(t *testing.T) {
	_, err := Parse([]byte(testenv.ReadmeConfig), []string{"THROTTLED_REDIS_ULR=redis://x:1"})
	if err == nil || !strings.Contains(err.Error(), `THROTTLED_REDIS_ULR: unknown variable; did you mean "THROTTLED_REDIS_URL"?`) {
		t.Fatalf("err %v", err)
	}
	if _, err := Parse([]byte(testenv.ReadmeConfig), []string{"THROTTLED_ADMIN_TOKEN_CI=read:0123456789abcdef0123",
		"THROTTLED_SOAK=1m", "THROTTLED_TEST_OUTAGE=2s"}); err != nil {
		t.Fatalf("not configuration, yet refused: %v", err)
	}
}

// TestConfigWarningsLoggedOnce: serve logs every warning once, except the
// short tokens the admin API logs itself.
func TestConfigWarningsLoggedOnce(t *testing.T) {
	src := strings.Split(strings.Replace(testenv.ReadmeConfig, "upstream: http://127.0.0.1:8081\n", "", 1), "rules:")[0]
	_, warnings, err := LoadChecked(testenv.WriteFile(t, src), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	LogWarnings(slog.New(slog.NewTextHandler(&buf, nil)), warnings)
	logged := buf.String()
	if len(warnings) != 3 || strings.Count(logged, "level=WARN") != 2 || strings.Count(logged, "no rules") != 1 ||
		strings.Count(logged, "no proxy runs") != 1 || strings.Contains(logged, "admin.tokens") {
		t.Fatalf("%d warnings, logged:\n%s", len(warnings), logged)
	}
}

// FuzzConfigCheck: checkConfig never panics, every error is placed (a
// line, a path or an origin), and a file it accepts decodes to the same
// Config as the plain strict decoder gives.
func FuzzConfigCheck(f *testing.F) {
	for _, s := range []string{testenv.ReadmeConfig, testenv.BadConfig, "", "a: [", "tiers: {free: &a {rate: 1, period: 1s}}\nx: *a\n",
		"tiers:\n  free: {rate: 1e3, period: 1s}\n", "- 1\n", "tiers: {1: {rate: 1}}\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		c, r := Check([]byte(src), nil, nil)
		for _, fd := range r {
			if !fd.warn && fd.line == 0 && fd.path == "" && fd.origin == "" && !strings.HasPrefix(fd.msg, "YAML: ") {
				t.Fatalf("unplaced error %q", fd.msg)
			}
		}
		if r.Errors() > 0 {
			return
		}
		var plain Config
		if err := yaml.UnmarshalWithOptions([]byte(src), &plain, yaml.DisallowUnknownField()); err != nil {
			t.Fatalf("checkConfig accepted what the strict decoder refuses: %v", err)
		}
		plain.defaults()
		if !reflect.DeepEqual(&plain, c) {
			t.Fatalf("decoded\n%+v\nwant\n%+v", c, &plain)
		}
	})
}
