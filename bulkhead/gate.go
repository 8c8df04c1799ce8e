package bulkhead

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ErrShed is returned by a Gate that refuses a call: the limit is reached
// and the caller found no place in the queue, was evicted from it by a more
// important caller, or waited its longest wait without a permit. Callers answer 503
// with reason "shed".
var ErrShed = errors.New("bulkhead: shed")

// Gate is a priority-aware concurrency limit whose limit a controller moves
// at run time (SetLimit), from the latency samples the gate collects
// (TakeWindow). Its methods are safe for concurrent use; see the package
// doc for the admission rules.
//
// Lock rules: the counters and the sample window are atomics, read and
// written without mu. mu guards queue and the state of every queued waiter;
// a waiter is granted or evicted only under mu, and the signal on its ready
// channel is sent under mu too, so a waiter that finds itself no longer
// queued (under mu) knows that the signal is in its channel.
type Gate struct {
	inflight atomic.Int64
	limit    atomic.Int64
	waiting  atomic.Int64 // len(queue), readable without mu

	// The sample window, reset by TakeWindow.
	samples atomic.Int64
	sum     atomic.Int64 // of hold times, ns
	fastest atomic.Int64 // shortest hold time, ns; math.MaxInt64 for none
	peak    atomic.Int64 // most permits held at once

	asked, refused atomic.Int64 // calls to Acquire, and those refused (ErrShed), since the gate was made
	topAsked       atomic.Int64 // calls to Acquire at priority 0 since the gate was made
	cong           congestion   // the most important priority that waited long lately

	name     string
	s        GateSettings
	epoch    time.Time
	slots    sync.Pool // of *slot
	waiters  sync.Pool // of *gateWaiter
	rejected prometheus.Counter
	shed     [shedLabels]prometheus.Counter
	metrics  *Metrics

	mu    sync.Mutex
	queue []*gateWaiter // by priority, most important first, then by arrival; at most s.MaxQueue
}

// NewGate returns a gate named name (the metric label). m may be nil for no
// metrics; a name is attached to one Metrics at a time (see Close), shared
// with the bulkheads there.
func NewGate(name string, s GateSettings, m *Metrics) (*Gate, error) {
	if name == "" {
		return nil, errors.New("bulkhead: gate name must not be empty")
	}
	s, err := s.normalize()
	if err != nil {
		return nil, fmt.Errorf("%w (gate %q)", err, name)
	}
	g := &Gate{name: name, s: s, epoch: s.Now(), queue: make([]*gateWaiter, 0, s.MaxQueue)}
	g.limit.Store(int64(s.Limit))
	g.fastest.Store(math.MaxInt64)
	g.cong.init()
	g.slots.New = func() any { return &slot{owner: g} }
	g.waiters.New = newGateWaiter
	if m != nil {
		if err := m.attachPool(name, g, "gate"); err != nil {
			return nil, err
		}
		g.metrics = m
		g.rejected = m.rejected.WithLabelValues(name)
		for p := range g.shed {
			g.shed[p] = m.shed.WithLabelValues(name, shedLabel(p))
		}
	}
	return g, nil
}

// Name returns the gate's name.
func (g *Gate) Name() string { return g.name }

// Limit returns the current limit.
func (g *Gate) Limit() int { return int(g.limit.Load()) }

// InFlight returns how many permits are held now.
func (g *Gate) InFlight() int { return int(g.inflight.Load()) }

// Stats returns a snapshot; the fields are read one by one, not atomically
// together.
func (g *Gate) Stats() Stats {
	return Stats{Name: g.name, Limit: g.Limit(), InFlight: g.InFlight(), Waiting: int(g.waiting.Load())}
}

// Acquire takes a permit for a call of the given priority: 0 is the most
// important, larger values are shed first (a negative priority counts as 0).
// Below the limit it admits at once. At the limit the caller queues, behind
// every waiter at least as important and ahead of every less important one,
// for at most MaxWait (TopMaxWait at priority 0). A full queue sheds its least important, newest
// waiter to make room for a more important newcomer, and refuses a
// newcomer no more important than that waiter. A caller that waited at
// least half of MaxWait, or was shed, marks its priority congested for
// its own longest wait (MaxWait; TopMaxWait at priority 0, whose queue
// drains on that scale): meanwhile every less important newcomer is shed
// at once, even below the limit (the permit would be one the congested
// priority misses). Refusals are ErrShed. If ctx
// ends first Acquire returns ctx.Err() and holds nothing. The caller must
// Release (or Discard) the permit it gets.
func (g *Gate) Acquire(ctx context.Context, priority int) (Permit, error) {
	if err := ctx.Err(); err != nil {
		return Permit{}, err
	}
	g.asked.Add(1)
	priority = max(priority, 0)
	if priority == 0 {
		g.topAsked.Add(1)
	}
	if g.cong.yields(priority, g.since) {
		return Permit{}, g.refuse(priority)
	}
	// Do not overtake queued callers; the queue path admits at once when it can.
	if g.waiting.Load() == 0 && g.tryInc() {
		return g.permit(), nil
	}
	return g.wait(ctx, priority)
}

