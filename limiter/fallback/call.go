package fallback

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/throttledhq/throttled/limiter"
)

// call asks the shared store within ctx's deadline, into d. With
// CallTimeout the store call runs detached (see Settings.CallTimeout).
func (f *Store) call(ctx context.Context, req limiter.Request, d *limiter.Decision) error {
	if f.s.CallTimeout == 0 {
		var err error
		*d, err = f.shared.Decide(ctx, req)
		return timeoutErr(ctx, err)
	}
	if f.detached.Load() >= int64(f.s.MaxDetached) {
		return ErrBusy
	}
	dc := &detachedCall{done: make(chan detachedResult, 1)} // the call never blocks on done
	go f.runDetached(context.WithoutCancel(ctx), req, dc)
	select {
	case r := <-dc.done:
		*d = r.d
		return timeoutErr(ctx, r.err)
	case <-ctx.Done():
		if dc.state.CompareAndSwap(callRunning, callLate) {
			f.detached.Add(1) // until runDetached ends it
		}
		return ctx.Err() // the call finishes on its own, and keeps its connection
	}
}

// A detachedCall is one shared call on its own goroutine. Its state says
// whether its caller stopped waiting first (callLate: it counts in
// Store.detached until it ends) or it ended first (callEnded).
type detachedCall struct {
	done  chan detachedResult
	state atomic.Int32
}

const (
	callRunning int32 = iota
	callLate
	callEnded
)

type detachedResult struct {
	d   limiter.Decision
	err error
}

// runDetached makes one shared call bounded by CallTimeout alone.
func (f *Store) runDetached(ctx context.Context, req limiter.Request, dc *detachedCall) {
	ctx, cancel := context.WithTimeout(ctx, f.s.CallTimeout)
	defer cancel()
	d, err := f.shared.Decide(ctx, req)
	dc.done <- detachedResult{d, err}
	if !dc.state.CompareAndSwap(callRunning, callEnded) {
		f.detached.Add(-1) // a late call ends
	}
}

// timeoutErr makes an error caused by ctx's end wrap ctx.Err(), whatever the
// client turned it into (go-redis reports an i/o timeout), so that
// ErrorKind says "timeout".
func timeoutErr(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil || errors.Is(err, ctx.Err()) {
		return err
	}
	return fmt.Errorf("%w: %w", ctx.Err(), err)
}
