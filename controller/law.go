package controller

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Signal is one health reading as the law needs it. The wiring layer adapts
// the signals package's readings to it.
type Signal struct {
	Name   string    // e.g. "latency_p99", "error_ratio"
	Value  float64   // the measurement; +Inf counts as above any target
	Target float64   // overloaded above it; must be finite and positive
	Valid  bool      // false when the source could not produce a value
	At     time.Time // when it was measured; zero means "now"
	// Keep, when in (0, 1], is the fraction of the load to keep to bring
	// this signal back to its target, for a signal that knows it: a
	// refused fraction s of the load says 1 − s. 0 means unknown: the law
	// takes target ÷ value.
	Keep float64
}

// Input is everything the law reads in one step.
type Input struct {
	Signals []Signal
	// Admitted is the measured admitted rate of each tier, in requests per
	// second over the source's window, keyed by tier name. A tier that is
	// absent, or whose rate is not finite and positive, is unknown: a cut of
	// it then sets no new rate cap (it still scales one already set).
	Admitted map[string]float64
	// Fresh are this instance's own measurements over the last period (its
	// upstream's latency and errors, its inner loop's refused fraction),
	// beside Signals read through longer windows (a Prometheus's rate
	// windows, scraped every interval). When one is usable they decide the
	// step's condition (see [Law.Step]); empty when Signals are fresh
	// themselves (the in-process source).
	Fresh []Signal
	// CPUWait is how much more of its runnable time this process's
	// threads spent waiting for a CPU over the last period than they
	// usually do (a noisy neighbour that started, a CPU limit that bites):
	// a fraction, 0 when unknown. At Settings.StarvedAt or above the
	// process is starved and the law makes no cut.
	CPUWait float64
}

// Action is what a step did to one tier.
type Action int

// The actions of a step. The zero value is ActionHold.
const (
	ActionHold     Action = iota // multiplier unchanged
	ActionDecrease               // cut in proportion to the overload, by β at most (overloaded)
	ActionIncrease               // raised as far as the headroom allows (healthy)
	ActionRecover                // raised by α after HoldTimeout without signal
)

var actionNames = [...]string{"hold", "decrease", "increase", "recover"}

// allActions lists every action, in declaration order.
var allActions = []Action{ActionHold, ActionDecrease, ActionIncrease, ActionRecover}

func (a Action) String() string {
	if a < 0 || int(a) >= len(actionNames) {
		return fmt.Sprintf("Action(%d)", int(a))
	}
	return actionNames[a]
}

// Condition is the law's reading of the signals in one step.
type Condition int

// The conditions. The zero value is ConditionNoSignal.
const (
	ConditionNoSignal   Condition = iota // no usable signal
	ConditionOverloaded                  // some signal above its target
	ConditionBand                        // within the hysteresis band
	ConditionHealthy                     // all below target × (1 − headroom)
)

var conditionNames = [...]string{"no_signal", "overloaded", "band", "healthy"}

func (c Condition) String() string {
	if c < 0 || int(c) >= len(conditionNames) {
		return fmt.Sprintf("Condition(%d)", int(c))
	}
	return conditionNames[c]
}

// TierState is one tier's part of the [State].
type TierState struct {
	Name       string
	Multiplier float64
	// Rate caps the tier's aggregate admitted rate, in requests per second
	// across all its keys; 0 means unbounded. A cut sets it, an increase
	// scales it with the multiplier and the ceiling removes it (see
	// [Law.Step]).
	Rate float64
	// Knee is the multiplier the tier had before its last cut, the level
	// last known to overload the service, while the tier is below it; 0
	// once it is passed (or when there was no cut). Growth approaches it
	// by halves (see [Law.Step]).
	Knee         float64
	LastAction   Action
	LastDecrease time.Time // zero until the first decrease
	// Reason says in words why the multiplier last changed: the action and
	// the signal that drove it against its target (see [Reason]); Since is
	// when. Both are zero until the first change, and survive a change of
	// leader (the published set carries them).
	Reason string
	Since  time.Time
	// Driver is the signal that drove the last change (no Name for a
	// recovery, or when it was adopted from another leader).
	Driver Signal
}

// State is what the law carries from one step to the next. Step never
// modifies the State it is given.
type State struct {
	// Tiers in priority order, most important first.
	Tiers []TierState
	// Epoch is incremented by every step that changes any multiplier.
	Epoch uint64
	// LastValid is when a usable signal was last seen; the hold timeout
	// counts from it. A zero LastValid is taken as the current step.
	LastValid time.Time
	// Condition is the reading of the last step.
	Condition Condition
	// At is the time of the last step.
	At time.Time
}

// Multiplier returns the multiplier of the named tier.
func (s State) Multiplier(tier string) (float64, bool) {
	for _, t := range s.Tiers {
		if t.Name == tier {
			return t.Multiplier, true
		}
	}
	return 0, false
}

