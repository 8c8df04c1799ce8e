package bulkhead

import (
	"context"
	"slices"
	"time"
)

// waitState is where a queued caller stands; guarded by Gate.mu.
type waitState int

const (
	queued  waitState = iota
	granted           // a permit was counted for it
	evicted           // shed to make room for a more important caller
)

// gateWaiter is one caller in a Gate's queue. It is pooled with its channel
// and timer: ready holds at most the one signal of its grant or eviction,
// and is empty again when the waiter goes back to the pool.
type gateWaiter struct {
	ready chan struct{}
	timer *time.Timer
	prio  int
	state waitState
}

func newGateWaiter() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &gateWaiter{ready: make(chan struct{}, 1), timer: t}
}

// wait queues the caller at its priority for at most MaxWait (TopMaxWait
// for the most important).
func (g *Gate) wait(ctx context.Context, prio int) (Permit, error) {
	w := g.waiters.Get().(*gateWaiter)
	defer g.waiters.Put(w)
	w.prio, w.state = prio, queued
	queuedAt := g.since() // before w is seen in the queue: its wait starts at its arrival
	g.mu.Lock()
	if !g.enqueueLocked(w) {
		g.mu.Unlock()
		return Permit{}, g.refuse(prio)
	}
	g.grantLocked() // admits us at once if a permit is free
	g.mu.Unlock()

	w.timer.Reset(g.maxWait(prio))
	defer w.timer.Stop()
	var err error
	select {
	case <-w.ready:
	case <-w.timer.C:
		err = ErrShed
	case <-ctx.Done():
		err = ctx.Err()
	}
	if now := g.since(); err == ErrShed || now-queuedAt >= longWait(g.s.MaxWait) {
		g.cong.mark(prio, now, g.maxWait(prio)) // congested for as long as it may wait
	}
	if err != nil {
		if g.leave(w) {
			if err == ErrShed {
				return Permit{}, g.refuse(prio)
			}
			return Permit{}, err
		}
		<-w.ready // the grant or eviction that came first
	}
	// w was granted or evicted (the evicting caller counted the refusal).
	switch {
	case w.state == evicted && err == nil:
		return Permit{}, ErrShed
	case w.state == evicted:
		return Permit{}, err
	case err == nil || err == ErrShed: // granted as the timer fired: keep it
		return g.permit(), nil
	}
	g.inflight.Add(-1) // granted as ctx ended: give it back
	g.grant()
	return Permit{}, err
}

// maxWait is the longest a caller of priority prio may wait.
func (g *Gate) maxWait(prio int) time.Duration {
	if prio == 0 {
		return g.s.TopMaxWait
	}
	return g.s.MaxWait
}

// enqueueLocked inserts w behind every waiter at least as important. When
// the queue is full it evicts the last waiter (the least important, newest)
// if w is more important, and otherwise reports false.
func (g *Gate) enqueueLocked(w *gateWaiter) bool {
	if n := len(g.queue); n >= g.s.MaxQueue {
		last := g.queue[n-1]
		if last.prio <= w.prio {
			return false
		}
		g.removeLocked(n - 1)
		_ = g.refuse(last.prio)
		last.state = evicted
		last.ready <- struct{}{} // last is its owner's again: touch it no more
	}
	i := len(g.queue)
	for i > 0 && g.queue[i-1].prio > w.prio {
		i--
	}
	g.queue = slices.Insert(g.queue, i, w) // within capacity: no allocation
	g.waiting.Add(1)
	return true
}

// leave takes w out of the queue; false if it was granted or evicted first.
func (g *Gate) leave(w *gateWaiter) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if w.state != queued {
		return false
	}
	if i := slices.Index(g.queue, w); i >= 0 {
		g.removeLocked(i)
	}
	return true
}

// grant hands free permits to queued callers, if there are any.
func (g *Gate) grant() {
	if g.waiting.Load() == 0 {
		return
	}
	g.mu.Lock()
	g.grantLocked()
	g.mu.Unlock()
}

// grantLocked admits waiters from the head of the queue (the most
// important, oldest) while permits are free.
func (g *Gate) grantLocked() {
	for len(g.queue) > 0 {
		if ok, _ := g.count(); !ok {
			return
		}
		w := g.queue[0]
		g.removeLocked(0)
		w.state = granted
		w.ready <- struct{}{} // w is its owner's again: touch it no more
	}
}

func (g *Gate) removeLocked(i int) {
	n := copy(g.queue[i:], g.queue[i+1:])
	g.queue[i+n] = nil
	g.queue = g.queue[:i+n]
	g.waiting.Add(-1)
}
