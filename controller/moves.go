package controller

// Every move of the law explained: the reason a tier's multiplier last
// changed, and the INFO line the leader logs for it.

import (
	"context"
	"log/slog"
	"strconv"
	"time"
)

// msgMultiplierChanged is the message of the line logged for each change of
// a tier's multiplier.
const msgMultiplierChanged = "controller: multiplier changed"

// Reason says in words why a step took action on a tier: the action and
// the signal that drove it against its target, e.g. "decrease: latency_p99
// 0.82s > target 0.25s" or "increase: error_ratio 0.001 < target 0.05"; a
// recovery says how long no signal was usable, "recover: no usable signal
// for 40s". A latency (a signal named latency…) is written in seconds, any
// other signal as the ratio it is.
func Reason(action Action, driver Signal, blind time.Duration) string {
	if action == ActionRecover || driver.Name == "" {
		return action.String() + ": no usable signal for " + blind.Round(time.Second).String()
	}
	cmp := " < target "
	if driver.Value > driver.Target {
		cmp = " > target "
	} else if action == ActionDecrease {
		cmp = " at target "
	}
	return action.String() + ": " + driver.Name + " " + signalValue(driver.Name, driver.Value) +
		cmp + signalValue(driver.Name, driver.Target)
}

// signalValue writes v with three significant digits, with "s" for a latency.
func signalValue(name string, v float64) string {
	s := strconv.FormatFloat(v, 'g', 3, 64)
	if unitOf(name) == unitSeconds {
		s += "s"
	}
	return s
}

// explain records on every tier the step moved (its LastAction is not
// hold) the reason, the time and the driving signal.
func (s *State) explain(driver Signal, blind time.Duration, now time.Time) {
	for i := range s.Tiers {
		ts := &s.Tiers[i]
		if ts.LastAction == ActionHold {
			continue
		}
		ts.Since, ts.Driver = now, driver
		if ts.LastAction == ActionRecover {
			ts.Driver = Signal{}
		}
		ts.Reason = Reason(ts.LastAction, ts.Driver, blind)
	}
}

// explainBounds gives each tier of next whose multiplier its bounds moved
// (a law with another floor or ceiling than st's) the reason
// "hold: floor F, ceiling C" and the time now.
func (l *Law) explainBounds(st State, next *State, now time.Time) {
	for i := range next.Tiers {
		ts, t := &next.Tiers[i], l.tiers[i]
		if old, ok := st.Multiplier(ts.Name); ok && old != ts.Multiplier {
			ts.Reason = ActionHold.String() + ": floor " + strconv.FormatFloat(t.Floor, 'g', 3, 64) +
				", ceiling " + strconv.FormatFloat(t.Ceiling, 'g', 3, 64)
			ts.Since, ts.Driver = now, Signal{}
		}
	}
}

// logMoves logs one INFO line per tier whose multiplier differs between
// before and after: tier, from, to, action, signal, value, target (the
// signal's; absent for a recovery) and reason.
func logMoves(ctx context.Context, log *slog.Logger, before, after State) {
	for _, t := range after.Tiers {
		from, ok := before.Multiplier(t.Name)
		if !ok || from == t.Multiplier {
			continue
		}
		attrs := []slog.Attr{slog.String("tier", t.Name), slog.Float64("from", from), slog.Float64("to", t.Multiplier),
			slog.String("action", t.LastAction.String())}
		if t.Driver.Name != "" {
			attrs = append(attrs, slog.String("signal", t.Driver.Name), slog.Float64("value", t.Driver.Value),
				slog.Float64("target", t.Driver.Target))
		}
		attrs = append(attrs, slog.String("reason", t.Reason), slog.Uint64("epoch", after.Epoch))
		log.LogAttrs(ctx, slog.LevelInfo, msgMultiplierChanged, attrs...)
	}
}
