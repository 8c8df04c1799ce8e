package main

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/throttledhq/throttled/config"
)

// badConfig has many problems of every kind: YAML types, unknown keys,
// durations, tiers, rules.
const badConfig = `listen: 127.0.0.1:8080
upstream: ftp://x
admin:
  tokens:
    write: 9f3c1a7e5b2d4f6081c3e5a7b9d1f2e4
    admin: k3y
controller:
  perod: 5s
  latency_target: soon
tiers:
  free:    { rate: ten,  period: 1s, burst: 10,  priority: 1 }
  premium: { rate: 0, period: 0s, burst: 100, priority: 5000 }
  gold: [1, 2]
rules:
  - name: per-key
    match: { path: / }
    key: cookie
  - name: per-ip
    match: { path: x }
    key: ip
    mode: later
fallback:
  instances: "many"
`

// TestConfigCheckReportsEveryError: one run reports every problem of the
// file and the environment, sorted by line, each with its YAML path, in
// plain words (it used to stop at the first YAML error and at one tier or
// rule error, and duration errors lost their line).
func TestConfigCheckReportsEveryError(t *testing.T) {
	_, err := config.Parse([]byte(badConfig), []string{
		"THROTTLED_LISTN=127.0.0.1:1", "THROTTLED_IDENTITY_TRUSTED_PROXIES=10.0.0.0/8, nonsense"})
	want := []string{
		"line 2: upstream: want an http:// or https:// URL with a host",
		"line 6: admin.tokens.admin: want read or write as the key",
		"warning: line 6: admin.tokens.admin: " + shortTokenMsg,
		`line 8: controller.perod: unknown key; did you mean "period"?`,
		`line 9: controller.latency_target: want a duration such as "1s" or "250ms", got "soon"`,
		`line 11: tiers.free.rate: want an integer, got "ten"`,
		"line 12: tiers.premium.period: 0s: want 1ms..8784h0m0s",
		"line 12: tiers.premium.priority: 5000: want 0..1000",
		"line 12: tiers.premium.rate: 0: want 1..1000000000000",
		"line 13: tiers.gold: want a mapping of keys, got a list",
		`line 17: rules[0].key: "cookie": want ip, api_key, jwt, client, route or header:NAME`,
		`line 19: rules[1].match.path: "x": must start with /`,
		`line 21: rules[1].mode: "later": want enforce, shadow or delay`,
		`line 23: fallback.instances: want an integer, got "many"`,
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
		_, err := config.Parse([]byte(src), nil)
		if err == nil || strings.Contains(err.Error(), "Go ") || strings.Contains(err.Error(), "unmarshal") ||
			!strings.Contains(err.Error(), "line ") || !strings.Contains(err.Error(), "want ") {
			t.Errorf("%q: %v, want an error on its line in plain words", src, err)
		}
	}
}

