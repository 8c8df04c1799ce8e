package enforce

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/throttledhq/throttled/limiter/identity"
)

// twoHeaderRule keys by two headers, on the tier quota.
func twoHeaderRule(t testing.TB) (*compiled, *compiledRule) {
	t.Helper()
	p := Policy{Tiers: []Tier{{Name: "t", Limit: 10, Period: time.Second}}, Rules: []Rule{
		{Name: "pair", Path: "/", Keys: []string{"header:X-A", "header:X-B"}},
	}}
	c, err := compile(&p)
	if err != nil {
		t.Fatal(err)
	}
	return c, &c.rules[0]
}

func headerKey(c *compiled, cr *compiledRule, a, b string) (string, bool) {
	r := &http.Request{Method: "GET", URL: &url.URL{Path: "/"}, Header: http.Header{"X-A": {a}, "X-B": {b}}}
	return cr.key(&identity.Client{IP: "192.0.2.1"}, r, c.def, new(arena))
}

// TestRuleKeyUnambiguous: values that contain the separator do not make
// two different requests share a bucket.
func TestRuleKeyUnambiguous(t *testing.T) {
	c, cr := twoHeaderRule(t)
	pairs := [][2]string{{"a|b", "c"}, {"a", "b|c"}, {"a|", "b"}, {"a", "|b"}, {"1:a", "b"}, {"1", "a|1:b"}}
	seen := map[string][2]string{}
	for _, p := range pairs {
		k, ok := headerKey(c, cr, p[0], p[1])
		if !ok {
			t.Fatalf("%q: rule did not apply", p)
		}
		if q, dup := seen[k]; dup {
			t.Fatalf("headers %q and %q share the bucket key %q", q, p, k)
		}
		seen[k] = p
	}
}

// FuzzRuleKeyInjective: two different pairs of header values never make
// one bucket key.
func FuzzRuleKeyInjective(f *testing.F) {
	f.Add("a|b", "c", "a", "b|c")
	f.Add("1:a", "", "1", "a")
	f.Add("x", "}{y}", "x}", "{y}")
	c, cr := twoHeaderRule(f)
	f.Fuzz(func(t *testing.T, a, b, x, y string) {
		if a == x && b == y {
			return
		}
		k1, ok1 := headerKey(c, cr, a, b)
		k2, ok2 := headerKey(c, cr, x, y)
		if ok1 && ok2 && k1 == k2 {
			t.Fatalf("(%q, %q) and (%q, %q) share the bucket key %q", a, b, x, y, k1)
		}
	})
}

// TestAppendPartWritesEveryLength: a key part is "|<len>:<value>" with the
// length in decimal whatever its digits (the one- and two-digit lengths
// are written without strconv): bucket keys are shared with other
// instances and the rate limit service, so their text is a contract.
func TestAppendPartWritesEveryLength(t *testing.T) {
	for n := range 1200 {
		v := strings.Repeat("k", n)
		var a arena
		appendPart(&a, v)
		if want := "|" + strconv.Itoa(n) + ":" + v; string(a.buf) != want {
			t.Fatalf("length %d: %.20q…, want %.20q…", n, a.buf, want)
		}
	}
}
