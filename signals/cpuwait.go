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
	sample func() schedSample
	now    func() time.Time
	read   bool
	last   schedSample
	recent []float64 // the last UsualReads valid fractions, oldest first
}

// schedSample is the scheduler's times summed over the process's threads:
// on a CPU, waiting on a run queue, and the time slices run (each one a
// wait for a CPU that ended). ok is false where they are not available.
type schedSample struct {
	run, wait time.Duration
	slices    int64
	ok        bool
}

// UsualReads is how many of the last valid reads Usual looks back over.
const UsualReads = 60

// NewCPUWait returns a reader of this process's CPU wait.
func NewCPUWait() *CPUWait { return &CPUWait{sample: schedTimes, now: time.Now} }

// Read is the fraction wait ÷ (run + wait) of the threads' times since the
// previous Read: NoBaseline the first time, NoData when the threads
// neither ran nor waited, Unsupported where the times are not available.
func (c *CPUWait) Read() Value {
	f, _ := c.ReadWindow()
	return f
}

// ReadWindow is Read's fraction and, from the same window, the run delay:
// the threads' mean wait on a run queue per time slice, in seconds (NoData
// when no slice was run). The fraction grows with how often the threads
// wake as much as with how long each wakeup waits: on a 2-core host at
// load 1, a process that wakes its threads tens of thousands of times a
// second waits 0.4–0.6 of its runnable time, as much as one starved on a
// quarter of a core (0.6–0.8). The run delay is the wait of one wakeup:
// tens of microseconds while a CPU is free, a good part of another task's
// time slice once none is.
func (c *CPUWait) ReadWindow() (fraction, delay Value) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sample()
	now := c.now()
	if !s.ok {
		return invalid(Unsupported, now, nil), invalid(Unsupported, now, nil)
	}
	first, prev := !c.read, c.last
	c.read, c.last = true, s
	dr, dw, dn := s.run-prev.run, s.wait-prev.wait, s.slices-prev.slices
	switch {
	case first:
		return invalid(NoBaseline, now, nil), invalid(NoBaseline, now, nil)
	case dr < 0 || dw < 0 || dr+dw <= 0: // threads that ended took their times along
		return invalid(NoData, now, nil), invalid(NoData, now, nil)
	}
	f := float64(dw) / float64(dr+dw)
	if len(c.recent) == UsualReads {
		c.recent = c.recent[1:]
	}
	c.recent = append(c.recent, f)
	delay = invalid(NoData, now, nil)
	if dn > 0 {
		delay = valid(dw.Seconds()/float64(dn), now)
	}
	return valid(f, now), delay
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
