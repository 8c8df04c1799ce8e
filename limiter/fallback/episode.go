package fallback

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// episode is one stretch of decisions from the fallback: from the first
// shared decision that failed to the next one that succeeds. It logs its
// start (with the cause) and its end (with its length and how many
// decisions the fallback made), one line each, when Settings.Logger is set.
type episode struct {
	log    *slog.Logger
	now    func() time.Time
	active *atomic.Bool
	// mu orders the transitions; a decision in the middle of an episode
	// only reads active and counts.
	mu    sync.Mutex
	start time.Time
	cause string
	n     atomic.Int64 // decisions from the fallback in this episode
}

// fellBack records a decision from the fallback, starting an episode when
// none is running.
func (e *episode) fellBack(err error) {
	if e.active.Load() {
		e.n.Add(1)
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.active.Load() {
		e.n.Add(1)
		return
	}
	e.active.Store(true)
	e.start, e.cause = e.now(), err.Error()
	e.n.Store(1)
	if e.log != nil {
		e.log.Warn("fallback: the shared store failed: deciding locally until it answers", "cause", e.cause)
	}
}

// answered records a shared decision, ending the running episode.
func (e *episode) answered() {
	if !e.active.Load() {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.active.Load() {
		return
	}
	e.active.Store(false)
	if e.log != nil {
		e.log.Info("fallback: the shared store answers again: shared decisions resume", "cause", e.cause,
			"fallback_decisions", e.n.Load(), "duration", e.now().Sub(e.start).Round(time.Millisecond).String())
	}
}
