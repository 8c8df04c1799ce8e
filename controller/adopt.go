package controller

import (
	"math"
	"time"

	"github.com/throttledhq/throttled/limiter/multiplier"
)

// multipliers is the publishable form of s.
func (s State) multipliers() multiplier.Set {
	m := multiplier.Set{Tiers: make(map[string]float64, len(s.Tiers)), Epoch: s.Epoch, At: s.At}
	for _, t := range s.Tiers {
		m.Tiers[t.Name] = t.Multiplier
		if t.Reason != "" && !t.Since.IsZero() {
			if m.Reasons == nil {
				m.Reasons, m.Since = map[string]string{}, map[string]time.Time{}
			}
			m.Reasons[t.Name], m.Since[t.Name] = t.Reason, t.Since
		}
		if t.Rate > 0 {
			if m.Rates == nil {
				m.Rates = map[string]float64{}
			}
			m.Rates[t.Name] = t.Rate
		}
		if t.Knee > t.Multiplier && !t.LastDecrease.IsZero() {
			if m.Knees == nil {
				m.Knees, m.Cuts = map[string]float64{}, map[string]time.Time{}
			}
			m.Knees[t.Name], m.Cuts[t.Name] = t.Knee, t.LastDecrease
		}
	}
	return m
}

// Adopt continues st from multipliers m published by a previous leader,
// at now. If m is no older than HoldTimeout its multipliers (clamped into
// bounds), rate caps, reasons, knees and the times of its cuts replace
// st's (a tier m has no knee for has none), so that the new leader holds
// and probes where the old one would have; otherwise st's are kept. The
// epoch is at least m's, and newer than m's unless the result is exactly
// m. The hold clock stays st's.
func (l *Law) Adopt(st State, m multiplier.Set, now time.Time) State {
	next := l.normalize(st, now)
	fresh := now.Sub(m.At) <= l.s.HoldTimeout
	same := fresh && len(m.Tiers) == len(l.tiers)
	for i, t := range l.tiers {
		v, ok := m.Tiers[t.Name]
		if ok && fresh {
			if r, since := m.Reasons[t.Name], m.Since[t.Name]; r != "" && !since.IsZero() {
				next.Tiers[i].Reason, next.Tiers[i].Since, next.Tiers[i].Driver = r, since, Signal{}
			}
			next.Tiers[i].Multiplier = clamp(v, t)
			next.Tiers[i].Knee = 0
			if k, cut := m.Knees[t.Name], m.Cuts[t.Name]; k > next.Tiers[i].Multiplier && k <= t.Ceiling && !cut.IsZero() {
				next.Tiers[i].Knee, next.Tiers[i].LastDecrease = k, cut
			}
			next.Tiers[i].Rate = 0
			if r := m.Rates[t.Name]; r > 0 && !math.IsInf(r, 0) && next.Tiers[i].Multiplier < t.Ceiling {
				next.Tiers[i].Rate = r
			}
		}
		same = same && ok && next.Tiers[i].Multiplier == v && next.Tiers[i].Rate == m.Rates[t.Name]
	}
	next.Epoch = max(next.Epoch, m.Epoch)
	if !same {
		next.Epoch = max(next.Epoch, m.Epoch+1)
	}
	return next
}
