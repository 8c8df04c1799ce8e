package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter/enforce"
	"github.com/throttledhq/throttled/policy"
)

// TestConfigHeaders: the top-level headers is every rule's set but the one
// naming its own; a bad value is an error naming the field; the schema
// lists the sets.
func TestConfigHeaders(t *testing.T) {
	c, err := Parse([]byte(testenv.ReadmeConfig+"headers: ietf\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Rules[len(c.Rules)-1].Headers = "none"
	p, err := policy.Compile(c.Policy())
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range p.Rules {
		want := enforce.HeadersIETF
		if i == len(p.Rules)-1 {
			want = enforce.HeadersNone
		}
		if r.Headers != want {
			t.Errorf("rules[%d] (%s): headers %s, want %s", i, r.Name, r.Headers, want)
		}
	}
	for _, bad := range []struct{ yaml, want string }{
		{"headers: all\n", `headers: "all": want both, ietf, legacy or none`},
		{"headers: [ietf]\n", "headers"},
	} {
		if _, err := Parse([]byte(testenv.ReadmeConfig+bad.yaml), nil); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: %v, want an error naming %q", bad.yaml, err, bad.want)
		}
	}
	rule := strings.Replace(testenv.ReadmeConfig, "rules:\n  - name: ", "rules:\n  - headers: rfc9110\n    name: ", 1)
	if _, err := Parse([]byte(rule), nil); err == nil || !strings.Contains(err.Error(), `rules[0].headers: "rfc9110"`) {
		t.Errorf("a rule's bad headers: %v, want an error naming rules[0].headers", err)
	}
	enum, _ := Schema()["properties"].(map[string]any)["headers"].(map[string]any)["enum"].([]string)
	if !slices.Equal(enum, enforce.HeaderSetNames()) {
		t.Errorf("schema headers enum %v, want %v", enum, enforce.HeaderSetNames())
	}
}
