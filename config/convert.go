package config

import (
	"fmt"
	"time"

	"github.com/throttledhq/throttled/controller"
	"github.com/throttledhq/throttled/limiter/enforce"
	"github.com/throttledhq/throttled/policy"
)

// UnassignedKeysOf is identity.unassigned_keys (validated: "" when bad).
func UnassignedKeysOf(c *IdentityConfig) enforce.UnassignedKeys {
	u, _ := enforce.ParseUnassignedKeys(c.UnassignedKeys)
	return u
}

// DryRunMode is the enforcers' dry run: dry_run covers every throttling
// refusal (enforce.DryRunAll), controller.dry_run only the load shedding
// (enforce.DryRunLoad); neither, enforce.DryRunOff.
func (c *Config) DryRunMode() enforce.DryRun {
	switch {
	case c.DryRun:
		return enforce.DryRunAll
	case c.Controller.DryRun:
		return enforce.DryRunLoad
	}
	return enforce.DryRunOff
}

// controllerSettings builds the control law's settings from the tiers and
// the controller section.
func ControllerSettings(c *Config, tiers map[string]policy.Tier) controller.Settings {
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
	s.Scope, _ = controller.ParseScope(c.Controller.Scope) // validated: controller.scope's enum
	for _, name := range policy.SortedTiers(tiers) {
		t := tiers[name].WithDefaults()
		s.Tiers = append(s.Tiers, controller.Tier{Name: name, Priority: t.Priority,
			Alpha: t.Alpha, Beta: t.Beta, Floor: t.Floor, Ceiling: t.Ceiling})
	}
	return s
}

// apiConfig is the part of the file the admin API manages.
func (c *Config) Policy() policy.Config {
	return policy.Config{Tiers: c.Tiers, Rules: c.Rules, DefaultTier: c.DefaultTier, AnonymousTier: c.AnonymousTier, UnmatchedTier: c.UnmatchedTier,
		Assignments: c.Assignments, Headers: c.Headers}
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
