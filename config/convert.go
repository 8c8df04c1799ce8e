package config

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/throttledhq/throttled/api"
	"github.com/throttledhq/throttled/controller"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/enforce"
)

// policyOf converts the admin API's Config to the limiter's Policy. Rules
// keep their order; tiers are sorted by name.
func PolicyOf(c api.Config) (enforce.Policy, error) {
	p := enforce.Policy{DefaultTier: c.DefaultTier, AnonymousTier: c.AnonymousTier}
	for _, name := range sortedTiers(c.Tiers) {
		t := c.Tiers[name].WithDefaults()
		alg, err := limiter.ParseAlgorithm(t.Algorithm)
		if err != nil {
			return p, &api.FieldError{Field: "tiers." + name + ".algorithm", Msg: err.Error()}
		}
		align, err := limiter.ParseAlign(t.Align)
		if err != nil {
			return p, &api.FieldError{Field: "tiers." + name + ".align", Msg: err.Error()}
		}
		p.Tiers = append(p.Tiers, enforce.Tier{Name: name, Algorithm: alg, Limit: t.Rate, Period: t.Period.D(),
			Burst: t.Burst, Align: align, Priority: t.Priority, Unlimited: t.Unlimited})
	}
	for i, r := range c.Rules {
		hr, err := ruleOf(r)
		if err != nil {
			return p, &api.FieldError{Field: fmt.Sprintf("rules[%d]", i), Msg: err.Error()}
		}
		p.Rules = append(p.Rules, hr)
	}
	return p, nil
}

func ruleOf(r api.Rule) (enforce.Rule, error) {
	alg, err1 := limiter.ParseAlgorithm(r.Algorithm)
	mode, err2 := enforce.ParseMode(r.Mode)
	fb, err3 := limiter.ParseFallbackPolicy(r.Fallback)
	align, err4 := limiter.ParseAlign(r.Align)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return enforce.Rule{}, err
	}
	er := enforce.Rule{Name: r.Name, Methods: r.Match.Methods, Path: r.Match.Path, Keys: r.Key,
		Algorithm: alg, Limit: r.Limit, Period: r.Period.D(), Burst: r.Burst, Align: align, Cost: r.Cost,
		Mode: mode, MaxWait: r.MaxWait.D(), Fallback: fb, HideHeaders: r.HideClientHeaders}
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

func sortedTiers(m map[string]api.Tier) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// unassignedKeysOf is identity.unassigned_keys (validated: "" when bad).
func UnassignedKeysOf(c *IdentityConfig) enforce.UnassignedKeys {
	u, _ := enforce.ParseUnassignedKeys(c.UnassignedKeys)
	return u
}

// ValidatePolicy is the admin API's Validate hook: the whole Config must
// make a valid limiter Policy.
func ValidatePolicy(c api.Config) error {
	p, err := PolicyOf(c)
	if err != nil {
		return err
	}
	if err := p.Validate(); err != nil {
		return &api.FieldError{Field: "config", Msg: err.Error()}
	}
	return nil
}

// controllerSettings builds the control law's settings from the tiers and
// the controller section.
func ControllerSettings(c *Config, tiers map[string]api.Tier) controller.Settings {
	s := controller.Settings{
		HoldTimeout:      c.Controller.HoldTimeout.D(),
		ProbeAfter:       c.Controller.ProbeAfter.D(),
		SignalStaleAfter: c.Controller.SignalStaleAfter.D(),
		Cooldown:         c.Controller.Cooldown.D(),
		Period:           c.Controller.Period.D(),
	}
	if h := c.Controller.Headroom; h != nil {
		s.Headroom = *h
	}
	for _, name := range sortedTiers(tiers) {
		t := tiers[name].WithDefaults()
		s.Tiers = append(s.Tiers, controller.Tier{Name: name, Priority: t.Priority,
			Alpha: t.Alpha, Beta: t.Beta, Floor: t.Floor, Ceiling: t.Ceiling})
	}
	return s
}

// apiConfig is the part of the file the admin API manages.
func (c *Config) Policy() api.Config {
	return api.Config{Tiers: c.Tiers, Rules: c.Rules, DefaultTier: c.DefaultTier, AnonymousTier: c.AnonymousTier,
		Assignments: c.Assignments}
}

// gradientSettings are the inner loop's law settings from the config.
// validateWaits checks the gate's queue: waits within (0, target], so
// that a request that waited still has time to be served within it.
func (c *ConcurrencyConfig) validateWaits() []fieldErr {
	var errs []fieldErr
	for _, f := range []struct {
		path string
		d    time.Duration
	}{{"concurrency.max_wait", c.MaxWait.D()}, {"concurrency.top_max_wait", c.TopMaxWait.D()}} {
		if f.d <= 0 || f.d > c.Target.D() {
			errs = append(errs, fieldErr{f.path, fmt.Sprintf("want (0, concurrency.target %v], got %v", c.Target.D(), f.d)})
		}
	}
	if c.MaxQueue < 0 {
		errs = append(errs, fieldErr{"concurrency.max_queue", fmt.Sprintf("must not be negative, got %d", c.MaxQueue)})
	}
	return errs
}

func GradientSettings(c *ConcurrencyConfig) (controller.GradientSettings, error) {
	g := controller.GradientSettings{Interval: c.Interval.D(), Target: c.Target.D(), Tolerance: c.Tolerance,
		MinLimit: c.MinLimit, MaxLimit: c.MaxLimit, InitialLimit: c.InitialLimit}
	return g, g.Validate()
}
