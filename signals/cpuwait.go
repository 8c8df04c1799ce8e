package signals

import (
	"slices"
	"sync"
	"time"
)

// CPUWait reads how short of CPU this process is: the fraction of its
// threads' runnable time spent waiting for a CPU rather than running on
// one, over the window since the previous Read. A sidecar beside a noisy
// neighbour, or under its pod's CPU limit, waits while it would run; the
// latencies it measures then hold its own waiting beside the backend's.
// Linux reads the scheduler's per-thread run and run-queue times
// (/proc/self/task/*/schedstat); elsewhere every Read is Unsupported. It
// is safe for concurrent use; readers share the window.
type CPUWait struct {
	mu     sync.Mutex
	sample func() (run, wait time.Duration, ok bool)
	now    func() time.Time
	read   bool
	run    time.Duration
	wait   time.Duration
	recent []float64 // the last UsualReads valid fractions, oldest first
}

// UsualReads is how many of the last valid reads Usual looks back over.
const UsualReads = 60

// NewCPUWait returns a reader of this process's CPU wait.
func NewCPUWait() *CPUWait { return &CPUWait{sample: schedTimes, now: time.Now} }

// Read is the fraction wait ÷ (run + wait) of the threads' times since the
// previous Read: NoBaseline the first time, NoData when the threads
// neither ran nor waited, Unsupported where the times are not available.
func (c *CPUWait) Read() Value {
	c.mu.Lock()
	defer c.mu.Unlock()
	run, wait, ok := c.sample()
	now := c.now()
	if !ok {
		return invalid(Unsupported, now, nil)
	}
	first, dr, dw := !c.read, run-c.run, wait-c.wait
	c.read, c.run, c.wait = true, run, wait
	switch {
	case first:
		return invalid(NoBaseline, now, nil)
	case dr < 0 || dw < 0 || dr+dw <= 0: // threads that ended took their times along
		return invalid(NoData, now, nil)
	}
	f := float64(dw) / float64(dr+dw)
	if len(c.recent) == UsualReads {
		c.recent = c.recent[1:]
	}
	c.recent = append(c.recent, f)
	return valid(f, now)
}

// Usual is the least fraction of the last UsualReads valid reads (0 before
// any): what this process waits on this host anyway. A sidecar on a host
// that is always busy waits steadily, and its readings and its inner
// loop's baseline hold that wait; what its readings mistake for the
// backend's slowness is a wait above the usual.
func (c *CPUWait) Usual() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.recent) == 0 {
		return 0
	}
	return slices.Min(c.recent)
}
