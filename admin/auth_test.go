package admin

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/throttledhq/throttled/policy"
)

func TestAuth(t *testing.T) {
	f := newFixture(t)
	r := f.do("GET", "/v1/tiers", "", nil)
	want(t, r, http.StatusUnauthorized)
	if r.hdr.Get("WWW-Authenticate") != `Bearer realm="throttled"` || r.obj(t)["error"] == nil {
		t.Fatalf("no token: %v %s", r.hdr, r.body)
	}
	for _, tok := range []string{"wrong-token-0123456789", writeTok + "x", writeTok[:len(writeTok)-1], " "} {
		r = f.do("GET", "/v1/tiers", tok, nil)
		want(t, r, http.StatusUnauthorized)
		if !strings.Contains(r.hdr.Get("WWW-Authenticate"), `error="invalid_token"`) {
			t.Fatalf("bad token: %v", r.hdr)
		}
	}
	want(t, f.do("GET", "/v1/tiers", "", nil, "Authorization", "Basic "+writeTok), http.StatusUnauthorized)
	want(t, f.do("GET", "/v1/tiers", "", nil, "Authorization", "bearer "+readTok), http.StatusOK)
	// A read token reads everything and writes nothing, whatever the body.
	for _, p := range []string{"/v1/tiers", "/v1/tiers/free", "/v1/keys/k1", "/v1/rules", "/v1/multipliers", "/v1/audit", "/v1/openapi.json"} {
		want(t, f.do("GET", p, readTok, nil), http.StatusOK)
	}
	before := f.raw()
	for _, c := range []struct{ method, path string }{
		{"POST", "/v1/tiers"}, {"PUT", "/v1/tiers/free"}, {"DELETE", "/v1/tiers/free"},
		{"PUT", "/v1/keys/k1"}, {"DELETE", "/v1/keys/k1"}, {"PUT", "/v1/rules"},
		{"POST", "/v1/multipliers/free/pin"}, {"PUT", "/v1/multipliers/free/pin"}, {"DELETE", "/v1/multipliers/free/pin"},
	} {
		r = f.do(c.method, c.path, readTok, `{"tier":"free"}`, "If-Match", "*")
		want(t, r, http.StatusForbidden)
		want(t, f.do(c.method, c.path, "", `{}`), http.StatusUnauthorized)
	}
	if string(f.raw()) != string(before) {
		t.Fatal("a refused write changed the store")
	}
	// Unknown routes are 404 in the JSON error format, after auth.
	r = f.do("GET", "/v1/nope", readTok, nil)
	want(t, r, http.StatusNotFound)
	r.obj(t)
}

func TestTokenSettings(t *testing.T) {
	ok := Token{Token: "0123456789abcdef", Role: RoleRead}
	for name, toks := range map[string]map[string]Token{
		"none":      nil,
		"empty":     {"a": {Token: "", Role: RoleWrite}},
		"no role":   {"a": {Token: "0123456789abcdef"}},
		"bad name":  {"a b": ok},
		"duplicate": {"a": ok, "b": ok},
	} {
		if _, err := New(t.Context(), Settings{Tokens: toks}); err == nil || !strings.HasPrefix(err.Error(), "admin: ") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestTokensFromEnv(t *testing.T) {
	got, err := TokensFromEnv([]string{"PATH=/bin", "THROTTLED_ADMIN_TOKEN_OPS=write:abc:def", "THROTTLED_ADMIN_TOKEN_Grafana=read:xyz"})
	if err != nil || len(got) != 2 || got["ops"] != (Token{"abc:def", RoleWrite}) || got["grafana"] != (Token{"xyz", RoleRead}) {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range []string{"THROTTLED_ADMIN_TOKEN_A=admin:x", "THROTTLED_ADMIN_TOKEN_A=nocolon"} {
		if _, err := TokensFromEnv([]string{bad}); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func TestRoleText(t *testing.T) {
	for _, r := range []Role{RoleRead, RoleWrite} {
		b, _ := r.MarshalText()
		var back Role
		if err := back.UnmarshalText(b); err != nil || back != r {
			t.Errorf("%v: %v %v", r, back, err)
		}
	}
	if Role(9).String() != "Role(9)" {
		t.Error(Role(9).String())
	}
	var r Role
	if err := r.UnmarshalText([]byte("admin")); err == nil {
		t.Error("admin accepted")
	}
}

func TestShortTokenWorksWithAWarning(t *testing.T) {
	var logs strings.Builder
	sv, err := New(context.Background(), Settings{
		Tokens:  map[string]Token{"write": {Token: "change-me", Role: RoleWrite}},
		Initial: policy.Config{Tiers: map[string]policy.Tier{"free": {Rate: 1, Period: policy.Duration(time.Second)}}},
		Logger:  slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatalf("the quick start's token was refused: %v", err)
	}
	if !strings.Contains(logs.String(), "guessable") {
		t.Fatalf("no warning for a short token: %q", logs.String())
	}
	req := httptest.NewRequest("GET", "/v1/tiers", nil)
	req.Header.Set("Authorization", "Bearer change-me")
	w := httptest.NewRecorder()
	sv.ServeHTTP(w, req)
	if w.Code != 200 {
		t.Fatalf("GET /v1/tiers with the short token: %d", w.Code)
	}
	if _, err := New(context.Background(), Settings{Tokens: map[string]Token{"w": {Token: "", Role: RoleWrite}}}); err == nil {
		t.Fatal("empty token accepted")
	}
}
