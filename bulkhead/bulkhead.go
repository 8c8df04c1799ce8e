package bulkhead

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ErrFull is returned when a bulkhead has no permit to give: every permit is
// held and the wait queue is full, absent, or the wait ran out. Callers map it
// to 503 with reason "bulkhead" and a Retry-After from Bulkhead.RetryAfter.
var ErrFull = errors.New("bulkhead: full")

// Bulkhead bounds how many calls run at once. Its methods are safe for
// concurrent use; see the package doc for the admission rules.
type Bulkhead struct {
	inflight atomic.Int64
	limit    atomic.Int64
	waiting  atomic.Int64 // len(queue), readable without mu
	hold     atomic.Int64 // moving average of permit hold time, ns

	name     string
	s        Settings
	epoch    time.Time
	slots    sync.Pool // of *slot
	rejected prometheus.Counter
	metrics  *Metrics

	mu    sync.Mutex
	queue []*waiter // FIFO; bounded by s.MaxQueue
}

// Stats is a snapshot of one bulkhead.
type Stats struct {
	Name     string `json:"name"`
	Limit    int    `json:"limit"`
	InFlight int    `json:"in_flight"`
	Waiting  int    `json:"waiting"`
}

// New returns a bulkhead named name (the metric label). m may be nil for no
// metrics; a name is attached to one Metrics at a time (see Close).
func New(name string, s Settings, m *Metrics) (*Bulkhead, error) {
	if name == "" {
		return nil, errors.New("bulkhead: name must not be empty")
	}
	s, err := s.normalize()
	if err != nil {
		return nil, fmt.Errorf("%w (bulkhead %q)", err, name)
	}
	b := &Bulkhead{name: name, s: s, epoch: s.Now()}
	b.limit.Store(int64(s.Limit))
	b.slots.New = func() any { return &slot{owner: b} }
	if m != nil {
		if err := m.attachBulkhead(b); err != nil {
			return nil, err
		}
		b.metrics = m
		b.rejected = m.rejected.WithLabelValues(name)
	}
	return b, nil
}

// Name returns the bulkhead's name.
func (b *Bulkhead) Name() string { return b.name }

// Limit returns the current limit.
func (b *Bulkhead) Limit() int { return int(b.limit.Load()) }

// InFlight returns how many permits are held now.
func (b *Bulkhead) InFlight() int { return int(b.inflight.Load()) }

// Stats returns a snapshot; the fields are read one by one, not atomically together.
func (b *Bulkhead) Stats() Stats {
	return Stats{Name: b.name, Limit: b.Limit(), InFlight: b.InFlight(), Waiting: int(b.waiting.Load())}
}

// TryAcquire takes a permit if one is free now and never waits. A full
// bulkhead answers ErrFull.
func (b *Bulkhead) TryAcquire() (Permit, error) {
	if b.tryInc() {
		return b.permit(), nil
	}
	return Permit{}, b.full()
}

// Acquire takes a permit. When none is free it waits in the queue (if
// Settings.MaxQueue > 0 and there is room) for at most Settings.MaxWait;
// refusals are ErrFull. If ctx ends first it returns ctx.Err() and holds
// nothing. The caller must Release the permit it gets.
func (b *Bulkhead) Acquire(ctx context.Context) (Permit, error) {
	if err := ctx.Err(); err != nil {
		return Permit{}, err
	}
	// Do not overtake queued callers; the queue path admits at once when it can.
	if b.waiting.Load() == 0 && b.tryInc() {
		return b.permit(), nil
	}
	if b.s.MaxQueue == 0 {
		return Permit{}, b.full()
	}
	return b.wait(ctx)
}

// Do runs fn holding a permit, and releases it when fn returns or panics.
func (b *Bulkhead) Do(ctx context.Context, fn func(context.Context) error) error {
	p, err := b.Acquire(ctx)
	if err != nil {
		return err
	}
	defer p.Release()
	return fn(ctx)
}

// Resize sets the limit (at least 1). Growing admits queued callers at once.
// Shrinking below the permits in flight takes nothing away from their
// holders; no new permit is given until fewer than limit are held.
func (b *Bulkhead) Resize(limit int) error {
	if limit < 1 {
		return fmt.Errorf("bulkhead: %q: limit must be at least 1, got %d", b.name, limit)
	}
	b.limit.Store(int64(limit))
	b.grant()
	return nil
}

// RetryAfter suggests how long a refused client should wait: the average
// permit hold time × (queued callers + 1) / limit, i.e. roughly when a permit
// reaches it, within [Settings.MinRetryAfter, Settings.MaxRetryAfter].
func (b *Bulkhead) RetryAfter() time.Duration {
	hold := b.hold.Load()
	est := time.Duration(hold / b.limit.Load() * (b.waiting.Load() + 1))
	return min(max(est, b.s.MinRetryAfter), b.s.MaxRetryAfter)
}

// Close detaches the bulkhead from its Metrics, so that its series go away
// and its name may be used again there. The bulkhead itself keeps working.
func (b *Bulkhead) Close() {
	if b.metrics != nil {
		b.metrics.detachBulkhead(b)
	}
}

// tryInc takes a permit if fewer than limit are held; not under b.mu.
func (b *Bulkhead) tryInc() bool {
	_, ok, undone := take(&b.inflight, &b.limit)
	if undone { // a release meanwhile may have found our count and granted nothing
		b.grant()
	}
	return ok
}

// take counts a permit in inflight if fewer than limit are held, and
// returns the count it took (n): the one admission check of Bulkhead and
// Gate. The limit is read again after the count: one read before a
// concurrent Resize (SetLimit) shrank it would otherwise admit a call above
// the new limit, after the resizer may have seen the permits in flight
// within it (TestResizeUnderLoadLeaksNoPermit and
// TestGateUnderLoadLeaksNoPermit each caught one in a CI run;
// TestShrinkDuringAcquireAdmitsNothingAbove pins it). Such a count is
// taken back (undone); a caller not under its lock must then grant, since
// a release meanwhile may have found the count and granted nothing (under
// the lock, that release's grant runs once the lock is free).
func take(inflight, limit *atomic.Int64) (n int64, ok, undone bool) {
	for {
		cur := inflight.Load()
		if cur >= limit.Load() {
			return 0, false, false
		}
		if hookBeforeCount != nil {
			hookBeforeCount()
		}
		if inflight.CompareAndSwap(cur, cur+1) {
			if cur+1 > limit.Load() { // shrunk meanwhile: not ours to take
				inflight.Add(-1)
				return 0, false, true
			}
			return cur + 1, true, false
		}
	}
}

// hookBeforeCount, set only by tests, runs in take between its read of the
// limit and its count.
var hookBeforeCount func()

// dec gives a permit back and hands it to the head of the queue, if any.
// The decrement comes before the read of waiting, and a waiter publishes
// itself in waiting before it looks at inflight (wait), so one of the two
// always sees the other: a freed permit never sits idle beside a waiter.
func (b *Bulkhead) dec() {
	b.inflight.Add(-1)
	b.grant()
}

func (b *Bulkhead) full() error {
	if b.rejected != nil {
		b.rejected.Inc()
	}
	return ErrFull
}

// observe folds one hold time into the moving average (weight 1/8).
func (b *Bulkhead) observe(d time.Duration) {
	if d < 0 {
		d = 0
	}
	for {
		old := b.hold.Load()
		next := int64(d)
		if old != 0 {
			next = old + (int64(d)-old)/8
		}
		if b.hold.CompareAndSwap(old, next) {
			return
		}
	}
}

func (b *Bulkhead) since() time.Duration { return b.s.Now().Sub(b.epoch) }
