package controller

import (
	"time"

	"github.com/throttledhq/throttled/signals"
)

// RunDelayReader is what the concurrency loop reads each step to tell a
// window the process was starved of CPU in (Window.RunDelay):
// signals.SharedCPUWait satisfies it.
type RunDelayReader interface {
	// RunDelay is the process's threads' mean wait for a CPU per time
	// slice over a recent window, in seconds; an invalid value reads as 0.
	RunDelay() signals.Value
}

// WithRunDelay sets where the loop reads the process's run delay. The
// default, signals.ProcessCPUWait, is shared by every loop in the process
// and reads the threads' scheduler times at most once per
// signals.SharedCPUWaitEvery. nil keeps the default.
func WithRunDelay(r RunDelayReader) ConcurrencyOption {
	return func(l *ConcurrencyLoop) {
		if r != nil {
			l.cpu = r
		}
	}
}

// runDelay is the reading for the window that just ended; 0 if invalid.
func (l *ConcurrencyLoop) runDelay() time.Duration {
	if v := l.cpu.RunDelay(); v.Valid && v.V > 0 {
		return time.Duration(v.V * float64(time.Second))
	}
	return 0
}
