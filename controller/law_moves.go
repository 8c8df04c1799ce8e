package controller

// The law's two moves on a tier: a cut (decrease) and a raise (increase),
// with the rules about the knee; Law.Step documents them.

import (
	"math"
	"time"
)

// decrease cuts the least important tier above its floor by max(β,
// share), unless a cut happened less than Cooldown ago, and sets its rate
// cap from admitted. keep is the fraction of the whole load to keep; when
// the admitted rates say how much of it the tier carries, the tier sheds
// the whole excess, share = 1 − (1 − keep) × total ÷ tier, else share =
// keep. It reports whether it cut.
func (l *Law) decrease(st *State, keep reading, admitted map[string]float64, now time.Time) bool {
	for _, ts := range st.Tiers {
		if !ts.LastDecrease.IsZero() && now.Sub(ts.LastDecrease) < l.s.Cooldown {
			return false
		}
	}
	for i := len(st.Tiers) - 1; i >= 0; i-- {
		t, ts := l.tiers[i], &st.Tiers[i]
		if ts.Multiplier > t.Floor {
			old := ts.Multiplier
			share, fit := tierShare(keep.keep, admitted, ts.Name)
			ts.Multiplier = old * math.Max(t.Beta, share)
			if ts.Multiplier < t.Floor+snap {
				ts.Multiplier = t.Floor
			}
			ts.Rate = cutRate(ts.Rate, admitted[ts.Name], ts.Multiplier/old)
			ts.Knee = old
			if keep.measured && fit {
				// The tier fits here, or lower if β or the floor bounded the cut.
				ts.Knee = math.Min(old, ts.Multiplier+t.Alpha/4)
			}
			ts.LastAction = ActionDecrease
			ts.LastDecrease = now
			return true
		}
	}
	return false
}

// tierShare is the fraction of its load tier keeps so that the whole
// load falls to keep of itself: the tier sheds the whole excess when the
// admitted rates are known, else keep.
// It reports whether the admitted rates were known (the share sized
// from them).
func tierShare(keep float64, admitted map[string]float64, tier string) (float64, bool) {
	own, total := admitted[tier], 0.0
	for _, a := range admitted {
		if a > 0 && a <= math.MaxFloat64 {
			total += a
		}
	}
	if !(own > 0 && own <= math.MaxFloat64) || total <= 0 {
		return keep, false
	}
	return math.Max(0, 1-(1-keep)*total/own), true
}

// cutRate is the rate cap after a cut by ratio: the lower of the current
// cap and the measured rate, each only if known (positive and finite),
// times ratio; 0 (no cap) when neither is known.
func cutRate(limit, measured, ratio float64) float64 {
	if measured > 0 && measured <= math.MaxFloat64 && (limit == 0 || measured < limit) {
		limit = measured
	}
	return limit * ratio
}

// kneeRelease: at its knee a tier with this much room (its worst signal
// below (1 − headroom)/kneeRelease of its target) passes it at once. While
// the overload that set the knee lasts, the service runs at its capacity
// and its latency shows it (queueing at the inner loop's limit); deep
// headroom there means the overload is over. Not much less: a service
// whose latency stays flat until capacity reads as room 2.5 to 4 in
// seconds when a cut left it just below capacity (measured in `throttled
// bench overload --scenario instances`), and a release there jumps past
// the knee by the room and is cut again.
const kneeRelease = 4

// kneeSlack: a tier whose measured admitted rate is below this fraction of
// its rate cap is no longer held by the cut (its surge is over), so it
// grows freely, knee or not.
const kneeSlack = 0.5

// increase raises the most important tier below its ceiling (see Step for
// by how much: room is 1 for a recovery), scales its rate cap alike, and
// marks it with action. idle says the inner loop refused nothing over the
// period (see [Law.idle]): with deep room too (≥ kneeRelease) the overload
// is over and every tier goes back to its ceiling at once (release). It
// reports whether it raised one; a tier holding at its knee raises none.
func (l *Law) increase(st *State, action Action, room float64, idle bool, admitted map[string]float64, now time.Time) bool {
	if action == ActionIncrease && idle && room >= kneeRelease {
		return l.release(st)
	}
	for i := range st.Tiers {
		t, ts := l.tiers[i], &st.Tiers[i]
		if ts.Multiplier < t.Ceiling {
			old := ts.Multiplier
			if a := admitted[ts.Name]; a > 0 && a <= math.MaxFloat64 && ts.Rate > 0 && a < ts.Rate*kneeSlack {
				ts.Knee = 0 // the cut no longer binds: the overload that set the knee is over
			}
			gap := ts.Knee - old
			switch {
			case action == ActionIncrease && gap > t.Alpha/4+snap: // snap: m + α/4 − m may round above α/4
				ts.Multiplier = old + gap*math.Min(1, room-1)/2
			case action == ActionIncrease && gap > 0 && ts.Rate > 0 && room < kneeRelease && now.Sub(ts.LastDecrease) < l.s.ProbeAfter:
				return false // at its knee, still held by its cap: hold until a probe past it is due
			default:
				ts.Multiplier = math.Max(old+t.Alpha, old*math.Min(t.Growth, room))
			}
			if ts.Multiplier > t.Ceiling-snap {
				ts.Multiplier = t.Ceiling
			}
			if ts.Multiplier >= ts.Knee {
				ts.Knee = 0
			}
			ts.Rate *= ts.Multiplier / old
			if ts.Multiplier == t.Ceiling || ts.Rate > math.MaxFloat64 {
				ts.Rate = 0 // at the ceiling, or a cap too large to bound anything
			}
			ts.LastAction = action
			return true
		}
	}
	return false
}

// release puts every tier below its ceiling back at it, without a knee or
// a rate cap, marked as an increase. It reports whether it raised one.
func (l *Law) release(st *State) bool {
	raised := false
	for i := range st.Tiers {
		if t, ts := l.tiers[i], &st.Tiers[i]; ts.Multiplier < t.Ceiling {
			ts.Multiplier, ts.Knee, ts.Rate, ts.LastAction = t.Ceiling, 0, 0, ActionIncrease
			raised = true
		}
	}
	return raised
}