// String formats the multipliers in priority order, each followed by its
// rate cap if it has one, and the epoch, e.g.
// "premium=1.00 free=0.50(120.0/s) epoch=1".
func (s State) String() string {
	var b strings.Builder
	for _, t := range s.Tiers {
		fmt.Fprintf(&b, "%s=%.2f", t.Name, t.Multiplier)
		if t.Rate > 0 {
			fmt.Fprintf(&b, "(%.1f/s)", t.Rate)
		}
		b.WriteByte(' ')
	}
	fmt.Fprintf(&b, "epoch=%d", s.Epoch)
	return b.String()
}

// Law is the validated control law. It is immutable and safe for
// concurrent use.
type Law struct {
	s     Settings // defaulted
	tiers []Tier   // in priority order, most important first
}

// NewLaw validates s and returns the law it describes.
func NewLaw(s Settings) (*Law, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	d := s.withDefaults()
	tiers := slices.Clone(d.Tiers)
	slices.SortFunc(tiers, func(a, b Tier) int {
		return cmp.Or(cmp.Compare(a.Priority, b.Priority), strings.Compare(a.Name, b.Name))
	})
	return &Law{s: d, tiers: tiers}, nil
}

// Settings returns the settings with defaults applied.
func (l *Law) Settings() Settings {
	s := l.s
	s.Tiers = slices.Clone(s.Tiers)
	return s
}

// Init returns the starting state: every tier at its ceiling, the hold
// clock starting at now.
func (l *Law) Init(now time.Time) State {
	return l.normalize(State{LastValid: now, At: now}, now)
}

// Step runs the law once: it reads in at now and returns the next state.
//
// The worst usable signal, as a ratio r = value / target, sizes each move:
//
//   - Overloaded (r > 1): the least important tier above its floor is
//     multiplied by max(β, share), never below its floor: a small overshoot
//     gives a small cut, a large one β. keep, the fraction of the load to
//     keep, is the signal's own estimate when it has one (Signal.Keep: the
//     inner loop's refused fraction s says 1 − s) and 1/r otherwise, the
//     cut that would bring a signal proportional to load back to its
//     target; of several overloaded signals the smallest keep counts. When
//     the admitted rates are measured the tier sheds the whole excess,
//     share = 1 − (1 − keep) × total ÷ tier, so a tier that carries part of
//     the load is cut deeper, not cut again and again; otherwise share =
//     keep, as if this tier carried all the load. Past capacity latency and errors rise faster than load,
//     which makes 1/r deeper than the load's excess; a tier carrying only
//     part of the load makes it shallower. Later cuts, one per cool-down so
//     that each shows in the signals first, correct both ways; β bounds
//     each one.
//   - Healthy (r < 1 − headroom): the most important tier below its ceiling
//     becomes max(m + α, m × min(growth, room)), never above its ceiling,
//     where room = (1 − headroom)/r: deep headroom grows it geometrically
//     (at most by its Growth per step), near the band it gains α, as
//     additive increase does. But a tier below its Knee, the multiplier it
//     was last cut from and so the last level known to overload, closes
//     only part of the distance to it: m + (knee − m) × min(1, room − 1)/2,
//     half of it with deep headroom, little of it near the band. A service
//     whose latency stays flat until capacity and then rises steeply reads
//     as deep headroom just below its knee; growing by the room alone would
//     jump back over it and oscillate. Approaching by parts lands in the
//     band instead. Within α/4 of the knee a tier with a rate cap (its
//     admitted rate was measured) holds there until ProbeAfter has passed
//     since its last cut, then probes past it (at most one probe, two
//     direction changes, per ProbeAfter), unless the room is deep (≥ 4:
//     the overload is over); one without a cap passes at once.
//     Passing the knee forgets it. Deep room (≥ 4) while the inner loop
//     refused nothing over the period (its refused fraction, a Signal with
//     a Keep, reads 0: see [Law.idle]) means the overload is over: every
//     tier goes back to its ceiling in one step, so a backend back from a
//     slowdown is not shed for the periods a geometric climb from the
//     floor, one tier after the other, would take. A cut sized by measurement (a signal's
//     own Keep and the tiers' admitted rates) lands where the tier fits,
//     or above it when β or the floor bounded it, not somewhere below: it
//     sets the knee only α/4 above the new multiplier, so the tier holds
//     there rather than stepping back towards the level it was cut from,
//     which would overload again and be cut again. A tier whose measured
//     admitted rate fell below half its rate cap is no longer held by the
//     cut (its surge is over): it forgets its knee and grows by the room
//     at once.
//   - Recovery after HoldTimeout without a usable signal adds α, knee or
//     not: with no reading there is no headroom to size a step by.
//
// The signals read are in.Fresh when one of them is usable, else
// in.Signals (see [Law.read]). While this process is starved of CPU an
// overload holds instead of cutting (see [Law.starved]).
//
// A tier's Rate follows its multiplier. A cut sets it to the tier's
// measured admitted rate (in.Admitted; or the current cap if that is
// lower or the rate is unknown) times the multiplier's change m'/m, so the
// tier as a whole, however many keys share it, admits what the cut meant.
// An increase scales the cap by the same ratio as the multiplier, and the
// cap is removed (0) when the multiplier is back at its ceiling. Without a
// measurement and without a cap, a cut sets no cap.
func (l *Law) Step(st State, in Input, now time.Time) State {
	next := l.normalize(st, now)
	l.explainBounds(st, &next, now)
	next.At = now
	sigs := l.read(in, now)
	cond, worst, keep, driver := l.assess(sigs, now)
	next.Condition = cond
	if cond != ConditionNoSignal {
		next.LastValid = now
	}
	changed, blind := false, time.Duration(0)
	switch cond {
	case ConditionOverloaded:
		if l.starved(in) {
			break
		}
		if keep.sig.Name != "" { // else no signal asked to keep less than all: the worst drove it
			driver = keep.sig
		}
		changed = l.decrease(&next, keep, in.Admitted, now)
	case ConditionHealthy:
		room := math.Inf(1) // a signal at or below 0 leaves all the room there is
		if worst > 0 {
			room = (1 - l.s.Headroom) / worst
		}
		changed = l.increase(&next, ActionIncrease, room, l.idle(sigs, now), in.Admitted, now)
	case ConditionNoSignal:
		if blind = now.Sub(next.LastValid); blind >= l.s.HoldTimeout {
			changed = l.increase(&next, ActionRecover, 1, false, nil, now)
		}
	}
	if changed {
		next.Epoch++
		next.explain(driver, blind, now)
	}
	return next
}

