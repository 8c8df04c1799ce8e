package fallback

import (
	"context"
	"errors"
	"fmt"

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
	if f.detached.Add(1) > int64(f.s.MaxDetached) {
		f.detached.Add(-1)
		return ErrBusy
	}
	done := make(chan detachedResult, 1) // the call never blocks on it, waited for or not
	go f.runDetached(context.WithoutCancel(ctx), req, done)
	select {
	case r := <-done:
		*d = r.d
		return timeoutErr(ctx, r.err)
	case <-ctx.Done():
		return ctx.Err() // the call finishes on its own, and keeps its connection
	}
}

type detachedResult struct {
	d   limiter.Decision
	err error
}

// runDetached makes one shared call bounded by CallTimeout alone.
func (f *Store) runDetached(ctx context.Context, req limiter.Request, done chan<- detachedResult) {
	defer f.detached.Add(-1)
	ctx, cancel := context.WithTimeout(ctx, f.s.CallTimeout)
	defer cancel()
	d, err := f.shared.Decide(ctx, req)
	done <- detachedResult{d, err}
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
