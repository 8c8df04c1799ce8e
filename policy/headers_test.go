package policy

import (
	"errors"
	"testing"

	"github.com/throttledhq/throttled/limiter/enforce"
)

// TestHeadersCompiled: a rule without headers of its own takes the
// Config's; a rule's own overrides them; neither set is both.
func TestHeadersCompiled(t *testing.T) {
	for _, tc := range []struct {
		top, rule string
		want      enforce.HeaderSet
	}{
		{"", "", enforce.HeadersBoth},
		{"none", "", enforce.HeadersNone},
		{"ietf", "", enforce.HeadersIETF},
		{"none", "both", enforce.HeadersBoth},
		{"", "legacy", enforce.HeadersLegacy},
	} {
		cfg := testConfig()
		cfg.Headers, cfg.Rules[0].Headers = tc.top, tc.rule
		if err := ValidateConfig(cfg); err != nil {
			t.Fatalf("headers %q, rule's %q: %v", tc.top, tc.rule, err)
		}
		p, err := Compile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Rules[0].Headers; got != tc.want {
			t.Errorf("headers %q, rule's %q: the rule writes %s, want %s", tc.top, tc.rule, got, tc.want)
		}
	}
}

// TestHeadersValidated: a header set beyond both, ietf, legacy and none
// is refused, naming the field.
func TestHeadersValidated(t *testing.T) {
	for _, tc := range []struct {
		field string
		edit  func(*Config)
	}{
		{"headers", func(c *Config) { c.Headers = "rfc" }},
		{"rules[0].headers", func(c *Config) { c.Rules[0].Headers = "Both" }},
	} {
		cfg := testConfig()
		tc.edit(&cfg)
		var fe *FieldError
		if err := ValidateConfig(cfg); !errors.As(err, &fe) || fe.Field != tc.field || !errors.Is(err, ErrInvalid) {
			t.Errorf("%v, want a FieldError naming %s", err, tc.field)
		}
	}
}
