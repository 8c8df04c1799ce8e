package admin

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/throttledhq/throttled/limiter/enforce"
	"github.com/throttledhq/throttled/policy"
)

// The quota fields (align, unlimited, limits, hide_client_headers) are
// validated like the others: a 400 naming the field.
func TestQuotaFieldsValidation(t *testing.T) {
	f := newFixture(t)
	lim := func(over map[string]any) map[string]any {
		m := map[string]any{"limit": 5, "period": "1s"}
		for k, v := range over {
			if v == nil {
				delete(m, k)
			} else {
				m[k] = v
			}
		}
		return m
	}
	nine := make([]any, enforce.MaxLimits+1)
	for i := range nine {
		nine[i] = lim(nil)
	}
	cases := []badCase{
		{"POST", "/v1/tiers", tierJSON(map[string]any{"align": "daily"}), "tiers.x.align"},
		{"POST", "/v1/tiers", tierJSON(map[string]any{"align": "calendar", "period": "24h"}), "tiers.x.align"},
		{"POST", "/v1/tiers", tierJSON(map[string]any{"align": "calendar", "algorithm": "fixed_window", "period": "2h"}), "tiers.x.period"},
		{"POST", "/v1/tiers", tierJSON(map[string]any{"unlimited": "yes"}), "tiers.x.unlimited"},
		{"POST", "/v1/tiers", tierJSON(map[string]any{"period": "1month"}), "tiers.x.period"},
	}
	add := func(field string, over map[string]any) {
		cases = append(cases, badCase{"PUT", "/v1/rules", ruleJSON(over), field})
	}
	add("rules[0].align", map[string]any{"align": "calendar"})
	add("rules[0].period", map[string]any{"limit": 5, "period": "90s", "algorithm": "fixed_window", "align": "calendar"})
	add("rules[0].align", map[string]any{"limit": 5, "period": "24h", "algorithm": "sliding_window_counter", "align": "calendar"})
	add("rules[0].limit", map[string]any{"limit": 5, "period": "1s", "limits": []any{lim(nil)}})
	add("rules[0].algorithm", map[string]any{"algorithm": "gcra", "limits": []any{lim(nil)}})
	add("rules[0].limits[1].limit", map[string]any{"limits": []any{lim(nil), lim(map[string]any{"limit": 0})}})
	add("rules[0].limits[0].period", map[string]any{"limits": []any{lim(map[string]any{"period": nil})}})
	add("rules[0].limits[0].algorithm", map[string]any{"limits": []any{lim(map[string]any{"algorithm": "x"})}})
	add("rules[0].limits[0].burst", map[string]any{"limits": []any{lim(map[string]any{"burst": -1})}})
	add("rules[0].limits[0].align", map[string]any{"limits": []any{lim(map[string]any{"period": "24h", "align": "calendar"})}})
	add("rules[0].limits", map[string]any{"limits": nine})
	add("rules[0].cost", map[string]any{"cost": 3, "limits": []any{lim(map[string]any{"limit": 10}), lim(map[string]any{"limit": 2, "period": "1h"})}})
	add("rules[0].hide_client_headers", map[string]any{"hide_client_headers": "yes"})
	before := f.raw()
	for _, c := range cases {
		r := f.do(c.method, c.path, writeTok, c.body, "If-Match", "*")
		if r.code != http.StatusBadRequest {
			t.Errorf("%s %s: status %d, want 400: %s", c.method, c.body, r.code, r.body)
			continue
		}
		if got := r.obj(t)["field"]; got != c.field {
			t.Errorf("%s: field %q, want %q (%s)", c.body, got, c.field, r.body)
		}
	}
	if string(f.raw()) != string(before) {
		t.Fatal("a refused write changed the stored document")
	}
}

