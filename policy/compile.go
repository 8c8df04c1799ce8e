package policy

import (
	"errors"
	"fmt"

	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/enforce"
)

// Compile turns c into the policy enforcement runs: tiers sorted by name
// with their defaults, rules in order, each with its header set or else
// c.Headers. Names it cannot parse are
// *FieldError values; it does not validate otherwise (ValidateConfig does,
// compiling too).
func Compile(c Config) (enforce.Policy, error) {
	p := enforce.Policy{DefaultTier: c.DefaultTier, AnonymousTier: c.AnonymousTier, UnmatchedTier: c.UnmatchedTier}
	for _, name := range SortedTiers(c.Tiers) {
		t := c.Tiers[name].WithDefaults()
		alg, err := limiter.ParseAlgorithm(t.Algorithm)
		if err != nil {
			return p, &FieldError{Field: "tiers." + name + ".algorithm", Msg: err.Error()}
		}
		align, err := limiter.ParseAlign(t.Align)
		if err != nil {
			return p, &FieldError{Field: "tiers." + name + ".align", Msg: err.Error()}
		}
		p.Tiers = append(p.Tiers, enforce.Tier{Name: name, Algorithm: alg, Limit: t.Rate, Period: t.Period.D(),
			Burst: t.Burst, Align: align, Priority: t.Priority, Unlimited: t.Unlimited})
	}
	headers, err := enforce.ParseHeaderSet(c.Headers)
	if err != nil {
		return p, &FieldError{Field: "headers", Msg: err.Error()}
	}
	for i, r := range c.Rules {
		hr, err := CompileRule(r)
		if err != nil {
			return p, &FieldError{Field: fmt.Sprintf("rules[%d]", i), Msg: err.Error()}
		}
		if r.Headers == "" { // the rule names no set: the Config's
			hr.Headers = headers
		}
		p.Rules = append(p.Rules, hr)
	}
	return p, nil
}

// CompileRule turns one rule into enforcement's form.
func CompileRule(r Rule) (enforce.Rule, error) {
	alg, err1 := limiter.ParseAlgorithm(r.Algorithm)
	mode, err2 := enforce.ParseMode(r.Mode)
	fb, err3 := limiter.ParseFallbackPolicy(r.Fallback)
	align, err4 := limiter.ParseAlign(r.Align)
	headers, err5 := enforce.ParseHeaderSet(r.Headers)
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		return enforce.Rule{}, err
	}
	er := enforce.Rule{Name: r.Name, Methods: r.Match.Methods, Path: r.Match.Path, Keys: r.Key,
		Algorithm: alg, Limit: r.Limit, Period: r.Period.D(), Burst: r.Burst, Align: align, Cost: r.Cost,
		Mode: mode, MaxWait: r.MaxWait.D(), Fallback: fb, HideHeaders: r.HideClientHeaders,
		Headers: headers}
	for i, l := range r.Limits {
		alg, err1 := limiter.ParseAlgorithm(l.Algorithm)
		align, err2 := limiter.ParseAlign(l.Align)
		if err := errors.Join(err1, err2); err != nil {
			return enforce.Rule{}, fmt.Errorf("limits[%d]: %w", i, err)
		}
		er.Limits = append(er.Limits, enforce.Limit{Algorithm: alg, Limit: l.Limit, Period: l.Period.D(),
			Burst: l.Burst, Align: align})
	}
	return er, nil
}

// SortedTiers returns the names of tiers in order.
func SortedTiers(tiers map[string]Tier) []string { return sortedKeys(tiers) }

// EffectiveTiers are the tiers enforcement gives clients without an
// assignment (def) and anonymous ones (anon): default_tier and
// anonymous_tier when named, else the lowest-priority tier (the first by
// name among equals) and def, as Compile's policy resolves them.
func (c *Config) EffectiveTiers() (def, anon string) {
	def = c.DefaultTier
	if def == "" {
		for _, name := range SortedTiers(c.Tiers) {
			if def == "" || c.Tiers[name].Priority > c.Tiers[def].Priority {
				def = name
			}
		}
	}
	anon = c.AnonymousTier
	if anon == "" {
		anon = def
	}
	return def, anon
}
