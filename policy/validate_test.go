package policy

import (
	"errors"
	"math"
	"testing"
)

func TestValidateConfigNonFinite(t *testing.T) {
	for _, f := range []string{"alpha", "beta", "floor", "ceiling"} {
		for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
			cfg := testConfig()
			tier := cfg.Tiers["free"]
			*map[string]*float64{"alpha": &tier.Alpha, "beta": &tier.Beta, "floor": &tier.Floor, "ceiling": &tier.Ceiling}[f] = v
			cfg.Tiers["free"] = tier
			var fe *FieldError
			if err := ValidateConfig(cfg); !errors.As(err, &fe) || fe.Field != "tiers.free."+f || !errors.Is(err, ErrInvalid) {
				t.Errorf("%s=%v: %v", f, v, err)
			}
		}
	}
	for _, v := range []float64{math.NaN(), math.Inf(1), 0} {
		err := validatePins(map[string]Pin{"free": {Tier: "free", Multiplier: v, Until: t0}}, testConfig().Tiers)
		if fe := (*FieldError)(nil); !errors.As(err, &fe) || fe.Field != "pins.free.multiplier" {
			t.Errorf("pin multiplier %v: %v", v, err)
		}
	}
	if err := ValidateConfig(testConfig()); err != nil {
		t.Fatalf("valid config: %v", err)
	}
}

// What only the compiled enforce.Policy shows is refused too, naming the
// field: the one validator is complete without a hook.
func TestValidateCompiled(t *testing.T) {
	for _, c := range []struct {
		name, field string
		edit        func(*Config)
	}{
		{"log limit", "tiers.free.rate", func(c *Config) {
			c.Tiers["free"] = Tier{Rate: 20_000, Period: sec(1), Algorithm: "sliding_window_log"}
		}},
		{"cost beyond a tier's burst", "rules[0].cost", func(c *Config) { c.Rules[0].Cost = 30 }},
		{"no tiers", "tiers", func(c *Config) { *c = Config{} }},
	} {
		cfg := testConfig()
		c.edit(&cfg)
		var fe *FieldError
		if err := ValidateConfig(cfg); !errors.As(err, &fe) || fe.Field != c.field || !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want a FieldError naming %s", c.name, err, c.field)
		}
		if errs := ConfigErrors(cfg); len(errs) != 1 {
			t.Errorf("%s: ConfigErrors %v, want the one problem", c.name, errs)
		}
	}
	cfg := testConfig()
	cfg.Rules[0].Cost = 20 // free's burst
	if err := ValidateConfig(cfg); err != nil {
		t.Fatalf("cost within every tier's capacity: %v", err)
	}
}

func TestCompiledField(t *testing.T) {
	for _, c := range []struct{ msg, want string }{
		{`limiter: invalid policy: tiers[0] (free): rule "free": period 0s must be in 1ms..366d`, "tiers.free.period"},
		{`limiter: invalid policy: tiers[1] (gold): rule "gold": limit 0 must be in 1..1e12`, "tiers.gold.rate"},
		{`limiter: invalid policy: rules[2] (api): cost 5 exceeds the capacity 3 of tier free`, "rules[2].cost"},
		{`limiter: invalid policy: rules[0] (x): match.path "x": must start with /`, "rules[0].match.path"},
		{`limiter: invalid policy: default_tier "x": no such tier`, "default_tier"},
		{`limiter: invalid policy: tiers: at least one tier is needed`, "config"},
	} {
		if got := compiledField(errors.New(c.msg)); got != c.want {
			t.Errorf("%s: %q, want %q", c.msg, got, c.want)
		}
	}
}

// TestValidateTierReferences: default_tier, anonymous_tier and
// unmatched_tier must each name a tier; the error names the field.
func TestValidateTierReferences(t *testing.T) {
	for _, field := range []string{"default_tier", "anonymous_tier", "unmatched_tier"} {
		cfg := testConfig()
		*map[string]*string{"default_tier": &cfg.DefaultTier, "anonymous_tier": &cfg.AnonymousTier,
			"unmatched_tier": &cfg.UnmatchedTier}[field] = "gold"
		var fe *FieldError
		if err := ValidateConfig(cfg); !errors.As(err, &fe) || fe.Field != field {
			t.Errorf("%s: gold: %v, want an error at %s", field, err, field)
		}
		if p, err := Compile(testConfig()); err != nil || p.UnmatchedTier != "" {
			t.Fatalf("Compile: %+v, %v", p.UnmatchedTier, err)
		}
	}
	cfg := testConfig()
	cfg.UnmatchedTier = "free"
	if p, err := Compile(cfg); err != nil || p.UnmatchedTier != "free" {
		t.Fatalf("Compile of unmatched_tier free: %q, %v", p.UnmatchedTier, err)
	}
}