// TestQuotaFieldsRoundTrip: a tier with calendar months and unlimited, and
// a rule with several limits that hides its headers, are stored and read
// back as written ("1mo" is 720h).
func TestQuotaFieldsRoundTrip(t *testing.T) {
	f := newFixture(t)
	want(t, f.do("POST", "/v1/tiers", writeTok, `{"name":"internal","rate":1000000,"period":"1mo",`+
		`"algorithm":"fixed_window","align":"calendar","unlimited":true,"priority":0}`), http.StatusCreated)
	body := `{"rules":[{"name":"api","match":{"path":"/"},"key":"api_key","hide_client_headers":true,"limits":[` +
		`{"limit":10,"period":"1s"},{"algorithm":"fixed_window","limit":10000,"period":"24h","align":"calendar"}]}]}`
	r := f.do("GET", "/v1/rules", readTok, nil)
	want(t, f.do("PUT", "/v1/rules", writeTok, body, "If-Match", r.etag()), http.StatusOK)
	s := f.snapshot().Config
	tier, rule := s.Tiers["internal"], s.Rules[0]
	if !tier.Unlimited || tier.Align != "calendar" || tier.Period != policy.Month {
		t.Fatalf("tier %+v", tier)
	}
	if !rule.HideClientHeaders || len(rule.Limits) != 2 || rule.Limits[1].Align != "calendar" || rule.Limits[1].Limit != 10000 {
		t.Fatalf("rule %+v", rule)
	}
	if r := f.do("GET", "/v1/tiers/internal", readTok, nil); !strings.Contains(string(r.body), `"period":"1mo"`) {
		t.Fatalf("GET /v1/tiers/internal: %s, want period 1mo", r.body)
	}
	want(t, f.do("PUT", "/v1/keys/vip", writeTok, `{"tier":"internal"}`), http.StatusCreated)
	if m := f.do("GET", "/v1/keys/vip", readTok, nil).obj(t); m["unlimited"] != true {
		t.Fatalf("GET /v1/keys/vip: %v, want unlimited", m)
	}
	if m := f.do("GET", "/v1/keys/k1", readTok, nil).obj(t); m["unlimited"] != nil {
		t.Fatalf("GET /v1/keys/k1: %v, want no unlimited", m)
	}
}

// TestListKeys pages through the assignments in key order; keys added and
// removed meanwhile do not make the pages skip or repeat the others.
func TestListKeys(t *testing.T) {
	f := newFixture(t, func(s *Settings) {
		s.Initial.Assignments = map[string]string{}
		for _, k := range []string{"g", "b", "f", "a", "e", "c", "d"} {
			s.Initial.Assignments[k] = "free"
		}
	})
	var got []string
	cursor, pages := "", 0
	for {
		path := "/v1/keys?limit=3"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		r := f.do("GET", path, readTok, nil)
		want(t, r, 200)
		m := r.obj(t)
		for _, a := range m["keys"].([]any) {
			got = append(got, a.(map[string]any)["key"].(string)+"="+a.(map[string]any)["tier"].(string))
		}
		pages++
		if pages == 1 { // while paging: one key before the cursor, one removed after it
			want(t, f.do("PUT", "/v1/keys/aa", writeTok, `{"tier":"premium"}`), http.StatusCreated)
			e := f.do("GET", "/v1/keys/e", readTok, nil).etag()
			want(t, f.do("DELETE", "/v1/keys/e", writeTok, nil, "If-Match", e), http.StatusNoContent)
		}
		next, _ := m["next_cursor"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	if w := "a=free b=free c=free d=free f=free g=free"; strings.Join(got, " ") != w || pages != 2 {
		t.Fatalf("%d pages: %v, want %s", pages, got, w)
	}
	r := f.do("GET", "/v1/keys", readTok, nil)
	if want(t, r, 200); len(r.obj(t)["keys"].([]any)) != 7 || r.obj(t)["next_cursor"] != nil {
		t.Fatalf("default page: %s", r.body)
	}
}

// TestListKeysBadParams: a bad limit or cursor is a 400 naming it.
func TestListKeysBadParams(t *testing.T) {
	f := newFixture(t)
	for q, field := range map[string]string{
		"limit=0": "limit", "limit=abc": "limit", fmt.Sprintf("limit=%d", MaxKeysPage+1): "limit",
		"limit=1&limit=2": "limit", "limit=": "limit",
		"cursor=!!": "cursor", "cursor=": "cursor", "cursor=" + base64.RawURLEncoding.EncodeToString([]byte("a\x00")): "cursor",
	} {
		r := f.do("GET", "/v1/keys?"+q, readTok, nil)
		if want(t, r, 400); r.obj(t)["field"] != field {
			t.Errorf("?%s: %s, want field %s", q, r.body, field)
		}
	}
	want(t, f.do("GET", "/v1/keys", "", nil), http.StatusUnauthorized)
}
