package controller

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/throttledhq/throttled/limiter/multiplier"
)

// ErrInvalidSettings is wrapped by every error [Settings.Validate] returns.
var ErrInvalidSettings = errors.New("controller: invalid settings")

// Defaults used for zero-valued fields of [Settings]. They are applied in
// one place, Settings.withDefaults. A [Tier]'s AIMD parameters take theirs
// from limiter/multiplier (multiplier.DefaultAlpha, …, and the floor rule of
// multiplier.AIMD.WithDefaults), which policy documents use too.
const (
	DefaultPeriod      = 5 * time.Second
	DefaultJitter      = 0.1
	DefaultHeadroom    = 0.1
	DefaultHoldTimeout = 30 * time.Second
	DefaultProbeAfter  = time.Minute
	DefaultStarvedAt   = 0.25
)

// Tier is what the law needs of a tier: its priority and control
// parameters (the configured tier is policy.Tier; its quota, enforce.Tier).
// Zero values mean the defaults of limiter/multiplier.
type Tier struct {
	// Name identifies the tier (label value, publish key). Required, unique.
	Name string
	// Priority orders the tiers: 0 is the most important, larger values
	// are shed first. Ties are broken by Name (earlier name = more
	// important). Must not be negative.
	Priority int
	// Alpha is the increase per recovery step and the least increase per
	// healthy step, except below the multiplier the tier was last cut from,
	// which it approaches in smaller parts (see [Law.Step]); in (0, 1].
	// 0 means multiplier.DefaultAlpha.
	Alpha float64
	// Beta bounds the multiplicative decrease per overloaded step, in
	// (0, 1): a cut is in proportion to the overload but never deeper
	// than β. 0 means multiplier.DefaultBeta.
	Beta float64
	// Growth is the largest factor by which one healthy step multiplies
	// the multiplier when the signals are far below the band (see
	// [Law.Step]); it is at least 1 and finite, and 1 leaves the increase
	// additive (α only). 0 means multiplier.DefaultGrowth, which brings a tier from
	// 0.1 back to 1 in two periods of deep headroom (when no cut from
	// above 0.1 holds it back): with the inner loop in front of the
	// upstream an overshoot costs a few sheds within its interval, not
	// latency, so recovery may be fast.
	Growth float64
	// Floor is the lowest multiplier, in (0, Ceiling]. 0 means
	// min(multiplier.DefaultFloor, Ceiling). A multiplicative decrease never reaches
	// 0, so "shed almost all" is a small positive floor.
	Floor float64
	// Ceiling is the highest multiplier, in (0, 1]; above 1 the admission
	// bucket would outrun the quota bucket it sits beside. 0 means 1.
	Ceiling float64
}

// Settings configure the law and the loop. The zero value of every field
// except Tiers means a sensible default.
type Settings struct {
	// Tiers to control; at least one.
	Tiers []Tier
	// Headroom is the hysteresis band, a fraction in (0, 1): the service
	// is healthy only when every signal is below target × (1 − Headroom).
	// 0 means DefaultHeadroom.
	Headroom float64
	// Cooldown is the least time between two decreases (of any tiers).
	// 0 means two periods less the jitter, 2 × Period × (1 − Jitter), so
	// that two jittered ticks always pass it.
	Cooldown time.Duration
	// HoldTimeout is how long the law holds without a usable signal before
	// it starts to recover towards the ceilings. 0 means DefaultHoldTimeout.
	HoldTimeout time.Duration
	// ProbeAfter is how long a tier that grew back to the level it was
	// last cut from (its knee) holds there before it probes past it: at
	// most one probe per ProbeAfter, so a steady overload costs at most two
	// direction changes per ProbeAfter. 0 means DefaultProbeAfter.
	ProbeAfter time.Duration
	// SignalStaleAfter: a signal whose At is older than this is unusable
	// (the law holds on it). A zero At is taken as fresh. 0 means three
	// periods. Not to be confused with the enforcers' multiplier staleness
	// (coord.Settings.StaleAfter, the config's controller.stale_after).
	SignalStaleAfter time.Duration
	// Period between two ticks of the loop. 0 means DefaultPeriod. It also
	// bounds each tick's calls and the final lease release.
	Period time.Duration
	// Jitter spreads ticks uniformly over Period × (1 ± Jitter), in (0,
	// 0.5]. 0 means DefaultJitter.
	Jitter float64
	// StarvedAt: while Input.CPUWait is at or above it, this process is
	// short of CPU and the law makes no cut (see [Law.Step]); in (0, 1].
	// 0 means DefaultStarvedAt: its threads waited for a CPU a quarter of
	// their runnable time more than usual.
	StarvedAt float64
	// Scope is whose overload a cut answers (see [Scope]): the zero value
	// is ScopeFleet, one multiplier per tier for every instance.
	Scope Scope
}

