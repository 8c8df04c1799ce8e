package admin

import (
	"bytes"
	"errors"
	"net/http"
	"strings"
	"testing"
)

// fileOwns refuses writes to tiers, keys and rules, as config.source: file
// does; pins stay writable.
func fileOwns(kind string) error {
	if kind == KindPins {
		return nil
	}
	return errors.New(kind + " are managed by the configuration file (config.source: file)")
}

// With a ReadOnly predicate every write to what it owns is 409 naming why,
// before any precondition, and nothing changes; reads, pins and the
// authentication in front are as before.
func TestReadOnlyRefusesOwnedWrites(t *testing.T) {
	f := newFixture(t, func(s *Settings) { s.ReadOnly = fileOwns })
	before := f.raw()
	tag := f.do("GET", "/v1/tiers/free", readTok, nil).etag()
	for _, tc := range []struct {
		method, path, body, kind string
	}{
		{"POST", "/v1/tiers", `{"name":"gold","rate":1,"period":"1s","priority":0}`, KindTiers},
		{"PUT", "/v1/tiers/free", `{"rate":3,"period":"1s","priority":10}`, KindTiers},
		{"DELETE", "/v1/tiers/premium", "", KindTiers},
		{"PUT", "/v1/keys/k2", `{"tier":"free"}`, KindKeys},
		{"DELETE", "/v1/keys/k1", "", KindKeys},
		{"PUT", "/v1/rules", `{"rules":[]}`, KindRules},
	} {
		var body any
		if tc.body != "" {
			body = tc.body
		}
		r := f.do(tc.method, tc.path, writeTok, body, "If-Match", tag)
		want(t, r, http.StatusConflict)
		if msg := r.obj(t)["error"].(string); !strings.Contains(msg, tc.kind+" are managed") ||
			!strings.Contains(msg, "config.source: file") {
			t.Errorf("%s %s: error %q, want the predicate's reason", tc.method, tc.path, msg)
		}
	}
	want(t, f.do("POST", "/v1/tiers", readTok, `{"name":"gold","rate":1,"period":"1s"}`), http.StatusForbidden)
	if after := f.raw(); !bytes.Equal(before, after) {
		t.Fatalf("a refused write changed the store:\n%s\n%s", before, after)
	}
	want(t, f.do("GET", "/v1/tiers/free", readTok, nil), http.StatusOK)
	want(t, f.do("GET", "/v1/rules", readTok, nil), http.StatusOK)
	want(t, f.do("GET", "/v1/keys/k1", readTok, nil), http.StatusOK)
	want(t, f.do("PUT", "/v1/multipliers/free/pin", writeTok, `{"multiplier":0.5,"ttl":"10m"}`), http.StatusCreated)
}

func TestKindOf(t *testing.T) {
	for route, want := range map[string]string{
		"/v1/tiers": KindTiers, "/v1/tiers/:name": KindTiers, "/v1/keys/:key": KindKeys,
		"/v1/rules": KindRules, "/v1/multipliers/:tier/pin": KindPins, "/v1/audit": "", "/v1/*": "",
	} {
		if got := kindOf(route); got != want {
			t.Errorf("kindOf(%q) = %q, want %q", route, got, want)
		}
	}
}
