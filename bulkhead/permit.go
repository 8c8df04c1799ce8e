package bulkhead

import (
	"sync/atomic"
	"time"
)

// Permit is one held place in a Bulkhead. Release gives it back; releasing
// again, or releasing a copy, does nothing, so a permit never frees more than
// it took. The zero Permit holds nothing and its Release is a no-op.
//
// A Permit is a small value: taking and releasing one allocates nothing in
// the steady state (the slot it points at is pooled and carries a generation
// number, so a stale copy cannot release the slot's next holder).
type Permit struct {
	s   *slot
	gen uint64
}

type slot struct {
	gen   atomic.Uint64 // bumped by the one Release that counts
	b     *Bulkhead
	start time.Duration // since b.epoch, when the permit was taken
}

// Release gives the permit back. It is safe to call more than once.
func (p Permit) Release() {
	s := p.s
	if s == nil || !s.gen.CompareAndSwap(p.gen, p.gen+1) {
		return
	}
	b, start := s.b, s.start
	b.slots.Put(s)
	b.observe(b.since() - start)
	b.dec()
}

// permit wraps a permit already counted in inflight.
func (b *Bulkhead) permit() Permit {
	s := b.slots.Get().(*slot)
	s.start = b.since()
	return Permit{s: s, gen: s.gen.Load()}
}