// withDefaults returns s with every zero field replaced by its default.
func (s Settings) withDefaults() Settings {
	if s.Period == 0 {
		s.Period = DefaultPeriod
	}
	if s.Jitter == 0 {
		s.Jitter = DefaultJitter
	}
	if s.Headroom == 0 {
		s.Headroom = DefaultHeadroom
	}
	if s.HoldTimeout == 0 {
		s.HoldTimeout = DefaultHoldTimeout
	}
	if s.ProbeAfter == 0 {
		s.ProbeAfter = DefaultProbeAfter
	}
	if s.SignalStaleAfter == 0 {
		s.SignalStaleAfter = 3 * s.Period
	}
	if s.StarvedAt == 0 {
		s.StarvedAt = DefaultStarvedAt
	}
	if s.Cooldown == 0 && s.Period > 0 && s.Jitter > 0 && s.Jitter < 1 {
		s.Cooldown = time.Duration(float64(2*s.Period) * (1 - s.Jitter))
	}
	tiers := make([]Tier, len(s.Tiers))
	for i, t := range s.Tiers {
		tiers[i] = t.withDefaults()
	}
	s.Tiers = tiers
	return s
}

func (t Tier) withDefaults() Tier {
	a := t.aimd().WithDefaults()
	t.Alpha, t.Beta, t.Growth, t.Floor, t.Ceiling = a.Alpha, a.Beta, a.Growth, a.Floor, a.Ceiling
	return t
}

func (t Tier) aimd() multiplier.AIMD {
	return multiplier.AIMD{Alpha: t.Alpha, Beta: t.Beta, Growth: t.Growth, Floor: t.Floor, Ceiling: t.Ceiling}
}

// Validate reports every invalid field, each error naming the field and
// wrapping [ErrInvalidSettings]. Zero values are valid (they mean the
// defaults); negative, NaN and infinite values are not.
func (s Settings) Validate() error {
	d := s.withDefaults()
	var errs []error
	if d.Period <= 0 {
		errs = append(errs, invalid("period", s.Period, "must be positive"))
	}
	if !(d.Jitter > 0 && d.Jitter <= 0.5) {
		errs = append(errs, invalid("jitter", s.Jitter, "must be in (0, 0.5]"))
	}
	if !(d.Headroom > 0 && d.Headroom < 1) {
		errs = append(errs, invalid("headroom", s.Headroom, "must be in (0, 1)"))
	}
	if int(s.Scope) >= len(ScopeNames) {
		errs = append(errs, invalid("scope", s.Scope, fmt.Sprintf("must be one of %v", ScopeNames)))
	}
	if !(d.StarvedAt > 0 && d.StarvedAt <= 1) {
		errs = append(errs, invalid("starved_at", s.StarvedAt, "must be in (0, 1]"))
	}
	for _, f := range []struct {
		name string
		v    time.Duration
	}{{"cooldown", s.Cooldown}, {"hold_timeout", s.HoldTimeout}, {"signal_stale_after", s.SignalStaleAfter}, {"probe_after", s.ProbeAfter}} {
		if f.v < 0 { // 0 is a default derived from period and jitter, checked above
			errs = append(errs, invalid(f.name, f.v, "must not be negative"))
		}
	}
	if len(d.Tiers) == 0 {
		errs = append(errs, invalid("tiers", "[]", "at least one tier is required"))
	}
	seen := make(map[string]int, len(d.Tiers))
	for i, t := range d.Tiers {
		field := fmt.Sprintf("tiers[%d]", i)
		if t.Name == "" {
			errs = append(errs, invalid(field+".name", `""`, "must not be empty"))
		} else if j, dup := seen[t.Name]; dup {
			errs = append(errs, invalid(field+".name", t.Name, fmt.Sprintf("duplicates tiers[%d]", j)))
		} else {
			seen[t.Name] = i
		}
		errs = append(errs, t.validate(field)...)
	}
	return errors.Join(errs...)
}

// validate checks one defaulted tier; field is its path, e.g. "tiers[2]".
func (t Tier) validate(field string) []error {
	var errs []error
	if t.Priority < 0 {
		errs = append(errs, invalid(field+".priority", t.Priority, "must not be negative"))
	}
	for _, f := range []struct {
		name string
		v    float64
		r    multiplier.Range
	}{{"alpha", t.Alpha, multiplier.AlphaRange}, {"beta", t.Beta, multiplier.BetaRange}} {
		if !f.r.Contains(f.v) {
			errs = append(errs, invalid(field+"."+f.name, f.v, "must be in "+f.r.String()))
		}
	}
	if !(t.Growth >= multiplier.MinGrowth && t.Growth <= math.MaxFloat64) {
		errs = append(errs, invalid(field+".growth", t.Growth, fmt.Sprintf("must be at least %v and finite", multiplier.MinGrowth)))
	}
	if !multiplier.CeilingRange.Contains(t.Ceiling) {
		errs = append(errs, invalid(field+".ceiling", t.Ceiling, "must be in "+multiplier.CeilingRange.String()))
	}
	if !(multiplier.FloorRange.Contains(t.Floor) && t.Floor <= t.Ceiling) {
		errs = append(errs, invalid(field+".floor", t.Floor, fmt.Sprintf("must be in (0, ceiling %v]", t.Ceiling)))
	}
	return errs
}

// invalid formats one validation error: "controller: invalid settings:
// tiers[1].beta = 1.5: must be in (0, 1)".
func invalid(field string, v any, want string) error {
	return fmt.Errorf("%w: %s = %v: %s", ErrInvalidSettings, field, v, want)
}