// normalize copies st onto the law's tiers, in priority order: unknown
// tiers are dropped, missing ones start at their ceiling, multipliers are
// clamped into [floor, ceiling] (NaN becomes the ceiling), rate caps that
// are not finite and positive, or whose tier is at its ceiling, are
// removed, and every action is reset to hold.
func (l *Law) normalize(st State, now time.Time) State {
	next := st
	next.Tiers = make([]TierState, len(l.tiers))
	for i, t := range l.tiers {
		ts := TierState{Name: t.Name, Multiplier: t.Ceiling}
		for _, old := range st.Tiers {
			if old.Name == t.Name {
				ts.LastDecrease = old.LastDecrease
				ts.Multiplier = clamp(old.Multiplier, t)
				ts.Rate, ts.Knee = old.Rate, old.Knee
				ts.Reason, ts.Since, ts.Driver = old.Reason, old.Since, old.Driver
				break
			}
		}
		if !(ts.Rate > 0 && ts.Rate <= math.MaxFloat64) || ts.Multiplier == t.Ceiling {
			ts.Rate = 0
		}
		if !(ts.Knee > ts.Multiplier && ts.Knee <= t.Ceiling) {
			ts.Knee = 0
		}
		next.Tiers[i] = ts
	}
	if next.LastValid.IsZero() {
		next.LastValid = now
	}
	return next
}

// snap is how close to a bound a multiplier may come before it is put on
// it, so that rounding (0.5 + 5 × 0.1 = 0.9999999999999999) never costs a
// step.
const snap = 1e-9

func clamp(m float64, t Tier) float64 {
	if math.IsNaN(m) {
		return t.Ceiling
	}
	return math.Max(t.Floor, math.Min(t.Ceiling, m))
}

// Usable reports whether the law takes s into account at now: Valid, a
// value that is not NaN or −Inf, a finite positive target, and not older
// than SignalStaleAfter.
func (l *Law) Usable(s Signal, now time.Time) bool {
	switch {
	case !s.Valid, math.IsNaN(s.Value), math.IsInf(s.Value, -1):
		return false
	case math.IsNaN(s.Target), math.IsInf(s.Target, 0), s.Target <= 0:
		return false
	case !s.At.IsZero() && now.Sub(s.At) > l.s.SignalStaleAfter:
		return false
	}
	return true
}

// reading is the fraction of the load to keep, as the overloaded signals
// say: measured when the smallest came from a signal's own Keep, else
// target/value, an estimate; sig is the signal that says it.
type reading struct {
	keep     float64
	measured bool
	sig      Signal
}

// assess reads the usable signals: the condition, the worst ratio of a
// value to its target (−Inf when none is usable; never NaN), the
// fraction of the load to keep and the signal with the worst ratio.
func (l *Law) assess(sigs []Signal, now time.Time) (Condition, float64, reading, Signal) {
	usable, over, healthy := false, false, true
	worst, keep, worstSig := math.Inf(-1), reading{keep: 1}, Signal{}
	for _, s := range sigs {
		if !l.Usable(s, now) {
			continue
		}
		usable = true
		if r := s.Value / s.Target; r > worst || worstSig.Name == "" {
			worst, worstSig = math.Max(worst, r), s
		}
		if s.Value > s.Target {
			over = true
			k := reading{keep: s.Target / s.Value, sig: s}
			if s.Keep > 0 && s.Keep <= 1 {
				k = reading{keep: s.Keep, measured: true, sig: s}
			}
			if k.keep < keep.keep {
				keep = k
			}
		}
		if !(s.Value < s.Target*(1-l.s.Headroom)) {
			healthy = false
		}
	}
	switch {
	case !usable:
		return ConditionNoSignal, worst, keep, worstSig
	case over:
		return ConditionOverloaded, worst, keep, worstSig
	case healthy:
		return ConditionHealthy, worst, keep, worstSig
	}
	return ConditionBand, worst, keep, worstSig
}