// SetLimit sets the limit, raised to MinLimit if lower. Growing admits
// queued callers at once, most important first. Shrinking below the permits
// in flight takes nothing from their holders; no new permit is given until
// fewer than limit are held.
func (g *Gate) SetLimit(limit int) {
	g.limit.Store(int64(max(limit, g.s.MinLimit)))
	g.grant()
}

// TakeWindow returns what the gate saw since the previous TakeWindow (or
// since it was made), and starts a new window: how many permits were
// released with a sample (Release, not Discard), their average and shortest
// hold time (0 when there was none), and the most permits held at once
// (at least those held now). A call that completes during TakeWindow may be
// split between two windows; the error is one sample.
func (g *Gate) TakeWindow() (samples int, avg, fastest time.Duration, peak int) {
	n := g.samples.Swap(0)
	sum := g.sum.Swap(0)
	f := g.fastest.Swap(math.MaxInt64)
	peak = int(g.peak.Swap(g.inflight.Load()))
	if n <= 0 || sum < 0 {
		return 0, 0, 0, peak
	}
	avg = time.Duration(sum / n)
	return int(n), avg, min(time.Duration(f), avg), peak
}

// Close detaches the gate from its Metrics, so that its series go away and
// its name may be used again there. The gate itself keeps working.
func (g *Gate) Close() {
	if g.metrics != nil && g.metrics.detachPool(g.name, g) {
		g.metrics.shed.DeletePartialMatch(prometheus.Labels{"name": g.name})
	}
}

// tryInc takes a permit if fewer than limit are held (take), and keeps the
// peak; not under g.mu.
func (g *Gate) tryInc() bool {
	ok, undone := g.count()
	if undone { // a release meanwhile may have found our count and granted nothing
		g.grant()
	}
	return ok
}

// count is take and the peak, under g.mu or not.
func (g *Gate) count() (ok, undone bool) {
	n, ok, undone := take(&g.inflight, &g.limit)
	for p := g.peak.Load(); ok && n > p && !g.peak.CompareAndSwap(p, n); p = g.peak.Load() {
	}
	return ok, undone
}

// permit wraps a permit already counted in inflight.
func (g *Gate) permit() Permit {
	s := g.slots.Get().(*slot)
	s.start = g.since()
	return Permit{s: s, gen: s.gen.Load()}
}

// release implements owner. The decrement comes before the read of waiting
// (in grant), and a waiter publishes itself in waiting before it looks at
// inflight (wait), so one of the two always sees the other: a freed permit
// never sits idle beside a waiter.
func (g *Gate) release(s *slot, held time.Duration) {
	g.slots.Put(s)
	if held >= 0 {
		g.observe(held)
	}
	g.inflight.Add(-1)
	g.grant()
}

// observe adds one hold time to the window.
func (g *Gate) observe(d time.Duration) {
	g.sum.Add(int64(d))
	for f := g.fastest.Load(); int64(d) < f && !g.fastest.CompareAndSwap(f, int64(d)); f = g.fastest.Load() {
	}
	g.samples.Add(1)
}

// Refusals are the calls to Acquire since the gate was made and how many
// of them were refused with ErrShed: the inner loop reads them as its
// saturation.
func (g *Gate) Refusals() (asked, refused int64) { return g.asked.Load(), g.refused.Load() }

// TopAsked is how many calls of priority 0 (the most important) asked for
// a permit since the gate was made, admitted or not: the inner loop keeps
// the permits their rate needs at the upstream's latency.
func (g *Gate) TopAsked() int64 { return g.topAsked.Load() }

// refuse counts one call of priority p shed.
func (g *Gate) refuse(p int) error {
	g.refused.Add(1)
	if g.rejected != nil {
		g.rejected.Inc()
		g.shed[min(p, shedLabels-1)].Inc()
	}
	return ErrShed
}

func (g *Gate) since() time.Duration { return g.s.Now().Sub(g.epoch) }
