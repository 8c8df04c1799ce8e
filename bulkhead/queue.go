package bulkhead

import (
	"context"
	"time"
)

// waiter is one caller in the wait queue. granted is guarded by Bulkhead.mu;
// ready receives once when a permit has been counted for it.
type waiter struct {
	ready   chan struct{}
	granted bool
}

// wait queues the caller for at most MaxWait. Queued callers are served in
// arrival order.
func (b *Bulkhead) wait(ctx context.Context) (Permit, error) {
	w := &waiter{ready: make(chan struct{}, 1)}
	b.mu.Lock()
	if len(b.queue) >= b.s.MaxQueue {
		b.mu.Unlock()
		return Permit{}, b.full()
	}
	b.queue = append(b.queue, w)
	b.waiting.Add(1)
	b.grantLocked() // admits us at once if a permit is free
	b.mu.Unlock()

	t := time.NewTimer(b.s.MaxWait)
	defer t.Stop()
	select {
	case <-w.ready:
		return b.permit(), nil
	case <-t.C:
		if b.leave(w) {
			return Permit{}, b.full()
		}
		return b.permit(), nil // granted as the timer fired: keep it
	case <-ctx.Done():
		if !b.leave(w) {
			b.dec() // granted as ctx ended: give it back
		}
		return Permit{}, ctx.Err()
	}
}

// leave takes w out of the queue; false if w was granted a permit first.
func (b *Bulkhead) leave(w *waiter) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if w.granted {
		return false
	}
	for i, q := range b.queue {
		if q == w {
			b.removeLocked(i)
			return true
		}
	}
	return true // unreachable: an ungranted waiter is always queued
}

// grant hands free permits to queued callers, if there are any.
func (b *Bulkhead) grant() {
	if b.waiting.Load() == 0 {
		return
	}
	b.mu.Lock()
	b.grantLocked()
	b.mu.Unlock()
}

func (b *Bulkhead) grantLocked() {
	for len(b.queue) > 0 {
		if _, ok, _ := take(&b.inflight, &b.limit); !ok {
			return
		}
		w := b.queue[0]
		b.removeLocked(0)
		w.granted = true
		w.ready <- struct{}{}
	}
}

func (b *Bulkhead) removeLocked(i int) {
	n := copy(b.queue[i:], b.queue[i+1:])
	b.queue[i+n] = nil
	b.queue = b.queue[:i+n]
	b.waiting.Add(-1)
}
