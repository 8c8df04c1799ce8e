package admin

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/throttledhq/throttled/policy"
)

// tierJSON is a valid new tier "x" with fields replaced (nil deletes one).
func tierJSON(over map[string]any) string {
	m := map[string]any{"name": "x", "rate": 10, "period": "1s"}
	for k, v := range over {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	return string(mustJSON(m))
}

// raw JSON for values canonical cannot produce.
type rawJSON string

func (r rawJSON) MarshalJSON() ([]byte, error) { return []byte(r), nil }

// ruleJSON is {"rules": [valid rule "r" with fields replaced]}.
func ruleJSON(over map[string]any) string {
	m := map[string]any{"name": "r", "match": map[string]any{"path": "/x"}, "key": "ip"}
	for k, v := range over {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	return string(mustJSON(map[string]any{"rules": []any{m}}))
}

type badCase struct {
	method, path, body, field string
}

func badTiers() []badCase {
	var cs []badCase
	add := func(field string, over map[string]any) {
		cs = append(cs, badCase{"POST", "/v1/tiers", tierJSON(over), field})
	}
	for _, n := range []any{"", "-x", "a b", "é", strings.Repeat("a", 65), "x/y"} {
		f := "tiers." + fmt.Sprint(n) + ".name"
		if n == "" {
			f = "name"
		}
		add(f, map[string]any{"name": n})
	}
	for _, v := range []any{0, -1, 1e12 + 1, rawJSON("1e13"), rawJSON("1.5"), "10", rawJSON("99999999999999999999"), true} {
		add("tiers.x.rate", map[string]any{"rate": v})
	}
	for _, v := range []any{nil, "0s", "-1s", "1x", "500us", "8785h", "", 5, rawJSON("1e3")} {
		add("tiers.x.period", map[string]any{"period": v})
	}
	for _, v := range []any{-1, 1e12 + 1, "1"} {
		add("tiers.x.burst", map[string]any{"burst": v})
	}
	for _, v := range []any{"nope", "TOKEN_BUCKET", 1} {
		add("tiers.x.algorithm", map[string]any{"algorithm": v})
	}
	for _, v := range []any{-1, 1001, 1.5} {
		add("tiers.x.priority", map[string]any{"priority": v})
	}
	for _, f := range []string{"alpha", "beta", "floor", "ceiling"} {
		for _, v := range []any{-0.1, 1.5, rawJSON("1e400"), "0.5"} {
			add("tiers.x."+f, map[string]any{f: v})
		}
	}
	add("tiers.x.beta", map[string]any{"beta": 1})
	add("tiers.x.floor", map[string]any{"floor": 0.9, "ceiling": 0.5})
	add("tiers.x.floor", map[string]any{"floor": 0.9, "ceiling": 0.5})
	add("tiers.x.rat", map[string]any{"rat": 1})
	add("tiers.x.Rate", map[string]any{"Rate": 1})
	cs = append(cs,
		badCase{"POST", "/v1/tiers", `{"name":"x","rate":10,"period":"1s"} {}`, "body"},
		badCase{"POST", "/v1/tiers", `{"name":"x","rate":10,"period":"1s"}garbage`, "body"},
		badCase{"POST", "/v1/tiers", `{"name":"x","rate":10,`, "body"},
		badCase{"POST", "/v1/tiers", ``, "body"},
		badCase{"POST", "/v1/tiers", `[1]`, "body"},
		badCase{"PUT", "/v1/tiers/free", `{"rate":0,"period":"1s"}`, "tiers.free.rate"},
		badCase{"PUT", "/v1/tiers/free", `{"rate":1,"period":"1s","extra":{}}`, "tiers.free.extra"},
	)
	return cs
}

func badRules() []badCase {
	var cs []badCase
	add := func(field string, over map[string]any) {
		cs = append(cs, badCase{"PUT", "/v1/rules", ruleJSON(over), field})
	}
	for _, v := range []any{"", "a b", strings.Repeat("r", 65)} {
		add("rules[0].name", map[string]any{"name": v})
	}
	for _, v := range []any{"x", "", "/a b", "/a?b", strings.Repeat("/", policy.MaxPathLen+1)} {
		add("rules[0].match.path", map[string]any{"match": map[string]any{"path": v}})
	}
	for _, v := range []any{[]string{"get"}, []string{"GET", "GET"}, "GET"} {
		add("rules[0].match.methods", map[string]any{"match": map[string]any{"path": "/", "methods": v}})
	}
	add("rules[0].match.host", map[string]any{"match": map[string]any{"path": "/", "host": "a"}})
	for _, v := range []any{nil, "", "cookie", "header:", "header:a b", []string{}, 5, strings.Split("ip,ip,ip,ip,ip,ip,ip,ip,ip", ",")} {
		add("rules[0].key", map[string]any{"key": v})
	}
	add("rules[0].limit", map[string]any{"limit": -1})
	add("rules[0].limit", map[string]any{"limit": 1e12 + 1, "period": "1s"})
	add("rules[0].period", map[string]any{"limit": 5})
	add("rules[0].period", map[string]any{"limit": 5, "period": "8809h"})
	add("rules[0].period", map[string]any{"period": "1s"})
	add("rules[0].algorithm", map[string]any{"algorithm": "gcra"})
	add("rules[0].algorithm", map[string]any{"limit": 5, "period": "1s", "algorithm": "x"})
	add("rules[0].burst", map[string]any{"burst": 5})
	add("rules[0].burst", map[string]any{"limit": 5, "period": "1s", "burst": -1})
	add("rules[0].cost", map[string]any{"cost": -1})
	add("rules[0].cost", map[string]any{"limit": 5, "period": "1s", "cost": 6})
	add("rules[0].mode", map[string]any{"mode": "block"})
	add("rules[0].max_wait", map[string]any{"mode": "delay"})
	add("rules[0].max_wait", map[string]any{"mode": "delay", "max_wait": "2m"})
	add("rules[0].max_wait", map[string]any{"max_wait": "1s"})
	add("rules[0].max_wait", map[string]any{"mode": "delay", "max_wait": "-1s"})
	add("rules[0].fallback", map[string]any{"fallback": "open"})
	for _, v := range []any{0, -1, policy.MaxLeaseSize + 1} {
		add("rules[0].lease.size", map[string]any{"lease": map[string]any{"size": v}})
	}
	add("rules[0].lease.size", map[string]any{"limit": 5, "period": "1s", "lease": map[string]any{"size": 6}})
	add("rules[0].lease.size", map[string]any{"limit": 5, "period": "1s", "burst": 3, "lease": map[string]any{"size": 4}})
	add("rules[0].lease.ttl", map[string]any{"lease": map[string]any{"size": 1, "ttl": "2m"}})
	add("rules[0].lease", map[string]any{"limit": 5, "period": "1s", "algorithm": "fixed_window", "lease": map[string]any{"size": 2}})
	two := `{"rules":[{"name":"a","match":{"path":"/"},"key":"ip"},{"name":"a","match":{"path":"/"},"key":"ip"}]}`
	cs = append(cs, badCase{"PUT", "/v1/rules", two, "rules[1].name"},
		badCase{"PUT", "/v1/rules", `{"rule":[]}`, "rule"},
		badCase{"PUT", "/v1/rules", `{"rules":{}}`, "rules"})
	return cs
}

func badOthers() []badCase {
	return []badCase{
		{"PUT", "/v1/keys/k1", `{"tier":"nope"}`, "assignments.k1.tier"},
		{"PUT", "/v1/keys/k1", `{"tier":""}`, "assignments.k1.tier"},
		{"PUT", "/v1/keys/k1", `{"tier":"free","x":1}`, "assignments.k1.x"},
		{"PUT", "/v1/keys/k1", `{"tier":5}`, "assignments.k1.tier"},
		{"POST", "/v1/multipliers/free/pin", `{"multiplier":0,"ttl":"1m"}`, "pins.free.multiplier"},
		{"POST", "/v1/multipliers/free/pin", `{"multiplier":-0.5,"ttl":"1m"}`, "pins.free.multiplier"},
		{"POST", "/v1/multipliers/free/pin", `{"multiplier":1.5,"ttl":"1m"}`, "pins.free.multiplier"},
		{"POST", "/v1/multipliers/free/pin", `{"multiplier":0.5}`, "pins.free.ttl"},
		{"POST", "/v1/multipliers/free/pin", `{"multiplier":0.5,"ttl":"0.5s"}`, "pins.free.ttl"},
		{"POST", "/v1/multipliers/free/pin", `{"multiplier":0.5,"ttl":"721h"}`, "pins.free.ttl"},
		{"POST", "/v1/multipliers/free/pin", `{"multiplier":0.5,"ttl":"soon"}`, "pins.free.ttl"},
		{"GET", "/v1/audit?limit=0", ``, "limit"},
		{"GET", "/v1/audit?limit=abc", ``, "limit"},
	}
}

// Every bad value of every field is a 400 naming the field, and the stored
// document and audit log are unchanged byte for byte.
func TestValidationTable(t *testing.T) {
	f := newFixture(t)
	before, audit := f.raw(), f.rc.LLen(context.Background(), "test:{config}:audit").Val()
	cases := append(append(badTiers(), badRules()...), badOthers()...)
	for _, c := range cases {
		r := f.do(c.method, c.path, writeTok, c.body, "If-Match", "*")
		if r.code != http.StatusBadRequest {
			t.Errorf("%s %s %s: status %d, want 400: %s", c.method, c.path, c.body, r.code, r.body)
			continue
		}
		if got := r.obj(t)["field"]; got != c.field {
			t.Errorf("%s %s %.200s: field %q, want %q (%s)", c.method, c.path, c.body, got, c.field, r.body)
		}
	}
	if after := f.raw(); string(after) != string(before) {
		t.Fatalf("stored document changed:\n%s\n%s", before, after)
	}
	if n := f.rc.LLen(context.Background(), "test:{config}:audit").Val(); n != audit {
		t.Fatalf("audit log grew from %d to %d", audit, n)
	}
	t.Logf("%d cases", len(cases))
}

// What only the compiled policy shows (policy validates documents
// completely, without a hook) is a 400 naming the field too, and nothing is
// written.
func TestValidateCompiledRefusal(t *testing.T) {
	f := newFixture(t)
	before := f.raw()
	r := f.do("PUT", "/v1/tiers/free", writeTok, `{"rate":20000,"period":"1s","algorithm":"sliding_window_log"}`, "If-Match", "*")
	want(t, r, 400)
	if r.obj(t)["field"] != "tiers.free.rate" {
		t.Errorf("%s", r.body)
	}
	r = f.do("PUT", "/v1/rules", writeTok, `{"rules":[{"name":"api","match":{"path":"/api"},"key":"api_key","cost":30}]}`, "If-Match", "*")
	want(t, r, 400)
	if r.obj(t)["field"] != "rules[0].cost" {
		t.Errorf("%s", r.body)
	}
	if string(f.raw()) != string(before) {
		t.Fatal("a refused write changed the store")
	}
	want(t, f.do("PUT", "/v1/tiers/free", writeTok, `{"rate":500,"period":"1s","algorithm":"sliding_window_log"}`, "If-Match", "*"), 200)
}