// TestConfigEnvironmentLists: a list field takes comma-separated values
// from the environment (it used to be refused).
func TestConfigEnvironmentLists(t *testing.T) {
	c, err := config.Parse([]byte(readmeConfig), []string{
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
	_, err := config.Parse([]byte(readmeConfig), []string{"THROTTLED_REDIS_ULR=redis://x:1"})
	if err == nil || !strings.Contains(err.Error(), `THROTTLED_REDIS_ULR: unknown variable; did you mean "THROTTLED_REDIS_URL"?`) {
		t.Fatalf("err %v", err)
	}
	if _, err := config.Parse([]byte(readmeConfig), []string{"THROTTLED_ADMIN_TOKEN_CI=read:0123456789abcdef0123",
		"THROTTLED_SOAK=1m", "THROTTLED_TEST_OUTAGE=2s"}); err != nil {
		t.Fatalf("not configuration, yet refused: %v", err)
	}
}

// writeConfig writes src to a file in a temporary directory.
func writeConfig(t *testing.T, src string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "throttled.yaml")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestConfigFlagNamedInErrors: a bad value from a serve flag names the
// flag (it used to say "line 1"), and serve fails with the same full
// report as config check.
func TestConfigFlagNamedInErrors(t *testing.T) {
	path := writeConfig(t, badConfig)
	var out, errOut bytes.Buffer
	if code := run([]string{"serve", "--config", path, "--listen", "nohost"}, &out, &errOut); code != 1 {
		t.Fatalf("exit %d, stderr %s", code, errOut.String())
	}
	if !strings.Contains(errOut.String(), "\n--listen: listen: want host:port") || strings.Contains(errOut.String(), "line 1:") {
		t.Fatalf("serve --listen nohost:\n%s", errOut.String())
	}
	var check bytes.Buffer
	if code := run([]string{"config", "check", path}, &out, &check); code != 1 {
		t.Fatalf("config check: exit %d", code)
	}
	body := func(s string) string { _, rest, _ := strings.Cut(s, "\n"); return rest } // without the count
	serveReport := strings.Replace(body(errOut.String()), "--listen: listen: want host:port: address nohost: missing port in address\n", "", 1)
	if serveReport != body(check.String()) || !strings.Contains(check.String(), "13 errors, 1 warning\n") {
		t.Fatalf("serve and config check differ:\n%s\n---\n%s", errOut.String(), check.String())
	}
}

// TestConfigWarnings: zero rules, no upstream and weak tokens are warnings,
// printed by config check (exit 0) and not errors.
func TestConfigWarnings(t *testing.T) {
	base := strings.Replace(readmeConfig, "write: change-me", "write: change-me-a8Xq2LpZ7vR4tY9k", 1)
	token := func(tok string) string { return strings.Replace(readmeConfig, "change-me", tok, 1) }
	lowEntropy := "warning: line 6: admin.tokens.write: low entropy (repeated or few distinct characters): guessable; use a long random token"
	cases := []struct {
		name, src string
		want      []string
	}{
		{"none", base, nil},
		{"zero rules", strings.Split(base, "rules:")[0], []string{"warning: rules: no rules: no request is rate limited"}},
		{"no upstream", strings.Replace(base, "upstream: http://127.0.0.1:8081\n", "", 1),
			[]string{"warning: upstream: not set: no proxy runs (admin API, controller and /metrics only)"}},
		{"short token", readmeConfig, []string{"warning: line 6: admin.tokens.write: " + shortTokenMsg}},
		{"repeated token", token("abcabcabcabcabcabcabc"), []string{lowEntropy}},
		{"few characters", token("aaaaaaaaaaaaaaab"), []string{lowEntropy}},
	}
	for _, tc := range cases {
		var out, errOut bytes.Buffer
		if code := run([]string{"config", "check", writeConfig(t, tc.src)}, &out, &errOut); code != 0 {
			t.Fatalf("%s: exit %d: %s", tc.name, code, errOut.String())
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if got := lines[:len(lines)-1]; !reflect.DeepEqual(got, tc.want) && (len(got) > 0 || len(tc.want) > 0) {
			t.Errorf("%s: warnings\n%q\nwant\n%q", tc.name, got, tc.want)
		}
		if !strings.Contains(lines[len(lines)-1], ": ok (") {
			t.Errorf("%s: %s", tc.name, out.String())
		}
	}
}

// TestConfigWarningsLoggedOnce: serve logs every warning once, except the
// short tokens the admin API logs itself.
func TestConfigWarningsLoggedOnce(t *testing.T) {
	src := strings.Split(strings.Replace(readmeConfig, "upstream: http://127.0.0.1:8081\n", "", 1), "rules:")[0]
	_, warnings, err := config.LoadChecked(writeConfig(t, src), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	config.LogWarnings(slog.New(slog.NewTextHandler(&buf, nil)), warnings)
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
	for _, s := range []string{readmeConfig, badConfig, "", "a: [", "tiers: {free: &a {rate: 1, period: 1s}}\nx: *a\n",
		"tiers:\n  free: {rate: 1e3, period: 1s}\n", "- 1\n", "tiers: {1: {rate: 1}}\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		c, r := config.Check([]byte(src), nil, nil)
		for _, fd := range r {
			if !fd.warn && fd.line == 0 && fd.path == "" && fd.origin == "" && !strings.HasPrefix(fd.msg, "YAML: ") {
				t.Fatalf("unplaced error %q", fd.msg)
			}
		}
		if r.Errors() > 0 {
			return
		}
		var plain config.Config
		if err := yaml.UnmarshalWithOptions([]byte(src), &plain, yaml.DisallowUnknownField()); err != nil {
			t.Fatalf("checkConfig accepted what the strict decoder refuses: %v", err)
		}
		plain.defaults()
		if !reflect.DeepEqual(&plain, c) {
			t.Fatalf("decoded\n%+v\nwant\n%+v", c, &plain)
		}
	})
}
