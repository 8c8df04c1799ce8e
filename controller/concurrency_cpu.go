package controller

import "github.com/throttledhq/throttled/signals"

// CPUWaitReader is what the concurrency loop reads each step to tell a
// window the process was starved of CPU in (Window.CPUWait):
// signals.SharedCPUWait satisfies it.
type CPUWaitReader interface {
	// Read is the fraction of the process's runnable time spent waiting
	// for a CPU over a recent window; an invalid value reads as 0.
	Read() signals.Value
}

// WithCPUWait sets where the loop reads the process's CPU wait. The
// default, signals.ProcessCPUWait, is shared by every loop in the process
// and reads the threads' scheduler times at most once per
// signals.SharedCPUWaitEvery. nil keeps the default.
func WithCPUWait(r CPUWaitReader) ConcurrencyOption {
	return func(l *ConcurrencyLoop) {
		if r != nil {
			l.cpu = r
		}
	}
}

// cpuWait is the reading for the window that just ended; 0 if invalid.
func (l *ConcurrencyLoop) cpuWait() float64 {
	if v := l.cpu.Read(); v.Valid {
		return v.V
	}
	return 0
}
