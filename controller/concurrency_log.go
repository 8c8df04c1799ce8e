package controller

// The inner loop's limit changes, summarised in the log at most once per
// LimitLogEvery: it may move the limit every 100 ms, and a line each time
// would drown the log.

import (
	"context"
	"log/slog"
	"time"
)

// LimitLogEvery is the shortest time between two summaries of a
// concurrency loop's limit changes.
const LimitLogEvery = time.Second

// msgLimitChanged is the message of a summary of limit changes.
const msgLimitChanged = "controller: concurrency limit changed"

// ConcurrencyOption changes how a ConcurrencyLoop is built.
type ConcurrencyOption func(*ConcurrencyLoop)

// WithLimitLog sets where the loop summarises its limit changes, at INFO
// and at most once per LimitLogEvery: loop (its name), from (the limit
// before the first change summarised), to (the limit now), changes (how
// many steps changed it), min and max (the range it took), baseline and
// latency (the law's, now). A limit that holds logs nothing. nil keeps the
// default, which discards.
func WithLimitLog(log *slog.Logger) ConcurrencyOption {
	return func(l *ConcurrencyLoop) {
		if log != nil {
			l.log = log
		}
	}
}

// limitSummary gathers the limit changes since the last summary.
type limitSummary struct {
	from, lo, hi, changes int
	logged                time.Time // when the last summary was logged; zero before the first
}

// note records a step of the limit from prev to next at now, and logs the
// summary when one is due.
func (l *ConcurrencyLoop) note(prev int, st GradientState, now time.Time) {
	s, next := &l.sum, st.Permits()
	if next != prev {
		if s.changes == 0 {
			s.from, s.lo, s.hi = prev, prev, prev
		}
		s.changes++
		s.lo, s.hi = min(s.lo, next), max(s.hi, next)
	}
	if s.changes == 0 || (!s.logged.IsZero() && now.Sub(s.logged) < LimitLogEvery) {
		return
	}
	l.log.LogAttrs(context.Background(), slog.LevelInfo, msgLimitChanged, slog.String("loop", l.name),
		slog.Int("from", s.from), slog.Int("to", next), slog.Int("changes", s.changes),
		slog.Int("min", s.lo), slog.Int("max", s.hi),
		slog.Duration("baseline", st.Baseline), slog.Duration("latency", st.Latency))
	*s = limitSummary{logged: now}
}
