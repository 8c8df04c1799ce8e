package bulkhead

import (
	"math"
	"sync/atomic"
	"time"
)

// congestion remembers the most important priority that recently waited
// long in a Gate's queue (at least half of MaxWait, or until it was shed):
// that priority alone fills the limit, so a permit given to a less
// important call is one it will miss. For that priority's longest wait
// (MaxWait; TopMaxWait at priority 0) after such a wait, a less important
// newcomer is shed at once even below the limit. Without this, at
// a load where the important calls alone match the upstream's capacity,
// less important calls slip into every momentary gap, the queue of the
// important ones grows by their work, and important calls are shed after
// MaxWait while less important ones are admitted.
//
// Its two fields are atomics, written and read without the gate's mutex: a
// reader may pair one write's priority with another's deadline, which at
// worst sheds or admits one call by a stale reading, never blocks one.
type congestion struct {
	prio  atomic.Int64 // the most important congested priority; math.MaxInt64 for none
	until atomic.Int64 // when the congestion ends, ns since the gate's epoch
}

func (c *congestion) init() { c.prio.Store(math.MaxInt64) }

// mark records that a caller of priority p waited long at now (since the
// epoch): p is congested until now + window, and stays the recorded
// priority unless a more important one is marked or its window ends.
func (c *congestion) mark(p int, now, window time.Duration) {
	until := int64(now + window)
	if cur := c.prio.Load(); int64(p) > cur && c.until.Load() > int64(now) {
		return // a more important priority is congested: it stays the reference
	}
	c.prio.Store(int64(p))
	c.until.Store(until)
}

// yields reports whether a newcomer of priority p must give way at now: a
// more important priority is congested.
func (c *congestion) yields(p int, now func() time.Duration) bool {
	if int64(p) <= c.prio.Load() {
		return false // the common case: no clock read
	}
	return c.until.Load() > int64(now())
}

// longWait is the wait from which a caller counts as congested: half of
// the longest a caller may wait.
func longWait(maxWait time.Duration) time.Duration { return maxWait / 2 }
