package bulkhead

import (
	"sync/atomic"
	"time"
)

// Permit is one held place in a Bulkhead or a Gate. Release gives it back;
// releasing again, or releasing a copy, does nothing, so a permit never frees
// more than it took. The zero Permit holds nothing and its Release is a no-op.
//
// A Permit is a small value: taking and releasing one allocates nothing in
// the steady state (the slot it points at is pooled and carries a generation
// number, so a stale copy cannot release the slot's next holder).
type Permit struct {
	s   *slot
	gen uint64
}

// slot is the pooled part of a permit. owner and start are written by the
// one goroutine that takes the slot from its pool, before the Permit is
// handed out, and read by the one Release that wins the generation CAS.
type slot struct {
	gen   atomic.Uint64 // bumped by the one Release that counts
	owner owner
	start time.Duration // since the owner's epoch, when the permit was taken
}

// owner is what a permit is given back to: a *Bulkhead or a *Gate.
type owner interface {
	// release puts s back in its pool and frees the place it held; held is
	// how long the permit was held, or -1 for no sample (Discard).
	release(s *slot, held time.Duration)
	since() time.Duration
}

// Release gives the permit back, and records how long it was held (the
// round trip of the call it guarded). It is safe to call more than once.
func (p Permit) Release() { p.free(true) }

// Discard gives the permit back without recording how long it was held: use
// it when the call it guarded says nothing about the upstream's latency (it
// failed before reaching the upstream, or its caller gave up). Like Release,
// it frees at most once across Release and Discard.
func (p Permit) Discard() { p.free(false) }

func (p Permit) free(sample bool) {
	s := p.s
	if s == nil || !s.gen.CompareAndSwap(p.gen, p.gen+1) {
		return
	}
	held := time.Duration(-1)
	if sample {
		held = max(s.owner.since()-s.start, 0)
	}
	s.owner.release(s, held)
}

// permit wraps a permit already counted in inflight.
func (b *Bulkhead) permit() Permit {
	s := b.slots.Get().(*slot)
	s.start = b.since()
	return Permit{s: s, gen: s.gen.Load()}
}

// release implements owner.
func (b *Bulkhead) release(s *slot, held time.Duration) {
	b.slots.Put(s)
	if held >= 0 {
		b.observe(held)
	}
	b.dec()
}
