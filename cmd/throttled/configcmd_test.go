package main

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/throttledhq/throttled/internal/testenv"
)

// TestConfigFlagNamedInErrors: a bad value from a serve flag names the
// flag (it used to say "line 1"), and serve fails with the same full
// report as config check.
func TestConfigFlagNamedInErrors(t *testing.T) {
	path := testenv.WriteFile(t, testenv.BadConfig)
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
	if serveReport != body(check.String()) || !strings.Contains(check.String(), "13 errors, 2 warnings\n") {
		t.Fatalf("serve and config check differ:\n%s\n---\n%s", errOut.String(), check.String())
	}
}

// TestConfigWarnings: zero rules, no upstream and weak tokens are warnings,
// printed by config check (exit 0) and not errors.
func TestConfigWarnings(t *testing.T) {
	base := strings.Replace(testenv.ReadmeConfig, "write: change-me", "write: change-me-a8Xq2LpZ7vR4tY9k", 1)
	token := func(tok string) string { return strings.Replace(testenv.ReadmeConfig, "change-me", tok, 1) }
	lowEntropy := "warning: line 6: admin.tokens.write: low entropy (repeated or few distinct characters): guessable; use a long random token"
	cases := []struct {
		name, src string
		want      []string
	}{
		{"none", base, nil},
		{"zero rules", strings.Split(base, "rules:")[0], []string{"warning: rules: no rules: no request is rate limited"}},
		{"no upstream", strings.Replace(base, "upstream: http://127.0.0.1:8081\n", "", 1),
			[]string{"warning: upstream: not set: no proxy runs (admin API, controller and /metrics only)"}},
		{"short token", testenv.ReadmeConfig, []string{"warning: line 6: admin.tokens.write: shorter than 16 bytes: guessable; use a long random token outside a demo"}},
		{"repeated token", token("abcabcabcabcabcabcabc"), []string{lowEntropy}},
		{"few characters", token("aaaaaaaaaaaaaaab"), []string{lowEntropy}},
	}
	for _, tc := range cases {
		var out, errOut bytes.Buffer
		if code := run([]string{"config", "check", testenv.WriteFile(t, tc.src)}, &out, &errOut); code != 0 {
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
