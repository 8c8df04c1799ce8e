package signals

import (
	"sync"
	"time"
)

// SharedCPUWaitEvery is the shortest window of the process-wide reading
// (ProcessCPUWait): reads sooner than that after the last one get its value.
const SharedCPUWaitEvery = 90 * time.Millisecond

// SharedCPUWait is a CPUWait for many readers that poll often (the inner
// loop of every instance in the process, every 100 ms): the first Read in
// each period of `every` takes a new window, the others get its value, so
// each reader sees a window of about `every` however many read, and the
// threads' times are read once per period, not once per reader. It is
// safe for concurrent use.
type SharedCPUWait struct {
	c     *CPUWait
	every time.Duration

	mu    sync.Mutex
	last  Value
	delay Value // the run delay of last's window
	has   bool
}

// NewSharedCPUWait returns a shared reader of c whose windows are at
// least every long.
func NewSharedCPUWait(c *CPUWait, every time.Duration) *SharedCPUWait {
	return &SharedCPUWait{c: c, every: every}
}

var processCPUWait = sync.OnceValue(func() *SharedCPUWait {
	return NewSharedCPUWait(NewCPUWait(), SharedCPUWaitEvery)
})

// ProcessCPUWait is this process's shared reader (windows of
// SharedCPUWaitEvery).
func ProcessCPUWait() *SharedCPUWait { return processCPUWait() }

// Read is the fraction of the process's runnable time spent waiting for a
// CPU over the last window (see CPUWait.Read): a new window if the last
// began `every` or longer ago, else the last one's value.
func (s *SharedCPUWait) Read() Value {
	f, _ := s.window()
	return f
}

// RunDelay is the run delay (CPUWait.ReadWindow) of the same window as
// Read: the threads' mean wait for a CPU per time slice, in seconds.
func (s *SharedCPUWait) RunDelay() Value {
	_, d := s.window()
	return d
}

// window is the current window's fraction and run delay, taking a new
// window if the last began `every` or longer ago.
func (s *SharedCPUWait) window() (fraction, delay Value) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.has || s.c.now().Sub(s.last.At) >= s.every {
		s.last, s.delay = s.c.ReadWindow()
		s.has = true
	}
	return s.last, s.delay
}
