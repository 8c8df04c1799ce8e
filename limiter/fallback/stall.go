package fallback

import (
	"context"
	"errors"
	"time"

	"github.com/throttledhq/throttled/limiter"
)

// MinSharedWait is the least wait worth a shared call: a caller whose
// deadline leaves less (after Settings.Reserve) is answered from the
// fallback at once, without asking the shared store.
const MinSharedWait = time.Millisecond

// ErrCallerDeadline is the cause of a decision that fell back because the
// shared store had not answered by the time its caller's deadline left
// only the reserve (Settings.Reserve): a stalled or slow store.
var ErrCallerDeadline = errors.New("fallback: the shared store did not answer within the caller's deadline")

// States of a sharedCall that its decision may give up on.
const (
	callPending int32 = iota
	callFinished
	callAbandoned
)

// sharedWait is how long a decision under ctx may wait for the shared
// store: half of ctx's time left, less if Reserve keeps more. bounded is false
// when ctx has no deadline.
func (f *Store) sharedWait(ctx context.Context) (wait time.Duration, bounded bool) {
	dl, ok := ctx.Deadline()
	if !ok {
		return 0, false
	}
	left := time.Until(dl)
	return left - max(f.s.Reserve, left/2), true
}

// sharedDecideBy is sharedDecide for a caller that can wait only wait.
//
// Without a Guard the call is bounded by the shorter of Deadline and wait.
// With one, the guarded call runs on its own goroutine, detached from the
// caller's deadline and cancellation, so that the guard's deadline alone
// measures it: a store that does not answer within it fails (and trips the
// breaker), however short the callers' deadlines; one that does is
// healthy, however long they waited. The decision waits for it at most
// wait, then falls back with ErrCallerDeadline; ran is then false, and the
// call's goroutine counts its error, if any, when it ends (guarded).
func (f *Store) sharedDecideBy(ctx context.Context, req limiter.Request, wait time.Duration) (d limiter.Decision, ran bool, err error) {
	if f.s.Guard == nil {
		cctx, cancel := context.WithTimeout(ctx, min(f.s.Deadline, wait))
		defer cancel()
		err = f.call(cctx, req, &d)
		return d, true, err
	}
	c := f.getCall(req)
	c.done = make(chan struct{})
	go f.guarded(context.WithoutCancel(ctx), c)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-c.done:
	case <-timer.C:
		if c.state.CompareAndSwap(callPending, callAbandoned) {
			return d, false, ErrCallerDeadline
		}
		<-c.done // it finished just now
	case <-ctx.Done():
		if c.state.CompareAndSwap(callPending, callAbandoned) {
			return d, false, ctx.Err()
		}
		<-c.done
	}
	d, ran, err = c.d, c.ran, c.err
	f.putCall(c)
	return d, ran, err
}

// guarded runs c through the guard. If its decision gave up on it, it
// accounts for the outcome itself: an answer ends the fallback episode (the
// store answers), an error from the store is counted.
func (f *Store) guarded(ctx context.Context, c *sharedCall) {
	c.err = f.s.Guard.Call(ctx, c.run)
	if c.state.CompareAndSwap(callPending, callFinished) {
		close(c.done)
		return
	}
	switch {
	case c.err == nil:
		f.ep.answered()
	case c.ran && f.s.Errors != nil && !errors.Is(c.err, limiter.ErrInvalid):
		f.s.Errors.CountError(c.err)
	}
	f.putCall(c)
}
